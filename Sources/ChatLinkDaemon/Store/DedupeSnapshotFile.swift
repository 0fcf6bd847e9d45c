@preconcurrency import Glibc

/// A snapshot being written on the disk thread, a part at a time: a temporary file and the
/// hash of what is in it so far. It is a value each disk job hands back to the loop, which
/// hands it to the next, so nothing is shared between the threads.
struct DedupeSnapshotFile: Sendable {
  private let fd: Int32
  private let directory: String
  private var sum = DedupeSnapshotChecksum()

  private static func temporaryPath(_ directory: String) -> String {
    directory + "/" + DedupeSnapshot.fileName + ".tmp"
  }

  /// Starts a snapshot in `directory` (readable by the daemon's user only: it holds the hash
  /// basis), or nil when the file cannot be made.
  init?(directory: String) {
    let fd = open(Self.temporaryPath(directory), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o600)
    guard fd >= 0 else { return nil }
    self.fd = fd
    self.directory = directory
  }

  /// Appends `bytes`; false when they could not all be written (then `abandon`).
  mutating func append(_ bytes: [UInt8]) -> Bool {
    bytes.withUnsafeBytes { sum.add($0) }
    return write(bytes)
  }

  /// Ends the file with its hash, syncs it, renames it into place and syncs the directory, so
  /// the rename survives a power cut; false when any of that fails: with no file left, or the
  /// new one in place and its name maybe not durable (either snapshot holds for the store).
  func commit() -> Bool {
    var hash = sum.value.littleEndian
    let tail = withUnsafeBytes(of: &hash) { Array($0) }
    let written = write(tail)
    let synced = written && fsync(fd) == 0
    close(fd)
    let path = directory + "/" + DedupeSnapshot.fileName
    guard synced, rename(Self.temporaryPath(directory), path) == 0 else {
      unlink(Self.temporaryPath(directory))
      return false
    }
    do {
      try FileSystem.syncDirectory(directory, for: .snapshot)
      return true
    } catch {
      return false
    }
  }

  /// Gives the snapshot up: no file is left of it.
  func abandon() {
    close(fd)
    unlink(Self.temporaryPath(directory))
  }

  private func write(_ bytes: [UInt8]) -> Bool {
    var done = 0
    while done < bytes.count {
      let n = bytes.withUnsafeBytes { Glibc.write(fd, $0.baseAddress! + done, $0.count - done) }
      if n < 0 && errno == EINTR { continue }
      if n <= 0 { return false }
      done += n
    }
    return true
  }
}

/// The hash that ends a snapshot (a damaged file is what it guards against), fed a part at a
/// time: four words a step in four independent lanes, a multiply each, so the multiplies
/// overlap; the bytes short of a step, and the length, through the ids' hash at the end.
struct DedupeSnapshotChecksum: Sendable {
  private var lanes: (UInt64, UInt64, UInt64, UInt64) = (1, 2, 3, 4)
  /// The bytes after the last whole step (fewer than 32).
  private var pending: [UInt8] = []
  private var count = 0

  private static let step = 32
  private static let prime: UInt64 = 0x9E37_79B9_7F4A_7C15

  /// Feeds `bytes` to the hash.
  mutating func add(_ bytes: UnsafeRawBufferPointer) {
    count += bytes.count
    var offset = 0
    if !pending.isEmpty {
      offset = min(Self.step - pending.count, bytes.count)
      pending += bytes[..<offset]
      guard pending.count == Self.step else { return }
      pending.withUnsafeBytes { lanes = Self.mixed(lanes, $0, from: 0, to: Self.step) }
      pending.removeAll(keepingCapacity: true)
    }
    let end = offset + (bytes.count - offset) / Self.step * Self.step
    lanes = Self.mixed(lanes, bytes, from: offset, to: end)
    pending += bytes[end...]
  }

  /// The hash of everything fed so far.
  var value: UInt64 {
    func rotated(_ x: UInt64, _ k: UInt64) -> UInt64 { x << k | x >> (64 - k) }
    let hasher = IDHasher(
      basis: lanes.0 ^ rotated(lanes.1, 13) ^ rotated(lanes.2, 29) ^ rotated(lanes.3, 47))
    return pending.withUnsafeBytes { hasher.hash($0) } ^ UInt64(count)
  }

  /// The lanes after the steps of `bytes[from..<to]` (a whole number of steps), in one loop
  /// with the lanes in registers: 3 MB at every start.
  private static func mixed(
    _ lanes: (UInt64, UInt64, UInt64, UInt64), _ bytes: UnsafeRawBufferPointer, from: Int, to: Int
  ) -> (UInt64, UInt64, UInt64, UInt64) {
    var (a, b, c, d) = lanes
    var offset = from
    while offset < to {
      a = (a ^ bytes.loadUnaligned(fromByteOffset: offset, as: UInt64.self)) &* prime
      b = (b ^ bytes.loadUnaligned(fromByteOffset: offset + 8, as: UInt64.self)) &* prime
      c = (c ^ bytes.loadUnaligned(fromByteOffset: offset + 16, as: UInt64.self)) &* prime
      d = (d ^ bytes.loadUnaligned(fromByteOffset: offset + 24, as: UInt64.self)) &* prime
      // A shift keeps high bits flowing into the low ones, which the multiply alone never does.
      a ^= a >> 29
      b ^= b >> 29
      c ^= c >> 29
      d ^= d >> 29
      offset += step
    }
    return (a, b, c, d)
  }
}
