import ChatLinkAPI
import ChatLinkCommands
import JSON
import TestSupport
import XCTest

final class MessageFormatTests: XCTestCase {
  func testHistoryShowsOneAlignedLinePerRecord() throws {
    let records = [Sample.incoming, Sample.text, Sample.binary, Sample.outgoing, Sample.otherJSON]
    XCTAssertEqual(
      Format.history(try records.map { try typed($0) }, colour: false).joined(separator: "\n"),
      """
        42 2026-12-02 12:00:00 #7   bob: hi
        43 2026-12-02 12:00:00 -    a frame that is not JSON
        44 2026-12-02 12:00:00 -    [binary, 4 bytes] AAEC/w==
      1045 2026-12-02 12:00:01 #7   → ops-bot: deploy finished
      1046 2026-12-02 12:00:02 #ops {"event":"user-joined","data":{"room_id":"ops","user":"carol"}}
      """)
  }

  func testSocketIOEventsShowTheirMessageOrTheirNameAndArguments() throws {
    func line(_ json: String) throws -> String {
      Format.message(try StoredRecord(json: try JSONValue.parse(json)), colour: false)
    }
    XCTAssertEqual(
      try line(
        #"{"seq":1,"time":"2026-12-02T12:00:00.000000Z","dir":"in","room":null,"type":"json","data":{"event":"message","args":[{"room_id":7,"message":"hi","sender":"bob"}]}}"#
      ), "12:00:00 #7 bob: hi")
    XCTAssertEqual(
      try line(
        #"{"seq":2,"time":"2026-12-02T12:00:00.000000Z","dir":"in","room":"ops","type":"json","data":{"event":"typing","args":["carol",true]}}"#
      ), #"12:00:00 #ops typing ["carol",true]"#)
  }

  func testHistoryOfNothingIsNoLines() {
    XCTAssertEqual(Format.history([], colour: false), [])
  }

  func testAMessageLineForFollowShowsTheTimeRoomSenderAndText() throws {
    XCTAssertEqual(Format.message(try typed(Sample.incoming), colour: false), "12:00:00 #7 bob: hi")
    XCTAssertEqual(
      Format.message(try typed(Sample.outgoing), colour: false),
      "12:00:01 #7 → ops-bot: deploy finished")
  }

  func testColourMarksTimeRoomAndSender() throws {
    XCTAssertEqual(
      Format.message(try typed(Sample.incoming), colour: true),
      "\u{1B}[2m12:00:00\u{1B}[0m \u{1B}[36m#7\u{1B}[0m \u{1B}[1mbob\u{1B}[0m: hi")
  }

  func testTheRoomComesFromTheEnvelopeWhenTheRecordHasNone() throws {
    let record = json(
      #"{"seq":1,"time":"2026-12-02T12:00:00Z","dir":"in","room":null,"type":"json","data":{"event":"message","data":{"room_id":"ops","message":"up","sender":"ci"}}}"#
    )
    XCTAssertEqual(Format.message(try typed(record), colour: false), "12:00:00 #ops ci: up")
  }

  func testAnEnvelopeWithoutASenderShowsTheTextAlone() throws {
    let record = json(
      #"{"seq":1,"time":"2026-12-02T12:00:00Z","dir":"in","room":7,"type":"json","data":{"event":"message","data":{"room_id":7,"message":42}}}"#
    )
    XCTAssertEqual(Format.message(try typed(record), colour: false), "12:00:00 #7 42")
  }

  func testControlCharactersInMessagesAreShownEscaped() throws {
    let record = json(
      #"{"seq":1,"time":"2026-12-02T12:00:00Z","dir":"in","room":7,"type":"json","data":{"event":"message","data":{"room_id":7,"message":"two\nlines \u001b[31mred\u202e","sender":"m\tallory"}}}"#
    )
    XCTAssertEqual(
      Format.message(try typed(record), colour: false),
      #"12:00:00 #7 m\tallory: two\nlines \u{1b}[31mred\u{202e}"#)
  }

  func testLocalTimeFollowsTheTimeZone() throws {
    let saved = getenv("TZ").map { String(cString: $0) }
    setenv("TZ", "UTC-2", 1)
    tzset()
    defer {
      if let saved { setenv("TZ", saved, 1) } else { unsetenv("TZ") }
      tzset()
    }
    XCTAssertEqual(
      Format.message(try typed(Sample.incoming), colour: false, time: .local), "14:00:00 #7 bob: hi"
    )
  }

  func testAnUnreadableTimeIsShownAsItIs() throws {
    let record = json(#"{"seq":1,"time":"noon","dir":"in","room":null,"type":"text","data":"x"}"#)
    XCTAssertEqual(Format.message(try typed(record), colour: false), "noon - x")
  }

  func testTheJSONOfARecordIsItsStoreLine() {
    XCTAssertEqual(
      Format.json(Sample.text),
      #"{"seq":43,"time":"2026-12-02T12:00:00.200000Z","dir":"in","room":null,"type":"text","data":"a frame that is not JSON"}"#
    )
  }
}
