import EventLoop

extension MessageStore {
  /// What recovery found at start.
  public struct Recovery: Sendable, Hashable {
    /// The last seq on disk (0 for an empty store).
    public var lastSeq: UInt64
    /// Bytes of a torn last line that were cut off.
    public var tornBytes: Int
  }

  /// Cuts a torn last line off the live file (and syncs the cut) and finds the last seq, in
  /// the live file or, when it holds none, in the newest rotated file that does.
  static func recover(_ log: RotatingLog, maxFiles: Int) throws(SystemError) -> Recovery {
    let isOurs: (UnsafeRawBufferPointer) -> Bool = { StoreRecord.seq(ofLine: $0) != nil }
    let tail = try TailReader.lastLines(of: log.current, wanted: 1, where: isOurs)
    var torn = 0
    if tail.completeLength < log.current.size {
      torn = log.current.size - tail.completeLength
      try log.current.truncate(to: tail.completeLength)
      try log.current.sync()
    }
    var last = tail.lines.last.flatMap { $0.withUnsafeBytes(StoreRecord.seq(ofLine:)) }
    var generation = 1
    while last == nil && generation < maxFiles {
      let older = log.path(generation: generation)
      if FileSystem.exists(older), let file = try? AppendFile(path: older) {
        let lines = try TailReader.lastLines(of: file, wanted: 1, where: isOurs).lines
        last = lines.last.flatMap { $0.withUnsafeBytes(StoreRecord.seq(ofLine:)) }
      }
      generation += 1
    }
    return Recovery(lastSeq: last ?? 0, tornBytes: torn)
  }
}
