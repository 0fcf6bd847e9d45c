import EventLoop
@preconcurrency import Glibc

/// The reader's side of the room indexes: finds a store file's index and checks it, and
/// indexes a rotated file that has none. Runs on the History reader thread.
enum RoomIndexFiles {
  /// The store file open as `fd` (`size` bytes) as indexed blocks and unindexed gaps; nil
  /// when it cannot be indexed (not our format), so the caller scans it whole.
  ///
  /// A rotated file never changes again, so one without a complete index (written before
  /// indexes existed, or its index was lost) is indexed here, once, and the index saved for the
  /// next query. The live file's index belongs to the disk thread: here it is only read.
  static func segments(fd: Int32, size: Int, rotated: Bool, directory: String)
    -> [RoomIndex.Segment]?
  {
    var head = [UInt8](repeating: 0, count: RoomIndex.identityLength)
    let n = head.withUnsafeMutableBytes { pread(fd, $0.baseAddress, $0.count, 0) }
    guard n > 0,
      let identity = head.withUnsafeBytes({
        RoomIndex.identity(ofFileStart: UnsafeRawBufferPointer(rebasing: $0[..<n]))
      })
    else { return nil }
    let path = directory + "/" + RoomIndex.fileName(firstSeq: identity.firstSeq)
    if let bytes = try? FileSystem.read(path, limit: 256 << 20),
      let parsed = RoomIndex.parse(bytes), parsed.identity == identity
    {
      let segments = RoomIndex.segments(parsed.entries, size: size)
      let complete = !segments.contains {
        if case .unindexed = $0 { true } else { false }
      }
      if complete || !rotated { return segments }
    } else if !rotated {
      return nil
    }
    let entries = build(fd: fd, size: size)
    save(entries, identity: identity, to: path, directory: directory)
    return RoomIndex.segments(entries, size: size)
  }

  /// Indexes a whole file, reading it forwards.
  static func build(fd: Int32, size: Int) -> [RoomIndex.Entry] {
    var entries: [RoomIndex.Entry] = []
    var builder = RoomIndexBuilder(offset: 0)
    index(fd: fd, from: 0, to: size, builder: &builder) { entries.append($0) }
    // Bytes after the last newline are not a whole line yet: left unindexed.
    if let entry = builder.finish() { entries.append(entry) }
    return entries
  }

  /// Feeds the whole lines of `[start, end)` to `builder` (whose next line starts at `start`),
  /// passing on each block it closes. Stops after the last newline before `end`.
  static func index(
    fd: Int32, from start: Int, to end: Int, builder: inout RoomIndexBuilder,
    closed: (RoomIndex.Entry) -> Void
  ) {
    var buffer = [UInt8](repeating: 0, count: 1 << 20)
    // A line that spans chunks is carried to the next read: reads start at the next line.
    var offset = start
    while offset < end {
      let n = buffer.withUnsafeMutableBytes {
        pread(fd, $0.baseAddress, min($0.count, end - offset), off_t(offset))
      }
      if n < 0 && errno == EINTR { continue }
      if n <= 0 { break }
      let consumed = buffer.withUnsafeBytes { raw -> Int in
        let data = UnsafeRawBufferPointer(rebasing: raw[..<n])
        var lineStart = 0
        while lineStart < data.count {
          guard let found = memchr(data.baseAddress! + lineStart, 0x0A, data.count - lineStart)
          else { break }
          let lineEnd = data.baseAddress!.distance(to: UnsafeRawPointer(found))
          let line = UnsafeRawBufferPointer(rebasing: data[lineStart..<lineEnd])
          let seq = StoreRecord.seq(ofLine: line)
          let room = StoreRecord.roomRange(ofLine: line).map { RoomIndex.roomHash(line[$0]) }
          if let entry = builder.add(length: lineEnd + 1 - lineStart, seq: seq, room: room) {
            closed(entry)
          }
          lineStart = lineEnd + 1
        }
        return lineStart
      }
      if consumed == 0 {
        // One line longer than the buffer: grow it and read that line again.
        if n < min(buffer.count, end - offset) || buffer.count >= 256 << 20 { break }
        buffer = [UInt8](repeating: 0, count: buffer.count * 2)
        continue
      }
      offset += consumed
    }
  }

  /// Writes an index under a temporary name, then renames it into place, so a reader never
  /// sees half of it. Failures are ignored: the index is only a cache.
  private static func save(
    _ entries: [RoomIndex.Entry], identity: RoomIndex.FileIdentity, to path: String,
    directory: String
  ) {
    var bytes = RoomIndex.header(for: identity)
    for entry in entries { RoomIndex.encode(entry, to: &bytes) }
    mkdir(directory, 0o750)
    let temporary = directory + "/.\(identity.firstSeq).\(getpid()).tmp"
    let fd = open(temporary, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o640)
    guard fd >= 0 else { return }
    var done = 0
    while done < bytes.count {
      let n = bytes.withUnsafeBytes { write(fd, $0.baseAddress! + done, $0.count - done) }
      if n < 0 && errno == EINTR { continue }
      if n <= 0 { break }
      done += n
    }
    close(fd)
    if done < bytes.count || rename(temporary, path) != 0 { unlink(temporary) }
  }
}
