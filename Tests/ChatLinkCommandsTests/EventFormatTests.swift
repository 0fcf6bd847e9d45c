import ChatLinkAPI
import ChatLinkCommands
import JSON
import TestSupport
import XCTest

final class EventFormatTests: XCTestCase {
  private func line(_ text: String) throws -> String {
    Format.event(try typed(json(text)), colour: false)
  }

  func testAMessageEventIsItsRecordsLine() throws {
    let event = JSONValue.object([
      "event": .string("message"), "time": .string("2026-12-02T12:00:09Z"),
      "record": Sample.incoming,
    ])
    XCTAssertEqual(Format.event(try typed(event), colour: false), "12:00:00 #7 bob: hi")
  }

  func testConnectedShowsWhatTheServerAgreedTo() throws {
    XCTAssertEqual(
      try line(
        #"{"event":"connected","time":"2026-12-02T12:00:04Z","subprotocol":"chat","extensions":"permessage-deflate"}"#
      ), "12:00:04 connected (subprotocol chat, extensions permessage-deflate)")
    XCTAssertEqual(
      try line(#"{"event":"connected","time":"2026-12-02T12:00:04Z","subprotocol":null}"#),
      "12:00:04 connected")
  }

  func testDisconnectedShowsTheCloseCodeAndReason() throws {
    XCTAssertEqual(
      try line(
        #"{"event":"disconnected","time":"2026-12-02T12:00:09Z","code":1006,"reason":"connection reset by peer"}"#
      ), "12:00:09 disconnected (1006): connection reset by peer")
    XCTAssertEqual(
      try line(#"{"event":"disconnected","time":"2026-12-02T12:00:09Z","reason":"timed out"}"#),
      "12:00:09 disconnected: timed out")
  }

  func testErrorAndStatusEventsShowTheirText() throws {
    XCTAssertEqual(
      try line(
        #"{"event":"error","time":"2026-12-02T12:00:09Z","text":"the backend refused the credentials (HTTP 401)"}"#
      ), "12:00:09 error: the backend refused the credentials (HTTP 401)")
    XCTAssertEqual(
      try line(
        #"{"event":"status","time":"2026-12-02T12:00:10Z","text":"Reconnecting to ws://127.0.0.1:8765/ in 1.2 s"}"#
      ), "12:00:10 status: Reconnecting to ws://127.0.0.1:8765/ in 1.2 s")
  }

  func testSentAndConfirmedShowTheIdAndRoom() throws {
    XCTAssertEqual(
      try line(#"{"event":"sent","time":"2026-12-02T12:00:11Z","id":"5f1c","room":"7"}"#),
      "12:00:11 sent 5f1c #7")
    XCTAssertEqual(
      try line(#"{"event":"confirmed","time":"2026-12-02T12:00:12Z","id":"5f1c","room":null}"#),
      "12:00:12 confirmed 5f1c")
  }

  func testAnUnknownEventIsShownWithItsFields() throws {
    XCTAssertEqual(
      try line(#"{"event":"rotated","time":"2026-12-02T12:00:13Z","file":"messages.jsonl.1"}"#),
      #"12:00:13 rotated {"file":"messages.jsonl.1"}"#)
  }

  func testColourMarksConnectionEvents() throws {
    XCTAssertEqual(
      Format.event(
        try typed(json(#"{"event":"error","time":"2026-12-02T12:00:09Z","text":"boom"}"#)),
        colour: true),
      "\u{1B}[2m12:00:09\u{1B}[0m \u{1B}[31;1merror\u{1B}[0m: \u{1B}[31mboom\u{1B}[0m")
    XCTAssertTrue(
      Format.event(
        try typed(json(#"{"event":"connected","time":"2026-12-02T12:00:04Z"}"#)), colour: true
      )
      .hasSuffix("\u{1B}[32;1mconnected\u{1B}[0m"))
  }

  func testTheJSONOfAnEventIsTheEventObject() {
    let text =
      #"{"event":"disconnected","time":"2026-12-02T12:00:09Z","code":1001,"reason":"going away"}"#
    XCTAssertEqual(Format.json(json(text)), text)
  }
}
