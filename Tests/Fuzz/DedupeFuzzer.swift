// libFuzzer target for the store's dedupe window (Sources/ChatLinkDaemon/Store): what the
// rebuild reads of a store line at start, `DedupeRebuild.idAndRoom(ofLine:)`, on arbitrary
// lines and on lines the store itself writes, and `DedupeWindow` against a plain model.
//
// Both are internal to ChatLinkDaemon: scripts/fuzz.sh compiles the target's sources into
// this fuzzer's own module (FUZZER_FLAT), with the targets ChatLinkDaemon imports as modules.
//
// Input layout (Tests/Fuzz/make_seed_corpus.py writes the seeds in it):
//
//   byte 0   mode, taken modulo 4:
//              0 arbitrary store lines: the rest, split at LF
//              1 records the store writes: the rest as records, each 1 byte of kinds (bit 0
//                direction, bits 1-2 room, bits 3-4 id, bits 5-6 payload), 1 byte length,
//                that many bytes of content
//              2 the window: byte 1 the capacity (modulo 17: 0 keeps nothing), byte 2 the
//                most rooms (1 + modulo 4), then operations of 2 bytes: bits 0-1 of the
//                first the kind (insert, insert, contains, restore), bits 2-4 the room (0 is
//                the store's "no room"), the second the id (one of 64) or, for a restore,
//                how many of the following bytes are its ids (modulo 8) and whether it
//                names a newest id (bit 7)
//              3 the window's snapshot: byte 1 the capacity (1 + modulo 16), byte 2 how
//                many of the following bytes are inserts (modulo 64), each one's bits 6-7
//                the room and bits 0-5 the id; then damage in threes: two bytes of offset
//                into the snapshot, one to xor there (0: cut the snapshot at that offset)
//
// Oracles (a failure prints what broke, then traps):
//  - nothing crashes on any line;
//  - an id and a room are returned from a line that is JSON only when it is an object with
//    "dir":"in" and an "id" that is a non-empty string: the id is that string's text, the
//    room the "room" member as written (empty for null or none); the rebuild reads only the
//    store's fixed prefix, so other shapes give none and a line broken after that prefix may
//    give one (never an empty id);
//  - every line the store writes (StoreRecord.appendLine: inbound and outbound, rooms as
//    numbers, strings or none, ids of any text, payloads JSON, text or binary) gives back
//    exactly the inbound id it was written with and its room, and outbound lines none;
//  - DedupeWindow agrees with a model of a queue and a set per room (the oldest id leaves a
//    full room; a room least recently used gives its place up when there are too many;
//    `restore` puts the store's ids before those kept since): every insert's answer,
//    every contains, every room's newest id, the number of ids and rooms kept, bounded by
//    capacity x rooms;
//  - a snapshot of a window reads back as that window (every id of every room, each room's
//    newest id, the counts); a damaged one whose checksum is made right again, and the raw
//    input itself, read back as nothing or as a window that inserts and looks up every id
//    without crashing or looping, and keeps no more ids than its capacity allows.

import Glibc
import JSON
import LinkCore
import WebSocket

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzz(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
  guard size >= 1 else { return 0 }
  let input = Array(UnsafeBufferPointer(start: data, count: size))
  let rest = Array(input.dropFirst())
  switch input[0] % 4 {
  case 0:
    for line in rest.split(separator: UInt8(ascii: "\n"), omittingEmptySubsequences: false) {
      checkArbitraryLine(Array(line))
    }
  case 1:
    checkWrittenRecords(rest)
  case 2:
    checkWindow(rest)
  default:
    checkSnapshot(rest)
  }
  return 0
}

// MARK: - Lines

/// The reference's reading of a store line: nil when the rebuild must take no id from it.
func referenceID(_ value: JSONValue) -> (id: JSONValue, room: JSONValue?)? {
  guard let members = value.objectValue else { return nil }
  let interesting = members.filter { ["dir", "room", "id"].contains($0.key) }
  // Duplicate keys: which occurrence counts is the scanner's choice, and the store never
  // writes any; those lines are only required not to crash.
  guard Set(interesting.map(\.key)).count == interesting.count else { return nil }
  guard value["dir"] == .string("in"), let id = value["id"] else { return nil }
  switch id {
  case .string(let text) where !text.isEmpty: break
  default: return nil
  }
  return (id, value["room"])
}

func hasDuplicateKeys(_ value: JSONValue) -> Bool {
  guard let members = value.objectValue else { return false }
  let keys = members.map(\.key).filter { ["dir", "room", "id"].contains($0) }
  return Set(keys).count != keys.count
}

func checkArbitraryLine(_ line: [UInt8]) {
  // The rebuild reads only the fixed prefix the store writes, not the data after it: a line
  // of another shape gives no id (that every line the store writes gives its id is mode 1's
  // oracle), and a line that is not JSON after a well-formed prefix may give one.
  guard let got = line.withUnsafeBytes({ DedupeRebuild.idAndRoom(ofLine: $0) }) else { return }
  require(!got.id.isEmpty, "an empty id: \(hex(line))")
  guard let value = try? JSONValue.parse(line), !hasDuplicateKeys(value) else { return }
  guard let want = referenceID(value) else {
    require(false, "an id from a line that is not an inbound record with one: \(hex(line))")
    return
  }
  // A lone surrogate escape reads as U+FFFD in the tree, as the bytes it spells here.
  if case .string(let text) = want.id, !text.unicodeScalars.contains("\u{FFFD}") {
    require(got.id == Array(text.utf8), "the id \(hex(got.id)) is not \(text): \(hex(line))")
  }
  if got.room.isEmpty {
    require(
      want.room == nil || want.room == .null, "no room from a line with one: \(hex(line))")
  } else {
    require(
      (try? JSONValue.parse(got.room)) == want.room,
      "the room \(hex(got.room)) is not the line's: \(hex(line))")
  }
}

/// Reads the records of mode 1 and checks each line the store writes for them.
func checkWrittenRecords(_ bytes: [UInt8]) {
  var index = 0
  var seq: UInt64 = 1
  while index + 2 <= bytes.count {
    let kinds = bytes[index]
    let length = min(Int(bytes[index + 1]), bytes.count - index - 2)
    let content = Array(bytes[(index + 2)..<(index + 2 + length)])
    index += 2 + length
    checkWrittenRecord(kinds: kinds, content: content, seq: seq)
    seq += 1
  }
}

func checkWrittenRecord(kinds: UInt8, content: [UInt8], seq: UInt64) {
  let inbound = kinds & 1 == 0
  let text = String(decoding: content, as: UTF8.self)
  var room: [UInt8]?
  switch (kinds >> 1) & 3 {
  case 0: room = nil
  case 1:
    room = Array(("-" + String(1 + Int(content.first ?? 0)) + "0").utf8.dropFirst(Int(kinds >> 7)))
  case 2:
    var quoted: [UInt8] = []
    JSONString.append(text, to: &quoted)
    room = quoted
  default: room = Array("0".utf8)
  }
  let id: [UInt8]? =
    switch (kinds >> 3) & 3 {
    case 0: nil
    case 1: Array(text.utf8)
    case 2: Array(content.map { UInt8(ascii: "0") + $0 % 10 })
    default: Array("\"\\\u{01}\n\(text)".utf8)
    }
  // Text frames arrive as UTF-8 (the WebSocket layer refuses others), JSON or not.
  let payload: Message =
    switch (kinds >> 5) & 3 {
    case 0: .text(Array(#"{"event":"message","data":{"msg_id":"x","dir":"in","id":7}}"#.utf8))
    case 1: .text(Array(text.utf8))
    case 2: .binary(content)
    default: .text(Array(#"{"dir":"out","id":"#.utf8) + Array(text.utf8) + Array("}".utf8))
    }
  var line: [UInt8] = []
  var formatter = TimestampFormatter()
  func write(_ messageID: UnsafeRawBufferPointer?) {
    StoreRecord.appendLine(
      seq: seq, time: Timestamp(microseconds: Int64(seq)),
      direction: inbound ? .inbound : .outbound, room: room,
      clientID: inbound ? nil : .given("c-\(seq)"), messageID: messageID, meta: nil,
      payload: payload, scan: .unscanned, to: &line, formatter: &formatter)
  }
  if inbound, let id { id.withUnsafeBytes { write($0) } } else { write(nil) }
  line.removeLast()
  require(
    (try? JSONValue.parse(line)) != nil, "the store wrote a line that is not JSON: \(hex(line))")
  let got = line.withUnsafeBytes { DedupeRebuild.idAndRoom(ofLine: $0) }
  guard inbound, let id, !id.isEmpty else {
    require(got == nil, "an id from a line written without one: \(hex(line))")
    return
  }
  require(
    got?.id == id, "the id written, \(hex(id)), read back as \(hex(got?.id ?? [])): \(hex(line))")
  require(
    got?.room == (room ?? []),
    "the room written, \(hex(room ?? [])), read back as \(hex(got?.room ?? []))")
}

// MARK: - The window

/// The window as a model: a queue and a set of ids per room, rooms in slots as the window
/// keeps them (a room given up leaves its slot to the next new one).
struct WindowModel {
  struct Room {
    var key: Int
    var queue: [Int] = []
    var set: Set<Int> = []
    var newest: Int?
    var lastSeen: UInt64 = 0
  }

  let capacity: Int
  let maxRooms: Int
  var slots: [Room] = []
  var clock: UInt64 = 0

  func slot(of key: Int) -> Int? { slots.firstIndex { $0.key == key } }

  /// The room's slot, made (or taken from the room least recently seen) when it has none.
  mutating func touch(_ key: Int) -> Int {
    clock += 1
    let index: Int
    if let known = slot(of: key) {
      index = known
    } else if slots.count < maxRooms {
      slots.append(Room(key: key))
      index = slots.count - 1
    } else {
      index = slots.indices.min { slots[$0].lastSeen < slots[$1].lastSeen } ?? 0
      slots[index] = Room(key: key)
    }
    slots[index].lastSeen = clock
    return index
  }

  static func add(_ id: Int, to room: inout Room, capacity: Int) -> Bool {
    guard !room.set.contains(id) else { return false }
    room.queue.append(id)
    room.set.insert(id)
    if room.queue.count > capacity { room.set.remove(room.queue.removeFirst()) }
    return true
  }

  mutating func insert(_ key: Int, _ id: Int) -> Bool {
    guard capacity > 0 else { return true }
    let index = touch(key)
    guard Self.add(id, to: &slots[index], capacity: capacity) else { return false }
    slots[index].newest = id
    return true
  }

  func contains(_ key: Int, _ id: Int) -> Bool {
    guard capacity > 0, let index = slot(of: key) else { return false }
    return slots[index].set.contains(id)
  }

  mutating func restore(_ key: Int, _ ids: [Int], newest: Int?) {
    guard capacity > 0, !ids.isEmpty else { return }
    let index = touch(key)
    let kept = slots[index]
    // The ids are made afresh; the room counts as seen now, as for an insert.
    var room = Room(key: key)
    room.lastSeen = kept.lastSeen
    for id in ids.suffix(capacity) { _ = Self.add(id, to: &room, capacity: capacity) }
    if let newest { room.newest = newest }
    for id in kept.queue { _ = Self.add(id, to: &room, capacity: capacity) }
    if let newest = kept.newest { room.newest = newest }
    slots[index] = room
  }

  func newest(_ key: Int) -> Int? { slot(of: key).flatMap { slots[$0].newest } }
}

/// The window's name for room `key`: 0 is the store's "no room".
func roomBytes(_ key: Int) -> [UInt8]? { key == 0 ? nil : Array("\(key)".utf8) }

/// The id numbered `n`: text, some of it shared as prefixes.
func idBytes(_ n: Int) -> [UInt8] { Array("id-\(n)".utf8) }

func idNumber(_ bytes: [UInt8]?) -> Int? {
  guard let bytes else { return nil }
  return Int(String(decoding: bytes.dropFirst(3), as: UTF8.self))
}

func checkWindow(_ bytes: [UInt8]) {
  guard bytes.count >= 2 else { return }
  let capacity = Int(bytes[0] % 17)
  let maxRooms = 1 + Int(bytes[1] % 4)
  var window = DedupeWindow(capacity: capacity, maxRooms: maxRooms, basis: 0x5DEE_CE66_D1CE_4E5B)
  var model = WindowModel(capacity: capacity, maxRooms: maxRooms)
  var index = 2
  var operations = 0
  while index + 2 <= bytes.count {
    let op = bytes[index]
    let arg = bytes[index + 1]
    index += 2
    let key = Int((op >> 2) & 7)
    switch op & 3 {
    case 0, 1:
      let id = Int(arg % 64)
      let got = window.insert(room: roomBytes(key), id: idBytes(id))
      let want = model.insert(key, id)
      require(got == want, "insert of \(id) in room \(key): \(got), the model says \(want)")
    case 2:
      let id = Int(arg % 64)
      let got = window.contains(room: roomBytes(key), id: idBytes(id))
      require(got == model.contains(key, id), "contains \(id) in room \(key): \(got)")
    default:
      let count = min(Int(arg & 7), bytes.count - index)
      let ids = bytes[index..<(index + count)].map { Int($0 % 64) }
      index += count
      let newest = arg & 0x80 != 0 ? ids.last : nil
      window.restore(
        room: roomBytes(key) ?? [], hashes: ids.map { window.hash(idBytes($0)) },
        newestID: newest.map(idBytes))
      model.restore(key, ids, newest: newest)
    }
    operations += 1
    checkAgreement(window, model, rooms: key..<(key + 1), everyID: operations % 256 == 0)
  }
  checkAgreement(window, model, rooms: 0..<8, everyID: true)
}

/// Compares the counts and the newest id of `rooms`, and with `everyID` whether each id is
/// kept (now and then: comparing every id after every operation would leave little time for
/// fuzzing).
func checkAgreement(
  _ window: DedupeWindow, _ model: WindowModel, rooms: Range<Int>, everyID: Bool
) {
  let ids = model.slots.reduce(0) { $0 + $1.queue.count }
  require(window.count == ids, "the window keeps \(window.count) ids, the model \(ids)")
  require(
    window.roomCount == model.slots.count,
    "\(window.roomCount) rooms, the model \(model.slots.count)")
  require(window.roomCount <= model.maxRooms, "more rooms than allowed")
  require(
    window.count <= model.capacity * max(1, window.roomCount), "more ids than the capacity allows")
  for key in rooms {
    let newest = idNumber(window.newestID(room: roomBytes(key)))
    require(newest == model.newest(key), "room \(key)'s newest id: \(String(describing: newest))")
    for id in 0..<(everyID ? 64 : 0)
    where model.contains(key, id) != window.contains(room: roomBytes(key), id: idBytes(id)) {
      require(false, "room \(key) and id \(id): the window and the model disagree")
    }
  }
}

// MARK: - The snapshot

func checkSnapshot(_ bytes: [UInt8]) {
  guard bytes.count >= 2 else { return }
  let capacity = 1 + Int(bytes[0] % 16)
  let inserts = bytes.dropFirst(2).prefix(Int(bytes[1] % 64))
  var window = DedupeWindow(capacity: capacity, basis: 0x5DEE_CE66_D1CE_4E5B)
  for byte in inserts {
    window.insert(room: roomBytes(Int(byte >> 6)), id: idBytes(Int(byte & 63)))
  }
  let expected = DedupeSnapshot.Expectation(
    storeLastSeq: 9, capacity: capacity, configuredRooms: [], keepsNewest: true)
  let encoded = DedupeSnapshot.encode(window, seq: 9, configuredRooms: [])
  guard let back = DedupeSnapshot.decode(encoded, expected: expected)?.window else {
    require(false, "a snapshot of a window did not read back")
    return
  }
  require(back.count == window.count, "\(back.count) ids read back of \(window.count)")
  require(back.roomCount == window.roomCount, "\(back.roomCount) rooms of \(window.roomCount)")
  for key in 0..<4 {
    require(
      back.newestID(room: roomBytes(key)) == window.newestID(room: roomBytes(key)),
      "room \(key)'s newest id")
    for id in 0..<64
    where back.contains(room: roomBytes(key), id: idBytes(id))
      != window.contains(room: roomBytes(key), id: idBytes(id))
    {
      require(false, "room \(key) and id \(id): the snapshot and the window disagree")
    }
  }
  var damaged = encoded
  var index = 2 + inserts.count
  while index + 3 <= bytes.count {
    let offset = (Int(bytes[index]) << 8 | Int(bytes[index + 1])) % max(1, damaged.count - 8)
    if bytes[index + 2] == 0 {
      damaged.removeSubrange(offset..<(damaged.count - 8))
    } else {
      damaged[offset] ^= bytes[index + 2]
    }
    index += 3
  }
  let sum = damaged.withUnsafeBytes {
    DedupeSnapshot.checksum(UnsafeRawBufferPointer(rebasing: $0[..<(damaged.count - 8)]))
  }
  withUnsafeBytes(of: sum.littleEndian) {
    damaged.replaceSubrange((damaged.count - 8)..., with: $0)
  }
  for candidate in [damaged, bytes] {
    guard var read = DedupeSnapshot.decode(candidate, expected: expected)?.window else {
      continue
    }
    require(read.count <= capacity * max(1, read.roomCount), "more ids than the capacity allows")
    for key in 0..<4 {
      for id in 0..<64 {
        _ = read.contains(room: roomBytes(key), id: idBytes(id))
        read.insert(room: roomBytes(key), id: idBytes(id))
      }
    }
  }
}
