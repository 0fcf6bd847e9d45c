import ChatLinkAPI
import JSON
import XCTest

/// What the daemon accepts as parameters, and the reason it gives when it does not.
final class ParameterTests: XCTestCase {
  private func refusal<Value: JSONRepresentable>(
    _ type: Value.Type, _ text: String, file: StaticString = #filePath, line: UInt = #line
  ) -> APIDecodingError? {
    do {
      _ = try Value(json: try JSONValue.parse(text))
      XCTFail("\(text) was accepted", file: file, line: line)
    } catch let error as APIDecodingError {
      return error
    } catch {
      XCTFail("\(text): \(error)", file: file, line: line)
    }
    return nil
  }

  func testSendNeedsATextAndTakesARoomNumberAsARoomName() throws {
    let parameters = try SendParameters(json: try JSONValue.parse(#"{"room":7,"text":"hi"}"#))
    XCTAssertEqual(parameters, SendParameters(room: "7", text: "hi"))
    XCTAssertEqual(
      refusal(SendParameters.self, "{}"), APIDecodingError(field: "text", reason: "is required"))
    XCTAssertEqual(
      refusal(SendParameters.self, #"{"text":""}"#),
      APIDecodingError(field: "text", reason: "is empty"))
    XCTAssertEqual(
      refusal(SendParameters.self, #"{"text":"x","room":1.5}"#),
      APIDecodingError(field: "room", reason: "must be a string"))
    XCTAssertEqual(
      SendParameters(room: "7", text: "hi", id: "a1").json.description,
      #"{"room":"7","text":"hi","id":"a1"}"#)
    XCTAssertEqual(SendParameters(text: "hi").json.description, #"{"text":"hi"}"#)
  }

  func testSendBatchIsAllOrNone() {
    XCTAssertEqual(
      refusal(SendBatchParameters.self, #"{"texts":["a","b",3]}"#),
      APIDecodingError(field: "texts", reason: "message 2 is not a string"))
    let tooMany = "[" + Array(repeating: "\"x\"", count: 10_001).joined(separator: ",") + "]"
    XCTAssertEqual(
      refusal(SendBatchParameters.self, #"{"texts":"# + tooMany + "}"),
      APIDecodingError(field: "texts", reason: "must hold from 1 to 10000 messages"))
  }

  /// `init(validJSON:)` (how the daemon reads a SendBatch) against `init(json:)`: the same
  /// value, or the same error.
  private func bothReadings(_ text: String) -> (
    Result<SendBatchParameters, APIDecodingError>,
    Result<SendBatchParameters, APIDecodingError>
  ) {
    let tree = Result { () throws(APIDecodingError) in
      try SendBatchParameters(json: (try? JSONValue.parse(text)) ?? .null)
    }
    let direct = Array(text.utf8).withUnsafeBytes { bytes in
      Result { () throws(APIDecodingError) in try SendBatchParameters(validJSON: bytes) }
    }
    return (tree, direct)
  }

  func testSendBatchReadFromItsTextAgreesWithTheTreeOnEveryCase() throws {
    let tooMany = "[" + Array(repeating: "\"x\"", count: 10_001).joined(separator: ",") + "]"
    let cases = [
      #"{"texts":["a","b"]}"#, #"{"room":"ops","texts":["say \"hi\"","\u00e9\n"]}"#,
      #"{"texts":["a"],"room":7}"#, #"{"texts":["a"],"room":null}"#,
      #"{"texts":["a"],"room":true}"#,
      #"{"texts":["a"],"room":1.5}"#, #"{"texts":[]}"#, #"{"texts":["a",""]}"#,
      #"{"texts":["",3]}"#, #"{"texts":["a",3,""]}"#, #"{"texts":"a"}"#, #"{"texts":null}"#,
      #"{}"#, #"{"room":"7"}"#, #"{"texts":["old"],"texts":["new","er"]}"#,
      #"{"texts":["a"],"other":{"nested":[1,2]}}"#, #"{ "texts" : [ "a" , "b" ] }"#,
      #"{"texts":"# + tooMany + "}", #"{"texts":[3],"room":5}"#,
      #"{"texts":["a"],"wait_for_room":true}"#, #"{"texts":["a"],"wait_for_room":false}"#,
      #"{"texts":["a"],"wait_for_room":null}"#, #"{"texts":["a"],"wait_for_room":"yes"}"#,
      #"{"texts":["a"],"wait_for_room":1}"#, #"{"wait_for_room":true,"texts":[3]}"#,
    ]
    for text in cases {
      let (tree, direct) = bothReadings(text)
      XCTAssertEqual(tree, direct, text)
    }
    let (_, read) = bothReadings(#"{"room":7,"texts":["a","b\"c"]}"#)
    XCTAssertEqual(try read.get(), SendBatchParameters(room: "7", texts: ["a", "b\"c"]))
    let (_, waiting) = bothReadings(#"{"wait_for_room":true,"texts":["a"]}"#)
    XCTAssertEqual(try waiting.get(), SendBatchParameters(texts: ["a"], waitForRoom: true))
    XCTAssertEqual(
      bothReadings(#"{"texts":["a"],"wait_for_room":1}"#).1,
      .failure(APIDecodingError(field: "wait_for_room", reason: "must be true or false")))
  }

  func testASendBatchReceiptReadFromItsTextAgreesWithTheTree() throws {
    let cases = [
      #"{"ids":["a","b\"c"],"count":7,"state":"queued"}"#, #"{"ids":[],"count":1,"state":"x"}"#,
      #"{"ids":["a"],"count":"7","state":"queued"}"#, #"{"ids":["a",1],"count":7,"state":"q"}"#,
      #"{"count":7,"state":"queued"}"#, #"{"ids":["a"],"state":"queued"}"#,
      #"{"ids":["a"],"count":7}"#, #"{"ids":["a"],"count":7,"state":null}"#,
      #"{"ids":["a"],"count":7.0,"state":"queued","more":[1]}"#,
    ]
    for text in cases {
      let tree = Result { () throws(APIDecodingError) in
        try SendBatchReceipt(json: (try? JSONValue.parse(text)) ?? .null)
      }
      let direct = Array(text.utf8).withUnsafeBytes { bytes in
        Result { () throws(APIDecodingError) in try SendBatchReceipt(validJSON: bytes) }
      }
      XCTAssertEqual(tree, direct, text)
    }
    let read = try Array(#"{"ids":["a","b"],"count":7,"state":"queued"}"#.utf8).withUnsafeBytes {
      try SendBatchReceipt(validJSON: $0)
    }
    XCTAssertEqual(read.receipts.map(\.id), ["a", "b"])
    XCTAssertEqual(read.receipts.map(\.count), [7, 8])
  }

  func testHistoryChecksItsBounds() throws {
    XCTAssertEqual(try HistoryParameters(json: .object([])), HistoryParameters())
    XCTAssertEqual(
      try HistoryParameters(
        json: try JSONValue.parse(#"{"since_seq":0,"limit":10000,"room":"ops"}"#)),
      HistoryParameters(room: "ops", sinceSeq: 0, limit: 10_000))
    XCTAssertEqual(
      refusal(HistoryParameters.self, #"{"limit":10001}"#),
      APIDecodingError(field: "limit", reason: "must be from 1 to 10000"))
    XCTAssertEqual(
      refusal(HistoryParameters.self, #"{"since_seq":"1"}"#),
      APIDecodingError(field: "since_seq", reason: "must be a non-negative integer"))
    XCTAssertEqual(
      HistoryParameters(room: "7", sinceSeq: 41, limit: 2).json.description,
      #"{"room":"7","since_seq":41,"limit":2}"#)
  }

  func testTheBatchReceiptSaysEveryMessagesReceipt() {
    let batch = SendBatchReceipt(ids: ["a", "b"], count: 7)
    XCTAssertEqual(
      batch.receipts,
      [
        SendReceipt(id: "a", state: .queued, count: 7),
        SendReceipt(id: "b", state: .queued, count: 8),
      ])
    XCTAssertEqual(batch.json.description, #"{"ids":["a","b"],"count":7,"state":"queued"}"#)
  }

  func testMethodsWithoutParametersAcceptAnyObjectButNothingElse() throws {
    XCTAssertEqual(try EmptyObject(json: try JSONValue.parse(#"{"padding":"x"}"#)), EmptyObject())
    XCTAssertEqual(
      refusal(EmptyObject.self, "[]"), APIDecodingError(field: "", reason: "must be an object"))
  }
}
