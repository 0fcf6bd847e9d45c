/// Bytes handed to the disk thread and back, so that a writer that stays busy refills the
/// same memory instead of growing a fresh buffer for every write.
///
/// The daemon keeps glibc's mmap threshold low (see `Memory`), so each fresh buffer of a
/// burst is a new mapping whose pages fault in one by one as it fills, and are unmapped when
/// it is freed: a cost paid again for every write of a stream of sends. (`SpareBuffer` keeps
/// the memory between writes.)
///
/// The box is what the disk job holds; taking the bytes out leaves the taken array the only
/// owner of its storage, so it can be emptied and refilled without a copy.
final class HandedBytes: @unchecked Sendable {
  // @unchecked: the loop fills it, the disk job reads it, the completion takes it back; the
  // worker's queue orders those three, and nothing touches it concurrently.
  private(set) var bytes: [UInt8]

  init(_ bytes: [UInt8]) {
    self.bytes = bytes
  }

  /// The bytes, leaving the box empty.
  func take() -> [UInt8] {
    defer { bytes = [] }
    return bytes
  }
}
