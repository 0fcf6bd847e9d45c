import JSON
import XCTest

@testable import LinkCore

final class OutboxEntryTests: XCTestCase {
  func testADrawnIDIsItsNumberAs16LowercaseHexDigits() {
    XCTAssertEqual(ClientID.generated(0x0123_4567_89ab_cdef).description, "0123456789abcdef")
    XCTAssertEqual(ClientID.generated(0).description, "0000000000000000")
    XCTAssertEqual(ClientID.generated(.max).description, "ffffffffffffffff")
    XCTAssertEqual(ClientID.generated(0xa).utf8Count, 16)
    XCTAssertEqual(ClientID.given("héllo").utf8Count, 6)
    ClientID.generated(0xfedc_ba98_7654_3210).withUTF8 {
      XCTAssertEqual(Array($0), Array("fedcba9876543210".utf8))
    }
  }

  func testAnIDIsWrittenAsAJSONString() {
    var out: [UInt8] = Array("[".utf8)
    ClientID.generated(0x00ab_cdef_0123_4567).appendJSON(to: &out)
    ClientID.given("say \"hi\"").appendJSON(to: &out)
    XCTAssertEqual(String(decoding: out, as: UTF8.self), #"["00abcdef01234567""say \"hi\"""#)
  }

  func testIDsAreEqualAndHashAlikeWhenTheirTextsAre() {
    // A drawn id read back from the outbox log is a given one with the same digits.
    let drawn = ClientID.generated(0x0123_4567_89ab_cdef)
    let readBack = ClientID.given("0123456789abcdef")
    XCTAssertEqual(drawn, readBack)
    XCTAssertEqual(readBack, drawn)
    XCTAssertEqual(drawn.hashValue, readBack.hashValue)
    XCTAssertEqual(Set([drawn, readBack, .given("a")]).count, 2)
    XCTAssertNotEqual(drawn, .generated(0x0123_4567_89ab_cdee))
    XCTAssertNotEqual(drawn, .given("0123456789ABCDEF"))
    // Compared by bytes, as they are hashed: canonically equal texts are different ids.
    XCTAssertNotEqual(ClientID.given("\u{E9}"), .given("e\u{301}"))
  }

  func testAnIDMatchesOnlyItsOwnText() {
    XCTAssertTrue(ClientID.generated(0xff).matches("00000000000000ff"))
    XCTAssertFalse(ClientID.generated(0xff).matches("ff"))
    XCTAssertFalse(ClientID.generated(0xff).matches("00000000000000ff "))
    XCTAssertTrue(ClientID.given("deploy-7").matches("deploy-7"))
    XCTAssertFalse(ClientID.given("deploy-7").matches("deploy-8"))
    XCTAssertTrue(ClientID.generated(1).isPlain)
    XCTAssertTrue(ClientID.given("a.b:c_d-e").isPlain)
    XCTAssertFalse(ClientID.given("a\"b").isPlain)
  }

  func testABatchSharesRoomAndTimeAndNumbersItsEntriesInOrder() {
    let created = Timestamp.now()
    let ids: [ClientID] = [.generated(1), .given("two"), .generated(3)]
    let entries = OutboxEntry.batch(
      room: RoomID("ops"), texts: ["a", "b \"quoted\"", "c"], ids: ids, firstCount: 41,
      created: created)
    XCTAssertEqual(entries.map(\.count), [41, 42, 43])
    XCTAssertEqual(entries.map(\.text), ["a", "b \"quoted\"", "c"])
    XCTAssertEqual(entries.map(\.id), ["0000000000000001", "two", "0000000000000003"])
    XCTAssertEqual(entries.map(\.clientID), ids)
    XCTAssertEqual(entries.map(\.room?.name), ["ops", "ops", "ops"])
    XCTAssertEqual(entries.map(\.created), [created, created, created])
    XCTAssertEqual(entries.map(\.isPlain), [true, false, true])
    for entry in entries {
      var bytes: [UInt8] = []
      entry.withTextUTF8 { bytes = Array($0) }
      XCTAssertEqual(bytes, Array(entry.text.utf8))
    }
    // More texts than ids (or the other way round): as many entries as there are both.
    XCTAssertEqual(
      OutboxEntry.batch(
        room: nil, texts: ["x", "y"], ids: [.generated(9)], firstCount: 1,
        created: created
      ).count, 1)
  }

  func testAnEntryOfABatchEqualsTheSameMessageMadeAlone() {
    let created = Timestamp.now()
    let batch = OutboxEntry.batch(
      room: nil, texts: ["hi", "there"], ids: [.generated(0xab), .generated(0xcd)],
      firstCount: 5, created: created)
    let alone = OutboxEntry(
      id: "00000000000000cd", room: nil, text: "there", count: 6, created: created)
    XCTAssertEqual(batch[1], alone)
    XCTAssertEqual(batch[1].hashValue, alone.hashValue)
    XCTAssertNotEqual(batch[0], batch[1])
    XCTAssertEqual(batch[0], batch[0])
    XCTAssertFalse(
      OutboxEntry(id: "a\"b", room: nil, text: "plain", count: 1, created: created).isPlain)
    // Equal, but not accepted together.
    XCTAssertTrue(batch[1].isInBatch(of: batch[0]))
    XCTAssertFalse(batch[1].isInBatch(of: alone))
    XCTAssertTrue(alone.isInBatch(of: alone))
  }
}
