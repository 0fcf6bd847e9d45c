import ChatLinkAPI
import JSON
import XCTest

final class DaemonEventTests: XCTestCase {
  private func event(_ text: String) throws -> DaemonEvent {
    try DaemonEvent(json: try JSONValue.parse(text))
  }

  func testEachKindWritesItsFieldsInTheDaemonsOrder() {
    let expected = [
      #"{"event":"connected","time":"2026-12-02T12:00:00.000000Z","subprotocol":"chat","extensions":"permessage-deflate"}"#,
      #"{"event":"disconnected","time":"2026-12-02T12:00:00.000000Z","reason":"going away","code":1001}"#,
      #"{"event":"message","time":"2026-12-02T12:00:00.000000Z","record":{"seq":45,"time":"2026-12-02T12:00:01.000000Z","dir":"out","room":7,"type":"json","id":"5f1c9a2e0b7d4e31","data":{"event":"send-message","data":{}}},"room":"7","name":"chat"}"#,
      #"{"event":"sent","time":"2026-12-02T12:00:00.000000Z","id":"a1","room":"7"}"#,
      #"{"event":"confirmed","time":"2026-12-02T12:00:00.000000Z","id":"a1","room":"ops"}"#,
      #"{"event":"failed","time":"2026-12-02T12:00:00.000000Z","id":"a2","room":"7","reason":"muted"}"#,
      #"{"event":"error","time":"2026-12-02T12:00:00.000000Z","text":"store writes are failing"}"#,
      #"{"event":"status","time":"2026-12-02T12:00:00.000000Z","text":"Connected to wss://chat.example/ws"}"#,
    ]
    XCTAssertEqual(Samples.events.map(\.json.description), expected)
  }

  func testUnsetFieldsAreLeftOutAndNullReadsAsUnset() throws {
    let connected = try event(#"{"event":"connected","time":"t","subprotocol":null}"#)
    XCTAssertEqual(connected, .connected(time: "t", subprotocol: nil, extensions: nil))
    XCTAssertEqual(connected.json.description, #"{"event":"connected","time":"t"}"#)
    XCTAssertEqual(
      try event(#"{"event":"sent","time":"t","id":"a1","room":null}"#),
      .sent(time: "t", id: "a1", room: nil))
  }

  func testAKindThisVersionDoesNotKnowKeepsItsFields() throws {
    let text = #"{"event":"rotated","time":"t","file":"messages.jsonl.1","size":5}"#
    let rotated = try event(text)
    XCTAssertEqual(rotated.name, "rotated")
    XCTAssertEqual(rotated.time, "t")
    XCTAssertEqual(rotated.json.description, text)
  }

  func testAnEventOfTheWrongShapeIsRefusedWithTheField() {
    let cases: [(String, String)] = [
      (#"{"time":"t"}"#, "event is required"),
      (#"{"event":"status"}"#, "time is required"),
      (#"{"event":"status","time":"t"}"#, "text is required"),
      (
        #"{"event":"disconnected","time":"t","reason":"x","code":"1006"}"#,
        "code must be an integer"
      ),
      (#"{"event":"sent","time":"t","id":7}"#, "id must be a string"),
      (#"{"event":"message","time":"t","record":{"seq":1}}"#, "record.time is required"),
      (#"{"event":"message","time":"t","record":"x"}"#, "record must be an object"),
    ]
    for (text, message) in cases {
      XCTAssertThrowsError(try event(text), text) { XCTAssertEqual("\($0)", message) }
    }
    XCTAssertThrowsError(try SubscribeReply(json: .object([("event", .int(1))]))) {
      XCTAssertEqual("\($0)", "event must be an object")
    }
  }
}
