import XCTest

@testable import ChatLinkCore

/// Replaying the outbox log's bytes (`OutboxLog`), without a disk.
final class OutboxLogTests: XCTestCase {
  private func replay(_ lines: String...) -> OutboxLog {
    OutboxLog(replaying: Array(lines.joined().utf8))
  }

  private func add(_ id: String, count: Int, room: String = "7", text: String = "t") -> String {
    #"{"op":"add","id":"\#(id)","room":\#(room),"count":\#(count),"#
      + #""time":"2026-01-01T00:00:00Z","text":"\#(text)"}"# + "\n"
  }

  private func ack(_ id: String) -> String { #"{"op":"ack","id":"\#(id)"}"# + "\n" }

  func testAnEmptyLogHasNothingPendingAndStartsCountingAtOne() {
    let log = replay()
    XCTAssertEqual(log.pending, [])
    XCTAssertEqual(log.nextCount, 1)
    XCTAssertEqual(log.corruptLines, 0)
    XCTAssertEqual(log.wholeLinesLength, 0)
  }

  func testAddsWithoutAnAckArePendingInOrderWithEveryField() throws {
    let log = replay(
      add("a", count: 1, text: #"line\none \"quoted\""#), add("b", count: 2, room: #""ops""#),
      add("c", count: 3, room: "null"), ack("b"))
    XCTAssertEqual(log.pending.map(\.id), ["a", "c"])
    XCTAssertEqual(log.pending.map(\.text), ["line\none \"quoted\"", "t"])
    XCTAssertEqual(log.pending.map(\.room), [RoomID("7"), nil])
    XCTAssertEqual(log.pending.map(\.count), [1, 3])
    XCTAssertEqual(
      log.pending[0].created, try XCTUnwrap(Timestamp(rfc3339: "2026-01-01T00:00:00Z")))
    XCTAssertEqual(log.nextCount, 4)
  }

  func testCountsStayAboveAcknowledgedAddsAndACompactionsCounter() {
    XCTAssertEqual(replay(add("a", count: 5), ack("a")).nextCount, 6)
    XCTAssertEqual(replay(#"{"op":"counter","count":9}"# + "\n").nextCount, 9)
    XCTAssertEqual(replay(#"{"op":"counter","count":9}"# + "\n", add("a", count: 9)).nextCount, 10)
  }

  func testATornLastLineIsLeftOutOfTheWholeLines() {
    let whole = add("a", count: 1)
    let log = replay(whole, #"{"op":"add","id":"b","roo"#)
    XCTAssertEqual(log.pending.map(\.id), ["a"])
    XCTAssertEqual(log.wholeLinesLength, whole.utf8.count)
    XCTAssertEqual(log.corruptLines, 0)
  }

  func testLinesThatDoNotParseAreCountedAndSkipped() {
    let log = replay(
      "garbage\n", #"{"op":"add","id":"x","count":1}"# + "\n", #"{"op":"move"}"# + "\n",
      add("a", count: 2))
    XCTAssertEqual(log.corruptLines, 3)
    XCTAssertEqual(log.pending.map(\.id), ["a"])
    XCTAssertEqual(log.nextCount, 3)
  }

  func testALaterAddOfAPendingIDReplacesItAndPendingStaysInCountOrder() {
    let log = replay(add("a", count: 1, text: "old"), add("b", count: 2), add("a", count: 3))
    XCTAssertEqual(log.pending.map(\.id), ["b", "a"])
    XCTAssertEqual(log.pending.map(\.count), [2, 3])
    XCTAssertEqual(log.pending.map(\.text), ["t", "t"])
  }

  func testAnIDAddedAgainAfterItsAckIsPendingOnceAtItsNewPlace() {
    let log = replay(add("a", count: 1), ack("a"), add("b", count: 2), add("a", count: 3))
    XCTAssertEqual(log.pending.map(\.id), ["b", "a"])
    XCTAssertEqual(log.pending.map(\.count), [2, 3])
    XCTAssertEqual(log.nextCount, 4)
  }

  func testACounterOfZeroOrWithoutACountDoesNotStopTheReplay() {
    let zero = replay(#"{"op":"counter","count":0}"# + "\n", add("a", count: 1))
    XCTAssertEqual(zero.pending.map(\.id), ["a"])
    XCTAssertEqual(zero.nextCount, 2)
    XCTAssertEqual(zero.corruptLines, 0)
    let missing = replay(#"{"op":"counter"}"# + "\n", #"{"op":"counter","count":-3}"# + "\n")
    XCTAssertEqual(missing.corruptLines, 2)
    XCTAssertEqual(missing.nextCount, 1)
  }

  /// One `ack` with `through` confirms every entry added before it up to that count (what a
  /// pong confirms); entries added after it stay, and an `ack` with neither field is corrupt.
  func testAnAckThroughACountRemovesEveryEarlierEntryUpToIt() {
    let through = #"{"op":"ack","through":3}"# + "\n"
    let log = replay(
      add("a", count: 1), add("b", count: 2), add("c", count: 3), add("d", count: 4), through,
      add("e", count: 5))
    XCTAssertEqual(log.pending.map(\.id), ["d", "e"])
    XCTAssertEqual(log.nextCount, 6)
    XCTAssertEqual(log.corruptLines, 0)
    let broken = replay(
      add("a", count: 1), #"{"op":"ack"}"# + "\n", #"{"op":"ack","through":"x"}"# + "\n")
    XCTAssertEqual(broken.pending.map(\.id), ["a"])
    XCTAssertEqual(broken.corruptLines, 2)
  }
}
