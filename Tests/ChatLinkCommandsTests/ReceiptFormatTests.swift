import ChatLinkAPI
import ChatLinkCommands
import TestSupport
import XCTest

final class ReceiptFormatTests: XCTestCase {
  func testAReceiptShowsStateIdAndOutbox() throws {
    XCTAssertEqual(
      Format.receipt(try typed(Sample.receipt), colour: false), "queued 5f1c9a2e0b7d4e31 (count 12)"
    )
    XCTAssertEqual(
      Format.receipt(try typed(json(#"{"id":"a1","state":"confirmed","count":0}"#)), colour: false),
      "confirmed a1 (count 0)")
  }

  func testAColouredReceiptMarksTheState() throws {
    XCTAssertEqual(
      Format.receipt(try typed(json(#"{"id":"a1","state":"confirmed","count":0}"#)), colour: true),
      "\u{1B}[32mconfirmed\u{1B}[0m \u{1B}[1ma1\u{1B}[0m (count 0)")
  }

  func testTheJSONReceiptIsTheSendReply() {
    XCTAssertEqual(
      Format.json(Sample.receipt), #"{"id":"5f1c9a2e0b7d4e31","state":"queued","count":12}"#)
  }

  func testTheSendSummaryCountsMessagesAndShowsTheOutbox() throws {
    XCTAssertEqual(
      Format.sendSummary(count: 1000, last: try typed(Sample.receipt), colour: false),
      "queued 1000 messages; the last is 5f1c9a2e0b7d4e31 (count 12)")
    XCTAssertEqual(
      Format.sendSummary(count: 1, last: try typed(Sample.receipt), colour: false),
      "queued 1 message; the last is 5f1c9a2e0b7d4e31 (count 12)")
    XCTAssertEqual(
      Format.sendSummary(count: 0, last: nil, colour: false),
      "no messages: standard input had no lines")
  }

  func testPingShowsMillisecondsWithThreeDecimals() {
    XCTAssertEqual(
      Format.ping(milliseconds: 1.23456, colour: false), "round trip to the backend: 1.235 ms")
    XCTAssertEqual(Format.json(Format.pingObject(milliseconds: 0.5)), #"{"rtt_ms":0.5}"#)
  }

  func testRoomsAsJSONIsOneObject() {
    XCTAssertEqual(Format.json(Format.roomsObject(["7", "ops"])), #"{"rooms":["7","ops"]}"#)
    XCTAssertEqual(Format.json(Format.roomsObject([])), #"{"rooms":[]}"#)
  }

  func testFixedRoundsToTheGivenDigits() {
    XCTAssertEqual(Format.fixed(2.5, 1), "2.5")
    XCTAssertEqual(Format.fixed(0.04, 1), "0.0")
    XCTAssertEqual(Format.fixed(-1.25, 1), "-1.3")
    XCTAssertEqual(Format.fixed(3, 0), "3")
    XCTAssertEqual(Format.fixed(0.001, 3), "0.001")
  }
}
