import JSON
import LinkCore
import XCTest

@testable import ChatLinkDaemon

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

  private func batch(
    _ ids: [String], count: Int, room: String = "7", texts: [String]? = nil,
    time: String = #","time":"2026-01-01T00:00:00Z""#
  ) -> String {
    let quotedIDs = ids.map { #""\#($0)""# }.joined(separator: ",")
    let quotedTexts = (texts ?? ids.map { "text \($0)" }).map { #""\#($0)""# }
      .joined(separator: ",")
    return #"{"op":"batch","room":\#(room),"count":\#(count)\#(time),"#
      + #""ids":[\#(quotedIDs)],"texts":[\#(quotedTexts)]}"# + "\n"
  }

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

  private func released(_ id: String) -> String { #"{"op":"released","id":"\#(id)"}"# + "\n" }

  func testAReleasedLineMarksItsPendingEntryReleasedUntilItsAck() {
    let log = replay(
      add("a", count: 1), add("b", count: 2), batch(["c", "d"], count: 3), released("b"),
      released("d"), released("gone"), ack("a"))
    XCTAssertEqual(log.pending.map(\.id), ["b", "c", "d"])
    XCTAssertEqual(log.pending.map(\.released), [true, false, true])
    XCTAssertEqual(log.corruptLines, 0, "a release of an entry no longer pending is no fault")
    let acked = replay(add("a", count: 1), released("a"), ack("a"))
    XCTAssertEqual(acked.pending, [])
  }

  func testATornReleasedLineLeavesItsEntryUnreleasedAndABadOneIsCounted() {
    let whole = add("a", count: 1)
    let torn = replay(whole, #"{"op":"released","id":"a"#)
    XCTAssertEqual(torn.pending.map(\.released), [false], "never fsynced: no PUBREL went out")
    XCTAssertEqual(torn.wholeLinesLength, whole.utf8.count)
    let bad = replay(whole, #"{"op":"released"}"# + "\n", released("a"))
    XCTAssertEqual(bad.corruptLines, 1)
    XCTAssertEqual(bad.pending.map(\.released), [true])
  }

  func testACompactionKeepsWhichEntriesAreReleased() {
    let log = replay(add("a", count: 1), batch(["b", "c"], count: 2), released("c"), released("a"))
    let image = OutboxLines.compactionImage(nextCount: log.nextCount, pending: log.pending[...])
    let again = OutboxLog(replaying: image)
    XCTAssertEqual(again.pending.map(\.id), ["a", "b", "c"])
    XCTAssertEqual(again.pending.map(\.released), [true, false, true])
    XCTAssertEqual(again.nextCount, 4)
    XCTAssertEqual(
      String(decoding: image, as: UTF8.self).split(separator: "\n").suffix(2),
      [#"{"op":"released","id":"a"}"#, #"{"op":"released","id":"c"}"#])
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

  func testABatchLineIsPendingAsItsEntriesWithConsecutiveCountsAndOneRoomAndTime() throws {
    let log = replay(
      add("a", count: 1),
      batch(
        ["b", "c", "d"], count: 2, room: #""ops""#,
        texts: [#"line\none \"quoted\""#, #"\u00e9t\u00e9 \ud83d\ude00"#, ""]),
      batch(["e", "f"], count: 5, room: "null", time: ""))
    XCTAssertEqual(log.pending.map(\.id), ["a", "b", "c", "d", "e", "f"])
    XCTAssertEqual(log.pending.map(\.count), [1, 2, 3, 4, 5, 6])
    XCTAssertEqual(
      log.pending.map(\.text), ["t", "line\none \"quoted\"", "été 😀", "", "text e", "text f"])
    XCTAssertEqual(
      log.pending.map(\.room), [RoomID("7"), RoomID("ops"), RoomID("ops"), RoomID("ops"), nil, nil])
    let time = try XCTUnwrap(Timestamp(rfc3339: "2026-01-01T00:00:00Z"))
    XCTAssertEqual(log.pending[1...3].map(\.created), [time, time, time])
    // A batch line without a time gets the present one, as an add line does.
    XCTAssertGreaterThan(log.pending[4].created, time)
    XCTAssertTrue(log.pending[1].isInBatch(of: log.pending[3]))
    XCTAssertFalse(log.pending[3].isInBatch(of: log.pending[4]))
    XCTAssertEqual(log.nextCount, 7)
    XCTAssertEqual(log.corruptLines, 0)
  }

  func testAcksByIDAndThroughACountRemoveSomeOfABatchAndTheRestStays() {
    let log = replay(
      batch(["a", "b", "c", "d", "e"], count: 1), ack("d"), #"{"op":"ack","through":2}"# + "\n")
    XCTAssertEqual(log.pending.map(\.id), ["c", "e"])
    XCTAssertEqual(log.pending.map(\.count), [3, 5])
    XCTAssertEqual(log.nextCount, 6)
  }

  func testAnIDOfABatchAddedAgainLaterStandsAtItsNewPlace() {
    let log = replay(batch(["a", "b"], count: 1), add("a", count: 3, text: "again"))
    XCTAssertEqual(log.pending.map(\.id), ["b", "a"])
    XCTAssertEqual(log.pending.map(\.text), ["text b", "again"])
  }

  func testBatchLinesThatDoNotReadAreCorruptAndChangeNothingElse() {
    let good = add("a", count: 1)
    let broken = [
      batch(["x", "y"], count: 2, texts: ["only one"]),  // lengths differ
      batch([], count: 2, texts: []),  // empty
      #"{"op":"batch","room":7,"count":2,"ids":["x",3],"texts":["p","q"]}"# + "\n",
      #"{"op":"batch","room":7,"count":2,"ids":"x","texts":["p"]}"# + "\n",
      #"{"op":"batch","room":7,"count":2,"ids":["x"],"texts":{"0":"p"}}"# + "\n",
      #"{"op":"batch","room":7,"ids":["x"],"texts":["p"]}"# + "\n",  // no count
      #"{"op":"batch","room":7,"count":2,"texts":["p"]}"# + "\n",  // no ids
      batch(["x", "y"], count: Int.max).replacingOccurrences(
        of: "\(Int.max)", with: "18446744073709551615"),  // the second count overflows
      #"{"op":"batch","room":7,"count":-1,"ids":["x"],"texts":["p"]}"# + "\n",
    ]
    for line in broken {
      let log = replay(good, line)
      XCTAssertEqual(log.corruptLines, 1, line)
      XCTAssertEqual(log.pending.map(\.id), ["a"], line)
      XCTAssertEqual(log.nextCount, 2, line)
    }
    // The last count that fits is read.
    let last = replay(
      batch(["x"], count: Int.max).replacingOccurrences(
        of: "\(Int.max)", with: "18446744073709551615"))
    XCTAssertEqual(last.pending.map(\.count), [UInt64.max])
  }

  func testATornBatchLineIsLeftOutWhole() {
    let whole = add("a", count: 1)
    let line = batch(["b", "c", "d"], count: 2)
    // Cut anywhere, even after the closing brace: without its newline the batch was never
    // acknowledged, and none of it is pending.
    for cut in 0..<line.utf8.count {
      let log = OutboxLog(replaying: Array(whole.utf8) + Array(line.utf8.prefix(cut)))
      XCTAssertEqual(log.pending.map(\.id), ["a"], "cut at \(cut)")
      XCTAssertEqual(log.wholeLinesLength, whole.utf8.count)
      XCTAssertEqual(log.nextCount, 2)
    }
  }

  /// The writer's lines (`OutboxLines`) and the reader agree: every way of confirming some of
  /// a batch by id, before and after a compaction rewrote the log, replays to the entries
  /// left, with their rooms, times, texts and counts.
  func testWhatTheWriterWritesReplaysToThePendingEntriesAfterAnyAcksAndACompaction() throws {
    var formatter = TimestampFormatter()
    let time = try XCTUnwrap(Timestamp(rfc3339: "2026-05-06T07:08:09.123456Z"))
    // Texts that need escapes, and texts that do not (a batch line written in one piece).
    let mixed: PackedStrings = ["plain", "needs \"escapes\"\n\u{1}", "été 😀", "", "last"]
    let plain: PackedStrings = ["one", "two 😀", "", "four", "five"]
    for (texts, size) in [mixed, plain].flatMap({ texts in (1...5).map { (texts, $0) } }) {
      let single = OutboxEntry.batch(
        room: RoomID("ops \"room\""), texts: ["alone"], ids: [.given("s-1")], firstCount: 1,
        created: time)
      let group = OutboxEntry.batch(
        room: nil, texts: PackedStrings(Array(texts.prefix(size))),
        ids: (0..<size).map { .generated(UInt64($0) &* 0x9E37_79B9_7F4A_7C15) }, firstCount: 2,
        created: time)
      let after = OutboxEntry.batch(
        room: RoomID("7"), texts: ["p", "q"], ids: [.given("p"), .given("q")],
        firstCount: UInt64(size) + 2, created: time)
      var log: [UInt8] = []
      for accepted in [single, group, after] {
        let pieces = OutboxLines.pieces(
          room: accepted[0].room, created: time, formatter: &formatter)
        OutboxLines.appendAccepted(accepted, pieces, to: &log)
      }
      let all = single + group + after
      for confirmed in 0..<(1 << size) {
        var acked = log
        var pending: [OutboxEntry] = [single[0]]
        for (i, entry) in group.enumerated() {
          if confirmed & (1 << i) != 0 {
            acked += Array(#"{"op":"ack","id":"\#(entry.id)"}"#.utf8) + [0x0A]
          } else {
            pending.append(entry)
          }
        }
        pending += after
        let replayed = OutboxLog(replaying: acked)
        XCTAssertEqual(replayed.pending, pending, "\(size) entries, confirmed \(confirmed)")
        XCTAssertEqual(replayed.nextCount, UInt64(all.count) + 1)
        XCTAssertEqual(replayed.corruptLines, 0)
        let image = OutboxLines.compactionImage(
          nextCount: replayed.nextCount, pending: ArraySlice(pending))
        let compacted = OutboxLog(replaying: image)
        XCTAssertEqual(compacted.pending, pending, "\(size) entries, confirmed \(confirmed)")
        XCTAssertEqual(compacted.pending.map(\.created), pending.map(\.created))
        XCTAssertEqual(compacted.nextCount, UInt64(all.count) + 1)
        XCTAssertEqual(compacted.corruptLines, 0)
      }
    }
  }
}
