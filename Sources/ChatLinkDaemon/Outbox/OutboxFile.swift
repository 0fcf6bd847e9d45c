import EventLoop
@preconcurrency import Glibc

/// The outbox log on disk; used by the disk worker after start-up.
final class OutboxFile: @unchecked Sendable {
  // @unchecked: the loop uses it only while replaying, before any job is queued; afterwards
  // only the disk worker touches it, and each write reports the new size to the loop.
  private var file: AppendFile
  private let path: String
  /// Whether a compaction's rename still waits for its directory sync.
  private var directoryUnsynced = false

  init(path: String) throws(SystemError) {
    self.path = path
    file = try AppendFile(path: path)
  }

  /// The log's size (the loop reads it only before the first write job).
  var size: Int { file.size }

  func readAll() throws(SystemError) -> [UInt8] {
    try file.read(at: 0, count: file.size)
  }

  func truncate(to length: Int) throws(SystemError) {
    try file.truncate(to: length)
    try file.sync()
  }

  /// Appends `chunk` (after swapping in the compacted `image`, if any); returns the log's new
  /// size.
  func write(_ chunk: [UInt8], sync: Bool, replaceWith image: [UInt8]?) -> Result<Int, SystemError>
  {
    do throws(SystemError) {
      // A compaction whose directory sync failed: its rename is not durable yet.
      if directoryUnsynced {
        try FileSystem.syncParent(of: path, for: .compact)
        directoryUnsynced = false
      }
      if let image {
        // Write the compacted image to a new file, make it durable, then swap it in.
        let temporary = path + ".new"
        unlink(temporary)
        let fresh = try AppendFile(path: temporary, durableName: false)
        try fresh.append(image)
        try fresh.append(chunk)
        try fresh.sync()
        guard rename(temporary, path) == 0 else { throw SystemError.last("rename \(temporary)") }
        file.close()
        file = fresh
        // Until the directory is synced, a power cut brings the old log back without this
        // chunk's adds: they are not acknowledged before it (a failure is retried first thing
        // on the next write; the adds then fail here though they are in the log, and so may be
        // delivered: at least once, never lost).
        directoryUnsynced = true
        try FileSystem.syncParent(of: path, for: .compact)
        directoryUnsynced = false
      } else {
        try file.append(chunk)
        if sync { try file.sync() }
      }
      return .success(file.size)
    } catch {
      return .failure(error)
    }
  }
}
