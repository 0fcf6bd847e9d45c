import EventLoop
@preconcurrency import Glibc
import JSON
import LinkCore

/// What the store's tail holds of each room's recent inbound ids: read on the disk thread at
/// start, so the dedupe window knows the messages stored before a restart (or a power cut:
/// only what survived it is read).
///
/// The newest `tailRecords` records are read first, newest first, with every room's ids
/// among them; then each configured room that has fewer ids than the window holds and whose
/// records go back further is looked up with its room index, so a quiet room keeps its window
/// however far back its last records lie, and no file is read whole for it.
struct DedupeRebuild: Sendable {
  /// One room's ids' hashes, oldest first, and its newest id with its record's time.
  struct Room: Sendable {
    var hashes: [UInt64] = []
    var newestID: [UInt8]?
    var newestTime: Timestamp?
  }

  /// The most ids a room keeps.
  let capacity: Int
  /// Hashes ids as the window keeps them.
  let hasher: IDHasher

  /// Reads `paths` (newest first) and returns what each room's window starts with.
  func read(
    paths: [String], indexDirectory: String?, configuredRooms: [RoomID], tailRecords: Int
  ) -> [[UInt8]: Room] {
    var found = Found(capacity: capacity, hasher: hasher)
    var seen = 0
    _ = HistoryReader.visit(
      paths: paths, query: HistoryQuery(limit: .max), discard: { _ in },
      visit: { line in
        seen += 1
        found.take(line, room: nil)
        return seen < tailRecords
      })
    if seen >= tailRecords {
      for room in configuredRooms where found.needsMore(room.json) {
        found.restart(room.json)
        _ = HistoryReader.visit(
          paths: paths, query: HistoryQuery(room: room, limit: .max),
          indexDirectory: indexDirectory, discard: { _ in found.restart(room.json) },
          visit: { line in
            found.take(line, room: room.json)
            return found.needsMore(room.json)
          })
      }
    }
    return found.rooms()
  }

  /// What the records after `fromSeq` hold of each room, to be added to a snapshot's window
  /// (`DedupeWindow.extend`): the records of a room in `roomSeqs` up to its seq are in the
  /// snapshot already. Nil when they are more than `limit` (the tail is read then, no more
  /// work) or when the first of them is not the one after `fromSeq` (the store is not the
  /// snapshot's), or up to `storeLastSeq` none are found.
  func readSince(
    paths: [String], fromSeq: UInt64, storeLastSeq: UInt64, roomSeqs: [[UInt8]: UInt64],
    limit: Int
  ) -> [[UInt8]: Room]? {
    guard storeLastSeq > fromSeq else { return [:] }
    guard storeLastSeq - fromSeq <= UInt64(limit) else { return nil }
    var found = Found(capacity: capacity, hasher: hasher)
    var oldest: UInt64 = 0
    // Rooms the snapshot took after it began: only records up to the last of their seqs may
    // be in it already.
    let lastRoomSeq = roomSeqs.values.max() ?? 0
    let result = HistoryReader.visit(
      paths: paths, query: HistoryQuery(sinceSeq: fromSeq, limit: .max), discard: { _ in },
      visit: { line in
        let seq = line.withUnsafeBytes { StoreRecord.seq(ofLine: $0) } ?? 0
        oldest = seq
        let known =
          seq <= lastRoomSeq
          && line.withUnsafeBytes { raw in
            DedupeRebuild.idAndRoom(ofLine: raw).flatMap { roomSeqs[$0.room] }.map { seq <= $0 }
          } == true
        if !known { found.take(line, room: nil) }
        return true
      })
    guard case .success = result, oldest == fromSeq + 1 else { return nil }
    return found.rooms()
  }

  /// Where a stored inbound line's id and room lie, read from the line's fixed prefix
  /// (`{"seq":…,"time":…,"dir":"in","room":R,"type":"…","id":"…",`) without scanning its data:
  /// start-up reads many lines. Anything else, a line not of ours included, has none.
  /// `escaped`: the id's text has escapes (`JSONString.unescape` reads it).
  static func idAndRoomRanges(ofLine line: UnsafeRawBufferPointer) -> (
    id: Range<Int>, escaped: Bool, room: Range<Int>
  )? {
    guard let room = StoreRecord.roomRange(ofLine: line),
      room.lowerBound >= dirIn.count,
      Self.equal(line, at: room.lowerBound - dirIn.count, dirIn),
      var i = skip(typeKey, in: line, at: room.upperBound)
    else { return nil }
    // The type's value: json, text or binary, never escaped.
    while i < line.count && line[i] != UInt8(ascii: "\"") { i += 1 }
    guard let start = skip(idKey, in: line, at: i + 1) else { return nil }
    var end = start
    var escaped = false
    while end < line.count && line[end] != UInt8(ascii: "\"") {
      if line[end] == UInt8(ascii: "\\") {
        escaped = true
        end += 1
      }
      end += 1
    }
    guard end < line.count, end > start else { return nil }
    return (start..<end, escaped, room)
  }

  /// The id and room of a stored inbound line that has an id (`idAndRoomRanges`), as bytes:
  /// the id unescaped, the room as written (empty for `null`).
  static func idAndRoom(ofLine line: UnsafeRawBufferPointer) -> (id: [UInt8], room: [UInt8])? {
    guard let (range, escaped, room) = idAndRoomRanges(ofLine: line) else { return nil }
    let content = UnsafeRawBufferPointer(rebasing: line[range])
    let id = escaped ? JSONString.unescape(content) : Array(content)
    // A malformed escape unescapes to nothing: no line the store writes has one.
    guard !id.isEmpty else { return nil }
    let roomBytes = UnsafeRawBufferPointer(rebasing: line[room])
    return (id, room.count == 4 && Self.equal(roomBytes, at: 0, nullRoom) ? [] : Array(roomBytes))
  }

  /// The time of a stored line (`{"seq":N,"time":"…",`), or nil.
  static func time(ofLine line: UnsafeRawBufferPointer) -> Timestamp? {
    guard var i = skip(seqKey, in: line, at: 0) else { return nil }
    while i < line.count && line[i].isDigit { i += 1 }
    guard let start = skip(timeKey, in: line, at: i) else { return nil }
    var end = start
    while end < line.count && line[end] != UInt8(ascii: "\"") { end += 1 }
    guard end < line.count else { return nil }
    return Timestamp(
      rfc3339: String(decoding: UnsafeRawBufferPointer(rebasing: line[start..<end]), as: UTF8.self))
  }

  /// Where `key` ends when it stands at `index` of `line`, or nil.
  private static func skip(_ key: [UInt8], in line: UnsafeRawBufferPointer, at index: Int) -> Int? {
    equal(line, at: index, key) ? index + key.count : nil
  }

  /// Whether `key` stands at `index` of `line` (a memcmp: these run for every line read).
  static func equal(_ line: UnsafeRawBufferPointer, at index: Int, _ key: [UInt8]) -> Bool {
    guard index >= 0, index + key.count <= line.count, let base = line.baseAddress else {
      return false
    }
    return key.withUnsafeBytes { memcmp(base + index, $0.baseAddress!, key.count) == 0 }
  }

  static let nullRoom = Array("null".utf8)

  private static let dirIn = Array(#""dir":"in","room":"#.utf8)
  private static let seqKey = Array(#"{"seq":"#.utf8)
  private static let timeKey = Array(#","time":""#.utf8)
  private static let typeKey = Array(#","type":""#.utf8)
  private static let idKey = Array(#","id":""#.utf8)

  /// The rooms' ids as the lines come, newest first.
  private struct Found {
    let capacity: Int
    let hasher: IDHasher
    /// Per room, in the order first seen: its JSON (empty for none), its hashes newest first,
    /// and its newest id with its line's time (an empty id: none yet, or the room restarted).
    private var entries: [(room: [UInt8], hashes: [UInt64], newestID: [UInt8], time: Timestamp?)] =
      []
    /// Each room's FNV-1a hash, for finding it without allocating: by a scan while there are
    /// few rooms, then through `index`.
    private var roomHashes: [UInt32] = []
    private var index: [[UInt8]: Int] = [:]

    private static let scannedRooms = 64

    init(capacity: Int, hasher: IDHasher) {
      self.capacity = capacity
      self.hasher = hasher
    }

    func needsMore(_ room: [UInt8]) -> Bool {
      guard let i = room.withUnsafeBytes(find) else { return true }
      return entries[i].hashes.count < capacity
    }

    mutating func restart(_ room: [UInt8]) {
      guard let i = room.withUnsafeBytes(find) else { return }
      entries[i].hashes = []
      entries[i].newestID = []
    }

    mutating func take(_ line: ArraySlice<UInt8>, room wanted: [UInt8]?) {
      line.withUnsafeBytes { line in
        guard let (idRange, escaped, roomRange) = DedupeRebuild.idAndRoomRanges(ofLine: line)
        else { return }
        var room = UnsafeRawBufferPointer(rebasing: line[roomRange])
        if room.count == 4 && DedupeRebuild.equal(room, at: 0, DedupeRebuild.nullRoom) {
          room = UnsafeRawBufferPointer(start: nil, count: 0)
        }
        if let wanted, !wanted.withUnsafeBytes({ Self.same($0, room) }) { return }
        let i = find(room)
        var started = false
        if let i {
          started = !entries[i].newestID.isEmpty
          if started && entries[i].hashes.count >= capacity { return }
        }
        let content = UnsafeRawBufferPointer(rebasing: line[idRange])
        // A malformed escape unescapes to nothing: no line the store writes has one.
        let unescaped = escaped ? JSONString.unescape(content) : []
        guard !escaped || !unescaped.isEmpty else { return }
        let hash = escaped ? hasher.hash(unescaped) : hasher.hash(content)
        if let i, started {
          entries[i].hashes.append(hash)
          return
        }
        // The room's newest id, kept as text, with its line's time.
        let id = escaped ? unescaped : Array(content)
        let time = DedupeRebuild.time(ofLine: line)
        if let i {
          entries[i].hashes = [hash]
          entries[i].newestID = id
          entries[i].time = time
        } else {
          let bytes = Array(room)
          index[bytes] = entries.count
          roomHashes.append(FNV1a.hash32(room))
          entries.append((bytes, [hash], id, time))
        }
      }
    }

    /// The index of the room whose JSON is `room`, if it has one.
    private func find(_ room: UnsafeRawBufferPointer) -> Int? {
      guard entries.count <= Self.scannedRooms else { return index[Array(room)] }
      let hash = FNV1a.hash32(room)
      for i in roomHashes.indices where roomHashes[i] == hash {
        if entries[i].room.withUnsafeBytes({ Self.same($0, room) }) { return i }
      }
      return nil
    }

    private static func same(_ a: UnsafeRawBufferPointer, _ b: UnsafeRawBufferPointer) -> Bool {
      guard a.count == b.count else { return false }
      guard let x = a.baseAddress, let y = b.baseAddress else { return true }
      return memcmp(x, y, a.count) == 0
    }

    func rooms() -> [[UInt8]: Room] {
      var out: [[UInt8]: Room] = [:]
      for entry in entries where !entry.hashes.isEmpty {
        out[entry.room] = Room(
          hashes: entry.hashes.reversed(), newestID: entry.newestID, newestTime: entry.time)
      }
      return out
    }
  }
}
