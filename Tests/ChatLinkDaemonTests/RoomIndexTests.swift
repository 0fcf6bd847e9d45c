import XCTest

@testable import ChatLinkDaemon

/// The room index format and block builder, without files.
final class RoomIndexTests: XCTestCase {
  private let identity = RoomIndex.FileIdentity(firstSeq: 41, hash: 0xDEAD_BEEF_0123_4567)

  private func entry(_ start: Int, _ end: Int, _ first: UInt64, _ last: UInt64, _ rooms: [UInt32])
    -> RoomIndex.Entry
  {
    RoomIndex.Entry(start: start, end: end, firstSeq: first, lastSeq: last, rooms: rooms)
  }

  private func file(_ entries: [RoomIndex.Entry]) -> [UInt8] {
    var bytes = RoomIndex.header(for: identity)
    for entry in entries { RoomIndex.encode(entry, to: &bytes) }
    return bytes
  }

  func testEntriesRoundTripThroughEncodeAndParse() throws {
    let entries = [
      entry(0, 65_600, 41, 300, [3, 9, 4_000_000_000]), entry(65_600, 70_000, 301, 320, []),
      entry(80_000, 90_000, 0, 0, [1]),
    ]
    let bytes = file(entries)
    let parsed = try XCTUnwrap(RoomIndex.parse(bytes))
    XCTAssertEqual(parsed.identity, identity)
    XCTAssertEqual(parsed.entries, entries)
    XCTAssertEqual(parsed.validLength, bytes.count)
    XCTAssertEqual(bytes.count, 32 + 3 * 40 + 4 * 4)
  }

  func testParseStopsAtATornEntryAndReportsTheValidLength() throws {
    let entries = [entry(0, 100, 1, 2, [5, 6]), entry(100, 200, 3, 4, [7])]
    let bytes = file(entries)
    for cut in (bytes.count - 43)..<bytes.count {
      let parsed = try XCTUnwrap(RoomIndex.parse(Array(bytes[..<cut])))
      XCTAssertEqual(parsed.entries, [entries[0]], "cut at \(cut)")
      XCTAssertEqual(parsed.validLength, 32 + 48)
    }
  }

  func testParseStopsAtAnEntryWhoseBytesWereChanged() throws {
    let entries = [entry(0, 100, 1, 2, [5, 6]), entry(100, 200, 3, 4, [7])]
    let clean = file(entries)
    // Every byte of the second entry, flipped in turn: the check catches each one.
    for position in (32 + 48)..<clean.count {
      var bytes = clean
      bytes[position] ^= 0x10
      let parsed = try XCTUnwrap(RoomIndex.parse(bytes))
      XCTAssertEqual(parsed.entries, [entries[0]], "byte \(position)")
    }
  }

  func testParseRejectsEntriesThatOverlapOrRunBackwards() throws {
    let overlapping = file([entry(0, 100, 1, 2, []), entry(50, 200, 3, 4, [])])
    XCTAssertEqual(try XCTUnwrap(RoomIndex.parse(overlapping)).entries.count, 1)
    let empty = file([entry(100, 100, 1, 2, [])])
    XCTAssertEqual(try XCTUnwrap(RoomIndex.parse(empty)).entries, [])
    let seqsBackwards = file([entry(0, 100, 9, 2, [])])
    XCTAssertEqual(try XCTUnwrap(RoomIndex.parse(seqsBackwards)).entries, [])
    let unsortedRooms = file([entry(0, 100, 1, 2, [9, 3])])
    XCTAssertEqual(try XCTUnwrap(RoomIndex.parse(unsortedRooms)).entries, [])
  }

  func testParseRefusesAFileThatIsNotAnIndex() {
    XCTAssertNil(RoomIndex.parse([]))
    XCTAssertNil(RoomIndex.parse(Array("CLROOMS1".utf8)))
    XCTAssertNil(RoomIndex.parse(Array(#"{"seq":1,"time":"2026-12-02T00:00:00.000000Z"}"#.utf8)))
    var otherVersion = file([])
    otherVersion[7] = UInt8(ascii: "2")
    XCTAssertNil(RoomIndex.parse(otherVersion))
  }

  func testMayContainFindsEveryIndexedRoomAndNoOther() {
    let rooms = (0..<200).map { UInt32($0 * 7 + 1) }
    let block = entry(0, 1, 1, 1, rooms)
    for value in 0..<1500 {
      XCTAssertEqual(block.mayContain(room: UInt32(value)), rooms.contains(UInt32(value)))
    }
    XCTAssertFalse(entry(0, 1, 1, 1, []).mayContain(room: 0))
  }

  func testBuilderClosesABlockOnceItHoldsTheTargetSize() {
    var builder = RoomIndexBuilder(offset: 1000)
    var closed: [RoomIndex.Entry] = []
    for seq in 1...700 {
      if let entry = builder.add(length: 250, seq: UInt64(seq), room: UInt32(seq % 3)) {
        closed.append(entry)
      }
    }
    // 65,536 / 250 → the 263rd line closes a block.
    XCTAssertEqual(closed.count, 2)
    XCTAssertEqual(closed[0], entry(1000, 1000 + 263 * 250, 1, 263, [0, 1, 2]))
    XCTAssertEqual(closed[1].start, closed[0].end)
    XCTAssertEqual(closed[1].firstSeq, 264)
    let last = builder.finish()
    XCTAssertEqual(last, entry(1000 + 526 * 250, 1000 + 700 * 250, 527, 700, [0, 1, 2]))
    XCTAssertNil(builder.finish(), "nothing left after finishing")
    XCTAssertEqual(builder.end, 1000 + 700 * 250)
  }

  func testBuilderClosesABlockAtMaxRoomsSoEntriesStayBounded() {
    var builder = RoomIndexBuilder(offset: 0)
    var closed: [RoomIndex.Entry] = []
    for seq in 1...1200 {
      if let entry = builder.add(length: 10, seq: UInt64(seq), room: UInt32(seq)) {
        closed.append(entry)
      }
    }
    XCTAssertEqual(closed.count, 2)
    XCTAssertEqual(closed.map(\.rooms.count), [RoomIndex.maxRooms, RoomIndex.maxRooms])
  }

  func testBuilderKeepsLinesThatAreNotRecordsInsideTheBlock() {
    var builder = RoomIndexBuilder(offset: 0)
    _ = builder.add(length: 30, seq: nil, room: nil)
    _ = builder.add(length: 40, seq: 5, room: 8)
    _ = builder.add(length: 50, seq: nil, room: nil)
    XCTAssertEqual(builder.finish(), entry(0, 120, 5, 5, [8]))
    _ = builder.add(length: 30, seq: nil, room: nil)
    XCTAssertEqual(builder.finish(), entry(120, 150, 0, 0, []))
  }

  func testSegmentsFillTheGapsAndIgnoreEntriesPastTheEndOfTheFile() {
    let a = entry(100, 200, 1, 2, [])
    let b = entry(200, 300, 3, 4, [])
    let c = entry(400, 500, 5, 6, [])
    XCTAssertEqual(
      RoomIndex.segments([a, b, c], size: 450),
      [.unindexed(start: 0, end: 100), .block(a), .block(b), .unindexed(start: 300, end: 450)])
    XCTAssertEqual(RoomIndex.segments([a], size: 200), [.unindexed(start: 0, end: 100), .block(a)])
    XCTAssertEqual(RoomIndex.segments([], size: 9), [.unindexed(start: 0, end: 9)])
    XCTAssertEqual(RoomIndex.segments([], size: 0), [])
  }

  func testIdentityComesFromTheFirstLineOnly() throws {
    func identity(_ text: String) -> RoomIndex.FileIdentity? {
      Array(text.utf8).withUnsafeBytes { RoomIndex.identity(ofFileStart: $0) }
    }
    let line = #"{"seq":7,"time":"2026-12-02T12:00:00.000001Z","dir":"in","room":1,"type":"json"}"#
    let one = try XCTUnwrap(identity(line + "\n" + "more"))
    XCTAssertEqual(one.firstSeq, 7)
    XCTAssertEqual(identity(line + "\nother"), one, "bytes after the 64th do not count")
    let short = #"{"seq":7,"a":1}"#
    XCTAssertEqual(identity(short + "\nA"), identity(short + "\nB"), "nor after the first line")
    let otherTime = line.replacingOccurrences(of: "000001Z", with: "000002Z")
    XCTAssertNotEqual(identity(otherTime), one)
    XCTAssertNil(identity("not a record\n"))
    XCTAssertNil(identity(""))
  }

  func testIndexFileNamesAreTheFirstSeq() {
    XCTAssertEqual(RoomIndex.fileName(firstSeq: 1234), "1234.rooms")
    XCTAssertEqual(RoomIndex.firstSeq(ofFileName: "1234.rooms"), 1234)
    XCTAssertNil(RoomIndex.firstSeq(ofFileName: ".1234.99.tmp"))
    XCTAssertNil(RoomIndex.firstSeq(ofFileName: "x.rooms"))
    XCTAssertNil(RoomIndex.firstSeq(ofFileName: "messages.jsonl"))
  }

  func testRoomRangeFindsNumbersStringsAndNull() {
    func room(_ line: String) -> String? {
      let bytes = Array(line.utf8)
      return bytes.withUnsafeBytes { raw in
        StoreRecord.roomRange(ofLine: raw).map { String(decoding: bytes[$0], as: UTF8.self) }
      }
    }
    let prefix = #"{"seq":1,"time":"2026-12-02T12:00:00.000000Z","dir":"in","room":"#
    XCTAssertEqual(room(prefix + #"42,"type":"json","data":{}}"#), "42")
    XCTAssertEqual(room(prefix + #"null,"type":"text","data":""}"#), "null")
    XCTAssertEqual(room(prefix + #""a,b","type":"json","data":{}}"#), #""a,b""#)
    XCTAssertEqual(room(prefix + #""say \"hi\", \\","type":"json"}"#), #""say \"hi\", \\""#)
    XCTAssertNil(room(prefix + #""unterminated"#))
    XCTAssertNil(room(prefix + "7"))
    XCTAssertNil(room(#"{"seq":1,"data":{"room":5,"x":1}}"#.padding(200)))
    XCTAssertNil(room("garbage"))
  }

  func testTheRoomHashOfARecordWithoutRoomIsTheHashOfNull() {
    XCTAssertEqual(RoomIndex.nullRoomHash, RoomIndex.roomHash(Array("null".utf8)))
    XCTAssertNotEqual(RoomIndex.roomHash(Array("1".utf8)), RoomIndex.roomHash(Array("2".utf8)))
    XCTAssertNotEqual(RoomIndex.roomHash(Array("1".utf8)), RoomIndex.roomHash(Array("\"1\"".utf8)))
  }
}

extension String {
  /// The string moved right by `count` spaces, so its keys lie beyond the prefix searched.
  fileprivate func padding(_ count: Int) -> String { String(repeating: " ", count: count) + self }
}
