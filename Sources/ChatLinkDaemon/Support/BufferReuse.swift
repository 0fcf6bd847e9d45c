import EventLoop

/// Bytes handed to the disk thread and back, so that a writer that stays busy refills the
/// same memory instead of growing a fresh buffer for every write.
///
/// The daemon keeps glibc's mmap threshold low (see `Memory`), so each fresh buffer of a
/// burst is a new mapping whose pages fault in one by one as it fills, and are unmapped when
/// it is freed: a cost paid again for every write of a stream of sends (bench/README.md,
/// on `chatlinkctl send -`).
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

/// The memory of a writer's last disk write, kept for its next one for as long as writes keep
/// coming, and given back a second after the last.
final class SpareBuffer {
  private var spare: [UInt8] = []
  private var releaseTimer: Timer?
  /// Buffers beyond this are never kept: the store writes chunks of 512 KiB and pauses its
  /// producer when the next one is full (`MessageStore.chunkSize`), so a bigger buffer holds
  /// one outsized record or a backlog of a failing disk. Either is rare, and a kept spare is
  /// resident in full from the start where a fresh buffer becomes resident only as it fills.
  static let limit = 1 << 20
  /// How long a spare outlives the last write.
  static let keepFor: Microseconds = 1_000_000

  /// `onRelease` runs when the spare is given back: the owner drops its own buffer's memory
  /// too, if that is empty (it may have been the spare of the write before).
  init(loop: EventLoop, onRelease: @escaping () -> Void) throws(SystemError) {
    releaseTimer = try loop.makeTimer(accuracy: 100_000) { [unowned self] in
      self.spare = []
      onRelease()
    }
  }

  /// A buffer for the next records: the spare if there is one, else a fresh one with
  /// `capacity` reserved.
  func take(reserving capacity: Int) -> [UInt8] {
    var buffer = spare
    spare = []
    if buffer.capacity < capacity { buffer.reserveCapacity(capacity) }
    return buffer
  }

  /// Keeps the bytes of a finished write (emptied) for the next one.
  func keep(_ box: HandedBytes) {
    var bytes = box.take()
    guard bytes.capacity <= Self.limit, bytes.capacity > spare.capacity else { return }
    bytes.removeAll(keepingCapacity: true)
    spare = bytes
    releaseTimer?.schedule(after: Self.keepFor)
  }

  deinit {
    releaseTimer?.cancel()
  }
}
