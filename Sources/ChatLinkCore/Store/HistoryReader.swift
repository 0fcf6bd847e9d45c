import EventLoop
@preconcurrency import Glibc

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
public enum HistoryReader {
  /// The lines (without newline) matching `query`, oldest first.
  ///
  /// - Parameter paths: the store files, newest first (messages.jsonl, .1, .2, …).
  public static func read(paths: [String], query: HistoryQuery) -> Result<[[UInt8]], SystemError> {
    var found: [[UInt8]] = []
    let roomJSON = query.room?.json
    let sinceTime = query.sinceTime.map { t -> [UInt8] in
      var out: [UInt8] = []
      t.append(to: &out)
      return out
    }
    // Two buffers for the whole query, reused for every chunk: a rare room reads the whole
    // store, and a fresh 256 KiB array per chunk is a fresh mapping (above malloc's mmap
    // threshold) whose pages are faulted in and zeroed each time.
    let chunkSize = 256 * 1024
    var readBuffer = [UInt8](repeating: 0, count: chunkSize)
    var chunk: [UInt8] = []
    chunk.reserveCapacity(chunkSize + 64 * 1024)
    for path in paths {
      let fd = open(path, O_RDONLY | O_CLOEXEC)
      if fd < 0 {
        if errno == ENOENT { continue }
        return .failure(.last("open \(path)"))
      }
      defer { close(fd) }
      var info = stat()
      fstat(fd, &info)
      var end = Int(info.st_size)
      var carry: [UInt8] = []
      var first = true
      while end > 0 || !carry.isEmpty {
        let start = max(0, end - chunkSize)
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
        if first {
          // The live file may end in a line still being written: ignore it.
          if let last = chunk.lastIndex(of: 0x0A) {
            chunk.removeSubrange((last + 1)...)
          } else {
            chunk.removeAll(keepingCapacity: true)
          }
          first = false
        }
        var cursor = chunk.count
        if cursor > 0 && chunk[cursor - 1] == 0x0A { cursor -= 1 }
        while cursor > 0 {
          let previous = Self.lastNewline(in: chunk, before: cursor)
          if previous == nil && start > 0 {
            carry = Array(chunk[..<cursor]) + [0x0A]
            break
          }
          let lineStart = previous.map { $0 + 1 } ?? 0
          let line = chunk[lineStart..<cursor]
          cursor = previous ?? 0
          switch match(line, query: query, roomJSON: roomJSON, sinceTime: sinceTime) {
          case .yes:
            found.append(Array(line))
            if found.count >= query.limit { return .success(found.reversed()) }
          case .no:
            continue
          case .stop:
            return .success(found.reversed())
          }
        }
        end = start
        if start == 0 && carry.isEmpty { break }
        if start == 0 && !carry.isEmpty {
          // The first line of the file.
          let line = carry.dropLast()
          carry = []
          if case .yes = match(line, query: query, roomJSON: roomJSON, sinceTime: sinceTime) {
            found.append(Array(line))
            if found.count >= query.limit { return .success(found.reversed()) }
          }
          break
        }
      }
    }
    return .success(found.reversed())
  }

  private enum Match { case yes, no, stop }

  /// The scan for line ends is most of the work for a rare room: a raw pointer loop, eight
  /// bytes at a time where no newline can be.
  private static func lastNewline(in chunk: [UInt8], before end: Int) -> Int? {
    chunk.withUnsafeBytes { raw -> Int? in
      guard let base = raw.baseAddress, end > 0 else { return nil }
      var i = end
      while i >= 8 {
        let word = base.loadUnaligned(fromByteOffset: i - 8, as: UInt64.self)
        // Has-zero-byte trick on word XOR 0x0A0A…: a lane equal to '\n' becomes zero.
        let x = word ^ 0x0A0A_0A0A_0A0A_0A0A
        if (x &- 0x0101_0101_0101_0101) & ~x & 0x8080_8080_8080_8080 != 0 { break }
        i -= 8
      }
      while i > 0 {
        i -= 1
        if base.load(fromByteOffset: i, as: UInt8.self) == 0x0A { return i }
      }
      return nil
    }
  }

  private static let roomKey = Array(#""room":"#.utf8)
  private static let timeKey = Array(#""time":""#.utf8)

  private static func match(
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
