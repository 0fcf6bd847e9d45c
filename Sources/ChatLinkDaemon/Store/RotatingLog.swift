import EventLoop
@preconcurrency import Glibc

/// messages.jsonl and its rotated predecessors messages.jsonl.1 … .N-1, written on the disk
/// thread only.
///
/// Rotation renames the live file and opens a fresh one, so `tail -F messages.jsonl` follows
/// by name; it happens between chunks, and chunks hold whole lines.
final class RotatingLog: @unchecked Sendable {
  // @unchecked: touched only by the disk worker after the loop hands it over.
  let directory: String
  let name: String
  let maxFileSize: Int
  let maxFiles: Int
  private(set) var current: AppendFile
  /// The live file's room index, kept up to date as lines are appended.
  let index: RoomIndexWriter

  /// What one write job did.
  enum Outcome: Sendable {
    /// The chunk is in the live file; `syncTime` is how long the fsync took, when there was one.
    case written(Written, syncTime: Duration?)
    /// The chunk is in the live file, but the fsync asked for failed: the lines are there, not
    /// durable.
    case unsynced(Written, SystemError)
    /// Nothing was appended.
    case failed(SystemError)
  }

  /// Where a write job's chunk went.
  struct Written: Sendable {
    /// Whether the job rotated first.
    var rotated: Bool
    /// The live file after the job, and its size.
    var file: AppendFile
    var size: Int
  }

  init(directory: String, name: String, maxFileSize: Int, maxFiles: Int) throws(SystemError) {
    self.directory = directory
    self.name = name
    self.maxFileSize = maxFileSize
    self.maxFiles = maxFiles
    current = try AppendFile(path: directory + "/" + name)
    index = RoomIndexWriter(storeDirectory: directory)
  }

  var path: String { directory + "/" + name }

  /// The path of the n-th file: 0 is the live one.
  func path(generation: Int) -> String {
    generation == 0 ? path : "\(path).\(generation)"
  }

  /// Rotates when the file is full, then appends a chunk of whole lines and syncs if asked.
  ///
  /// With `mayRotate` false a full file takes more lines, up to an eighth over its size: the
  /// store holds the rotation back while an fsync of the file catches up, so that the
  /// rotation's own fsync, which the writes wait for, finds little left to do.
  ///
  /// `.failed` always means the chunk is not in the file, so the caller can keep it and try
  /// again: the rotation comes first, and a rotation that fails (no inode left for the new
  /// file) fails the write before anything is appended. A failed fsync after the append is
  /// `.unsynced`: the lines must not be appended again, only synced.
  ///
  /// - Parameters:
  ///   - lines: what the room index needs of each line in `chunk`, whose seqs run from
  ///     `firstSeq`.
  ///   - startWriteback: start writing the chunk to the disk at once (`Sync=batch`: the fsync
  ///     on the sync thread comes later).
  func write(
    _ chunk: [UInt8], lines: [StoreLineInfo], firstSeq: UInt64, sync: Bool, mayRotate: Bool = true,
    startWriteback: Bool = false
  ) -> Outcome {
    let rotated: Bool
    do {
      if directoryUnsynced { try syncDirectory() }
      rotated =
        current.size >= maxFileSize && (mayRotate || current.size >= maxFileSize + maxFileSize / 8)
      if rotated { try rotate() }
      if !chunk.isEmpty {
        index.prepare(file: current, chunk: chunk)
        let offset = current.size
        try current.append(chunk)
        if startWriteback { current.startWriteback(offset: offset, count: chunk.count) }
        index.appended(lines, firstSeq: firstSeq, at: offset)
      }
    } catch {
      return .failed(error)
    }
    let written = Written(rotated: rotated, file: current, size: current.size)
    guard sync else { return .written(written, syncTime: nil) }
    switch Self.sync(current) {
    case .success(let time): return .written(written, syncTime: time)
    case .failure(let error): return .unsynced(written, error)
    }
  }

  /// fdatasync of `file`, timed. Safe on the store's sync worker while the disk thread appends
  /// to the same file (`AppendFile.sync()`).
  static func sync(_ file: AppendFile) -> Result<Duration, SystemError> {
    let clock = ContinuousClock()
    let start = clock.now
    do {
      try file.sync()
    } catch {
      return .failure(error)
    }
    return .success(clock.now - start)
  }

  private func rotate() throws(SystemError) {
    // The old file's lines were promised durable or will be: sync before it changes name.
    try current.sync()
    // The new live file is made first, under a name no reader looks at, so a failure (no
    // inode, no fd) leaves every file as it was rather than the live one renamed away.
    let temporary = directory + "/." + name + ".new"
    let fresh = try AppendFile(path: temporary, durableName: false)
    if fresh.size > 0 { try fresh.truncate(to: 0) }  // left by a crash in the middle of this
    // The old file is complete: its last block goes into its index. (Only now: the index's
    // descriptor stays open until the new file exists, so the rotation needs no spare one.)
    index.finishFile()
    for generation in stride(from: maxFiles - 1, through: 1, by: -1) {
      let from = path(generation: generation - 1)
      let to = path(generation: generation)
      if generation == maxFiles - 1 { unlink(to) }
      if rename(from, to) != 0 && errno != ENOENT { throw .last("rename \(from)") }
    }
    if maxFiles == 1 { unlink(path(generation: 1)) }
    guard rename(temporary, path) == 0 else { throw .last("rename \(temporary)") }
    // Not closed here: the sync worker may be syncing it right now. Its descriptor closes when
    // the last reference goes (this one, or that sync job's).
    current = fresh
    index.removeStale(storePaths: (0..<maxFiles).map(path(generation:)))
    // Until the directory is synced, a power cut undoes the renames: the new live file and
    // whatever is synced into it would vanish. A failed sync is retried before the next write.
    directoryUnsynced = true
    try syncDirectory()
  }

  /// Whether a rotation's renames still wait for their directory sync.
  private var directoryUnsynced = false

  private func syncDirectory() throws(SystemError) {
    try FileSystem.syncDirectory(directory, for: .rotate)
    directoryUnsynced = false
  }
}
