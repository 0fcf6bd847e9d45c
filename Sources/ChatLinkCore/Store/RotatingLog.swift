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

  /// What one write job did.
  enum Outcome: Sendable {
    case written(synced: Bool)
    case failed(SystemError)
  }

  init(directory: String, name: String, maxFileSize: Int, maxFiles: Int) throws(SystemError) {
    self.directory = directory
    self.name = name
    self.maxFileSize = maxFileSize
    self.maxFiles = maxFiles
    current = try AppendFile(path: directory + "/" + name)
  }

  var path: String { directory + "/" + name }

  /// The path of the n-th file: 0 is the live one.
  func path(generation: Int) -> String {
    generation == 0 ? path : "\(path).\(generation)"
  }

  /// Appends a chunk of whole lines, then syncs if asked, rotating when the file is full.
  func write(_ chunk: [UInt8], sync: Bool) -> Outcome {
    do {
      if !chunk.isEmpty { try current.append(chunk) }
      if sync { try current.sync() }
      if current.size >= maxFileSize { try rotate() }
      return .written(synced: sync)
    } catch {
      return .failed(error)
    }
  }

  private func rotate() throws(SystemError) {
    // The old file's lines were promised durable or will be: sync before it changes name.
    try current.sync()
    for generation in stride(from: maxFiles - 1, through: 1, by: -1) {
      let from = path(generation: generation - 1)
      let to = path(generation: generation)
      if generation == maxFiles - 1 { unlink(to) }
      if rename(from, to) != 0 && errno != ENOENT { throw .last("rename \(from)") }
    }
    if maxFiles == 1 { unlink(path(generation: 1)) }
    let fresh = try AppendFile(path: path)
    current.close()
    current = fresh
    AppendFile.syncDirectory(directory)
  }
}
