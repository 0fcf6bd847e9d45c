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
  /// One room's ids' hashes, oldest first, and its newest id.
  struct Room: Sendable {
    var hashes: [UInt64] = []
    var newestID: [UInt8]?
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

  /// The id and room of a stored inbound line that has an id.
  static func idAndRoom(ofLine line: UnsafeRawBufferPointer) -> (id: [UInt8], room: [UInt8])? {
    guard
      let scan = JSONScanner.scan(line, topLevel: keys),
      let dir = scan.topLevel[0], line[dir].elementsEqual(#""in""#.utf8),
      let id = MessageID.text(line, scan.topLevel[2])
    else { return nil }
    let room = scan.topLevel[1].map { Array(line[$0]) } ?? Array("null".utf8)
    return (id, room == Array("null".utf8) ? [] : room)
  }

  private static let keys = JSONScanner.Keys(["dir", "room", "id"])

  /// The rooms' ids as the lines come, newest first.
  private struct Found {
    let capacity: Int
    let hash: @Sendable ([UInt8]) -> UInt64
    /// Per room, hashes newest first, and the newest id.
    private var byRoom: [[UInt8]: (hashes: [UInt64], newestID: [UInt8])] = [:]

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
        byRoom[room] = ([hash(id)], id)
      }
    }

    func rooms() -> [[UInt8]: Room] {
      byRoom.mapValues { Room(hashes: $0.hashes.reversed(), newestID: $0.newestID) }
    }
  }
}
