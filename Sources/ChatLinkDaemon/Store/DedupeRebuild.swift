import EventLoop
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
  /// The hash of an id, as the window keeps it.
  let hash: @Sendable ([UInt8]) -> UInt64

  /// Reads `paths` (newest first) and returns what each room's window starts with.
  func read(
    paths: [String], indexDirectory: String?, configuredRooms: [RoomID], tailRecords: Int
  ) -> [[UInt8]: Room] {
    var found = Found(capacity: capacity, hash: hash)
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

  /// The id and room of a stored inbound line that has an id, read from the line's fixed
  /// prefix (`{"seq":…,"time":…,"dir":"in","room":R,"type":"…","id":"…",`) without scanning
  /// its data: start-up reads many lines. Anything else, a line not of ours included, has none.
  static func idAndRoom(ofLine line: UnsafeRawBufferPointer) -> (id: [UInt8], room: [UInt8])? {
    guard let room = StoreRecord.roomRange(ofLine: line),
      room.lowerBound >= dirIn.count,
      UnsafeRawBufferPointer(rebasing: line[(room.lowerBound - dirIn.count)..<room.lowerBound])
        .elementsEqual(dirIn),
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
    let content = UnsafeRawBufferPointer(rebasing: line[start..<end])
    let id = escaped ? JSONString.unescape(content) : Array(content)
    // A malformed escape unescapes to nothing: no line the store writes has one.
    guard !id.isEmpty else { return nil }
    let roomBytes = UnsafeRawBufferPointer(rebasing: line[room])
    return (id, roomBytes.elementsEqual("null".utf8) ? [] : Array(roomBytes))
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
    guard index >= 0, index + key.count <= line.count,
      UnsafeRawBufferPointer(rebasing: line[index..<(index + key.count)]).elementsEqual(key)
    else { return nil }
    return index + key.count
  }

  private static let dirIn = Array(#""dir":"in","room":"#.utf8)
  private static let seqKey = Array(#"{"seq":"#.utf8)
  private static let timeKey = Array(#","time":""#.utf8)
  private static let typeKey = Array(#","type":""#.utf8)
  private static let idKey = Array(#","id":""#.utf8)

  /// The rooms' ids as the lines come, newest first.
  private struct Found {
    let capacity: Int
    let hash: @Sendable ([UInt8]) -> UInt64
    /// Per room, hashes newest first, and the newest id with its line's time.
    private var byRoom: [[UInt8]: (hashes: [UInt64], newestID: [UInt8], time: Timestamp?)] = [:]

    init(capacity: Int, hash: @escaping @Sendable ([UInt8]) -> UInt64) {
      self.capacity = capacity
      self.hash = hash
    }

    func needsMore(_ room: [UInt8]) -> Bool { (byRoom[room]?.hashes.count ?? 0) < capacity }

    mutating func restart(_ room: [UInt8]) { byRoom[room] = nil }

    mutating func take(_ line: ArraySlice<UInt8>, room wanted: [UInt8]?) {
      guard let (id, room) = line.withUnsafeBytes(DedupeRebuild.idAndRoom(ofLine:)) else { return }
      if let wanted, wanted != room { return }
      if var entry = byRoom[room] {
        guard entry.hashes.count < capacity else { return }
        byRoom[room] = nil
        entry.hashes.append(hash(id))
        byRoom[room] = entry
      } else {
        byRoom[room] = ([hash(id)], id, line.withUnsafeBytes(DedupeRebuild.time(ofLine:)))
      }
    }

    func rooms() -> [[UInt8]: Room] {
      byRoom.mapValues {
        Room(hashes: $0.hashes.reversed(), newestID: $0.newestID, newestTime: $0.time)
      }
    }
  }
}
