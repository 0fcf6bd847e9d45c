import CSystem
import EventLoop
@preconcurrency import Glibc
import JSON
import LinkCore

/// Answers History queries by reading the store files backwards from their ends, so a query
/// about recent messages never reads whole files. Runs on a worker thread: a slow disk must
/// not delay the loop.
public struct HistoryQuery: Sendable, Hashable {
  /// Only this room (compared with the record's `room` value, number or string).
  public var room: RoomID?
  /// Only records with seq greater than this.
  public var sinceSeq: UInt64?
  /// Only records with time later than this.
  public var sinceTime: Timestamp?
  /// At most this many records, the newest.
  public var limit: Int

  /// Creates a query.
  public init(
    room: RoomID? = nil, sinceSeq: UInt64? = nil, sinceTime: Timestamp? = nil, limit: Int = 100
  ) {
    self.room = room
    self.sinceSeq = sinceSeq
    self.sinceTime = sinceTime
    self.limit = limit
  }
}

/// Reads matching store lines, newest last.
///
/// A query for a room uses each file's room index (`RoomIndex`) to read only the blocks that
/// may hold the room's records; what no index covers is scanned line by line. A rotated file
/// without a complete index is indexed on the spot, once, by the query that first needs it.
public enum HistoryReader {
  /// The lines (without newline) matching `query`, oldest first.
  ///
  /// - Parameters:
  ///   - paths: the store files, newest first (messages.jsonl, .1, .2, …).
  ///   - indexDirectory: where the room indexes are (`<Directory>/.index`); nil reads without.
  ///   - keeping: when given, only the matching lines it keeps are returned (and count
  ///     towards the limit): a reader after a few lines of many need not hold the rest.
  public static func read(
    paths: [String], query: HistoryQuery, indexDirectory: String? = nil,
    keeping: ((ArraySlice<UInt8>) -> Bool)? = nil
  ) -> Result<[[UInt8]], SystemError> {
    var found: [[UInt8]] = []
    // Whether each line handed over was kept, so a file read again whole takes back its own.
    var kept: [Bool] = []
    let limit = query.limit
    let result = visit(
      paths: paths, query: query, indexDirectory: indexDirectory,
      discard: { count in
        found.removeLast(kept.suffix(count).filter { $0 }.count)
        kept.removeLast(count)
      },
      visit: { line in
        let keep = keeping?(line) ?? true
        kept.append(keep)
        if keep { found.append(Array(line)) }
        return found.count < limit
      })
    return result.map { found.reversed() }
  }

  /// Hands `visit` each line (without newline) matching `query`, newest first, until it
  /// returns false or the files end; `query.limit` is not applied. When a file's index turns
  /// out not to describe the file, `discard` is told how many of the lines handed over came
  /// from that file, and the file is read again whole.
  static func visit(
    paths: [String], query: HistoryQuery, indexDirectory: String? = nil,
    discard: @escaping (Int) -> Void, visit: @escaping (ArraySlice<UInt8>) -> Bool
  ) -> Result<Void, SystemError> {
    var search = Search(query: query, visit: visit)
    // A rotation while the query runs renames every file one generation up: the file just
    // read comes again under the next name. Each file (by inode) is read once.
    var read: Set<[UInt64]> = []
    for (generation, path) in paths.enumerated() {
      let fd = open(path, O_RDONLY | O_CLOEXEC)
      if fd < 0 {
        if errno == ENOENT { continue }
        return .failure(.last("open \(path)"))
      }
      defer { close(fd) }
      var info = stat()
      fstat(fd, &info)
      let size = Int(info.st_size)
      guard size > 0, read.insert([UInt64(info.st_dev), UInt64(info.st_ino)]).inserted else {
        continue
      }
      var segments = [RoomIndex.Segment.unindexed(start: 0, end: size)]
      if search.roomHash != nil, let indexDirectory {
        segments =
          RoomIndexFiles.segments(
            fd: fd, size: size, rotated: generation > 0, directory: indexDirectory) ?? segments
      }
      search.handedInFile = 0
      switch search.scan(fd: fd, segments: segments, size: size) {
      case .done: return .success(())
      case .more: continue
      case .indexMismatch:
        // The index does not describe this file: forget what it led to, scan it all.
        discard(search.handedInFile)
        let whole = [RoomIndex.Segment.unindexed(start: 0, end: size)]
        if case .done = search.scan(fd: fd, segments: whole, size: size) { return .success(()) }
      }
    }
    return .success(())
  }

  /// One query's state across the files it reads.
  private struct Search {
    let query: HistoryQuery
    let roomJSON: [UInt8]?
    let roomHash: UInt32?
    let sinceTime: [UInt8]?
    /// Takes each match, newest first; false stops the search.
    let visit: (ArraySlice<UInt8>) -> Bool
    /// How many matches of the current file went to `visit`.
    var handedInFile = 0
    // Two buffers for the whole query, reused for every chunk: a rare room reads many
    // blocks, and a fresh 256 KiB array per chunk is a fresh mapping (above malloc's mmap
    // threshold) whose pages are faulted in and zeroed each time.
    var readBuffer = [UInt8](repeating: 0, count: Search.chunkSize)
    var chunk: [UInt8] = []

    static let chunkSize = 256 * 1024

    enum Outcome { case done, more, indexMismatch }

    init(query: HistoryQuery, visit: @escaping (ArraySlice<UInt8>) -> Bool) {
      self.query = query
      self.visit = visit
      roomJSON = query.room?.json
      roomHash = roomJSON.map { RoomIndex.roomHash($0) }
      sinceTime = query.sinceTime.map { t -> [UInt8] in
        var out: [UInt8] = []
        t.append(to: &out)
        return out
      }
      chunk.reserveCapacity(Search.chunkSize + 64 * 1024)
    }

    /// Visits the file's segments newest first.
    mutating func scan(fd: Int32, segments: [RoomIndex.Segment], size: Int) -> Outcome {
      for segment in segments.reversed() {
        let outcome: Outcome
        switch segment {
        case .unindexed(let start, let end):
          // The live file may end in a line still being written: its tail is cut off.
          outcome = scanRange(fd: fd, start: start, end: end, block: nil)
        case .block(let entry):
          if let since = query.sinceSeq, entry.lastSeq != 0, entry.lastSeq <= since {
            return .done
          }
          if let roomHash, !entry.mayContain(room: roomHash) { continue }
          outcome = scanRange(fd: fd, start: entry.start, end: entry.end, block: entry)
        }
        if case .more = outcome { continue }
        return outcome
      }
      return .more
    }

    /// Reads `[start, end)` backwards, a chunk at a time, matching each whole line; `start` is
    /// the beginning of a line. For an indexed block, checks that its last line is the one the
    /// index promised.
    private mutating func scanRange(
      fd: Int32, start rangeStart: Int, end rangeEnd: Int, block: RoomIndex.Entry?
    ) -> Outcome {
      var end = rangeEnd
      // The start of a line that began in the chunk before, with a newline put back after it.
      var carry: [UInt8] = []
      while end > rangeStart {
        let start = max(rangeStart, end - Search.chunkSize)
        readChunk(fd: fd, start: start, end: end, followedBy: &carry)
        if end == rangeEnd && !cutAfterLastLine(block: block, atRangeStart: start == rangeStart) {
          return .indexMismatch
        }
        if matchLines(lineMayContinueBefore: start > rangeStart, carry: &carry) { return .done }
        end = start
      }
      return .more
    }

    /// Fills `chunk` with the file's `[start, end)` and then `carry`, which it empties.
    private mutating func readChunk(
      fd: Int32, start: Int, end: Int, followedBy carry: inout [UInt8]
    ) {
      let wanted = end - start
      var done = 0
      while done < wanted {
        let n = readBuffer.withUnsafeMutableBytes {
          pread(fd, $0.baseAddress! + done, wanted - done, off_t(start + done))
        }
        if n < 0 && errno == EINTR { continue }
        if n <= 0 { break }
        done += n
      }
      chunk.removeAll(keepingCapacity: true)
      chunk.append(contentsOf: readBuffer[..<done])
      chunk.append(contentsOf: carry)
      carry = []
    }

    /// Drops what follows the last newline of the range's last chunk: the live file may end
    /// in a line still being written. False when `block` is indexed but the chunk does not
    /// end as the index says (the file is not the one the index was made for).
    private mutating func cutAfterLastLine(block: RoomIndex.Entry?, atRangeStart: Bool) -> Bool {
      if let last = chunk.lastIndex(of: 0x0A) {
        if block != nil && last != chunk.count - 1 { return false }
        chunk.removeSubrange((last + 1)...)
      } else {
        if block != nil { return false }
        chunk.removeAll(keepingCapacity: true)
      }
      guard let block, block.lastSeq != 0 else { return true }
      let lineStart = (HistoryReader.lastNewline(in: chunk, before: chunk.count - 1) ?? -1) + 1
      let seq = chunk[lineStart...].withUnsafeBytes { StoreRecord.seq(ofLine: $0) }
      // A line that starts the chunk may have begun before it, unless the block starts there.
      return seq == block.lastSeq || (lineStart == 0 && !atRangeStart)
    }

    /// Matches the chunk's lines, newest first; true once the query has its answer. When the
    /// range goes on before the chunk, its first line may be a part: it goes to `carry`, to
    /// be completed by the next (earlier) chunk.
    private mutating func matchLines(lineMayContinueBefore: Bool, carry: inout [UInt8]) -> Bool {
      var cursor = chunk.count
      if cursor > 0 && chunk[cursor - 1] == 0x0A { cursor -= 1 }
      while cursor > 0 {
        let previous = HistoryReader.lastNewline(in: chunk, before: cursor)
        if previous == nil && lineMayContinueBefore {
          carry = Array(chunk[..<cursor]) + [0x0A]
          return false
        }
        let lineStart = previous.map { $0 + 1 } ?? 0
        let line = chunk[lineStart..<cursor]
        cursor = previous ?? 0
        switch HistoryReader.match(line, query: query, roomJSON: roomJSON, sinceTime: sinceTime) {
        case .yes:
          handedInFile += 1
          if !visit(line) { return true }
        case .no:
          continue
        case .stop:
          return true
        }
      }
      return false
    }
  }

  fileprivate enum Match { case yes, no, stop }

  /// The scan for line ends is most of the work for a rare room and for the dedupe window's
  /// rebuild at start: glibc's memrchr, many bytes a step.
  fileprivate static func lastNewline(in chunk: [UInt8], before end: Int) -> Int? {
    chunk.withUnsafeBytes { raw -> Int? in
      guard let base = raw.baseAddress, end > 0,
        let found = chatlink_memrchr(base, 0x0A, end)
      else { return nil }
      return base.distance(to: UnsafeRawPointer(found))
    }
  }

  private static let roomKey = Array(#""room":"#.utf8)
  private static let timeKey = Array(#""time":""#.utf8)

  fileprivate static func match(
    _ line: ArraySlice<UInt8>, query: HistoryQuery, roomJSON: [UInt8]?, sinceTime: [UInt8]?
  ) -> Match {
    guard let seq = line.withUnsafeBytes({ StoreRecord.seq(ofLine: $0) }) else { return .no }
    // Lines are in seq order, so once below the bound nothing older can match.
    if let since = query.sinceSeq, seq <= since { return .stop }
    if let sinceTime {
      guard let value = field(line, after: timeKey, length: sinceTime.count) else { return .no }
      // Fixed-width RFC 3339 UTC times compare as strings.
      if !sinceTime.lexicographicallyPrecedes(value) { return .stop }
    }
    if let roomJSON {
      guard let start = find(roomKey, in: line) else { return .no }
      let valueStart = start + roomKey.count
      let valueEnd = valueStart + roomJSON.count
      guard valueEnd < line.endIndex, line[valueStart..<valueEnd].elementsEqual(roomJSON),
        line[valueEnd] == UInt8(ascii: ",")
      else { return .no }
    }
    return .yes
  }

  /// Our lines have a fixed prefix order: seq, time, dir, room. The fields are found by key.
  private static func field(_ line: ArraySlice<UInt8>, after key: [UInt8], length: Int)
    -> ArraySlice<UInt8>?
  {
    guard let start = find(key, in: line) else { return nil }
    let valueStart = start + key.count
    guard valueStart + length <= line.endIndex else { return nil }
    return line[valueStart..<(valueStart + length)]
  }

  private static func find(_ key: [UInt8], in line: ArraySlice<UInt8>) -> Int? {
    // The keys sit in the first hundred bytes of a line; never search the payload.
    let end = min(line.endIndex, line.startIndex + 160)
    var i = line.startIndex
    while i + key.count <= end {
      if line[i] == key[0] && line[i..<(i + key.count)].elementsEqual(key) { return i }
      i += 1
    }
    return nil
  }
}
