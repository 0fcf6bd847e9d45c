import ChatLinkAPI
import JSON
import XCTest

final class StoredRecordTests: XCTestCase {
  /// The lines README's "Message store" shows, as messages.jsonl holds them.
  private let lines = [
    #"{"seq":42,"time":"2026-12-02T12:00:00.123456Z","dir":"in","room":7,"type":"json","data":{"event":"message","data":{"room_id":7,"message":"hi","sender":"bob"}}}"#,
    #"{"seq":43,"time":"2026-12-02T12:00:00.200000Z","dir":"in","room":null,"type":"text","data":"a frame that is not JSON"}"#,
    #"{"seq":44,"time":"2026-12-02T12:00:00.300000Z","dir":"in","room":null,"type":"binary","data":"AAEC/w=="}"#,
    #"{"seq":45,"time":"2026-12-02T12:00:01.000000Z","dir":"out","room":7,"type":"json","id":"5f1c9a2e0b7d4e31","data":{"event":"send-message","data":{"room_id":7,"message":"deploy finished","sender":"ops-bot","count":12,"client_id":"5f1c9a2e0b7d4e31"}}}"#,
  ]

  func testEveryStoreLineReadsAndWritesBackByteForByte() throws {
    for line in lines {
      let record = try StoredRecord(json: try JSONValue.parse(line))
      XCTAssertEqual(record.json.description, line)
    }
  }

  func testTheFieldsAreTyped() throws {
    let outgoing = try StoredRecord(json: try JSONValue.parse(lines[3]))
    XCTAssertEqual(outgoing.seq, 45)
    XCTAssertEqual(outgoing.direction, .outbound)
    XCTAssertEqual(outgoing.room, .int(7))
    XCTAssertEqual(outgoing.type, .json)
    XCTAssertEqual(outgoing.id, "5f1c9a2e0b7d4e31")
    XCTAssertEqual(outgoing.data["data"]?["message"], .string("deploy finished"))
    let text = try StoredRecord(json: try JSONValue.parse(lines[1]))
    XCTAssertNil(text.room)
    XCTAssertNil(text.id)
    XCTAssertEqual(text.data, .string("a frame that is not JSON"))
  }

  func testARoomNamedByAStringAndDataThatIsNullAreKept() throws {
    let line =
      #"{"seq":1,"time":"2026-12-02T12:00:00.000000Z","dir":"in","room":"ops","type":"json","data":null}"#
    let record = try StoredRecord(json: try JSONValue.parse(line))
    XCTAssertEqual(record.room, .string("ops"))
    XCTAssertEqual(record.data, .null)
    XCTAssertEqual(record.json.description, line)
  }

  func testARecordOfTheWrongShapeIsRefusedWithTheField() throws {
    let cases: [(String, String)] = [
      (
        #"{"seq":"1","time":"t","dir":"in","room":null,"type":"text","data":"x"}"#,
        "seq must be an integer"
      ),
      (#"{"seq":1,"dir":"in","room":null,"type":"text","data":"x"}"#, "time is required"),
      (
        #"{"seq":1,"time":"t","dir":"in","room":[7],"type":"text","data":"x"}"#,
        "room must be a number, a string or null"
      ),
      (#"{"seq":1,"time":"t","dir":"in","room":null,"type":"text"}"#, "data is required"),
      (
        #"{"seq":1,"time":"t","dir":"in","room":null,"type":"text","id":5,"data":"x"}"#,
        "id must be a string"
      ),
    ]
    for (text, message) in cases {
      XCTAssertThrowsError(try StoredRecord(json: try JSONValue.parse(text)), text) {
        XCTAssertEqual("\($0)", message)
      }
    }
    XCTAssertThrowsError(
      try HistoryReply(json: try JSONValue.parse(#"{"records":[{"seq":true}]}"#))
    ) { XCTAssertEqual("\($0)", "records[0].seq must be an integer") }
  }
}
