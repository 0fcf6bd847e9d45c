import JSON
import Varlink
import XCTest

final class VarlinkCodecTests: XCTestCase {
  private func frames(_ bytes: [UInt8], limit: Int = 64) throws -> [[UInt8]] {
    var framer = VarlinkFramer(limit: limit)
    return try bytes.withUnsafeBytes { try framer.append($0) }
  }

  func testCallsEncodeWithNULAndDecodeBack() throws {
    let call = VarlinkCall(
      method: "io.chatlink.Daemon.Send",
      parameters: .object(["text": .string("hi"), "room": .string("7")]), more: true)
    let bytes = call.encoded
    XCTAssertEqual(bytes.last, 0)
    XCTAssertEqual(try VarlinkCall.decode(Array(bytes.dropLast())), call)
    XCTAssertEqual(call.interface, "io.chatlink.Daemon")
  }

  /// The tag is a server's bookkeeping: never encoded, and two tags of one call are equal.
  func testTheTagIsNeitherEncodedNorPartOfEquality() throws {
    var call = VarlinkCall(method: "a.b.C", parameters: .object([("x", .int(1))]), more: true)
    let plain = call
    call.tag = 42
    XCTAssertEqual(call.encoded, plain.encoded)
    XCTAssertEqual(call, plain)
    XCTAssertEqual(call.hashValue, plain.hashValue)
    XCTAssertEqual(try VarlinkCall.decode(Array(call.encoded.dropLast())).tag, 0)
  }

  func testFramerFindsTheSameMessagesWhereverTheStreamIsSplit() throws {
    let messages = ["", "a", String(repeating: "long message ", count: 9), "é 😀", "x"]
    let stream: [UInt8] = messages.flatMap { message -> [UInt8] in Array(message.utf8) + [0] }
    for split in 0...stream.count {
      var framer = VarlinkFramer(limit: 1000)
      var found: [[UInt8]] = []
      try found += stream[..<split].withUnsafeBytes { try framer.append($0) }
      try found += [UInt8]().withUnsafeBytes { try framer.append($0) }
      try found += stream[split...].withUnsafeBytes { try framer.append($0) }
      XCTAssertEqual(found, messages.map { Array($0.utf8) }, "split at \(split)")
      XCTAssertEqual(framer.pendingCount, 0)
    }
  }

  func testFramerSplitsAtNULAcrossChunksAndRefusesOversizedMessages() throws {
    var framer = VarlinkFramer(limit: 10)
    let first = try Array("abc\0de".utf8).withUnsafeBytes { try framer.append($0) }
    XCTAssertEqual(first, [Array("abc".utf8)])
    XCTAssertEqual(framer.pendingCount, 2)
    let second = try Array("f\0\0".utf8).withUnsafeBytes { try framer.append($0) }
    XCTAssertEqual(second, [Array("def".utf8), []])
    XCTAssertThrowsError(try frames(Array(repeating: 0x41, count: 11), limit: 10)) {
      XCTAssertEqual($0 as? VarlinkError, .messageTooLarge(limit: 10))
    }
    // A message without its NUL still counts against the limit.
    XCTAssertThrowsError(try frames(Array(repeating: 0x41, count: 100), limit: 64))
  }

  func testMalformedCallsAreRefusedWithClearErrors() {
    let cases: [(String, String)] = [
      ("not json", "not valid JSON"), ("[1]", "not a JSON object"),
      (#"{"parameters":{}}"#, "no \"method\""),
      (#"{"method":"a.b","parameters":[1]}"#, "must be an object"),
      (#"{"method":"a.b","more":"yes"}"#, "boolean"),
      (#"{"method":"a.b","upgrade":true}"#, "not supported"),
    ]
    for (text, expected) in cases {
      XCTAssertThrowsError(try VarlinkCall.decode(Array(text.utf8)), text) { error in
        XCTAssertTrue("\(error)".contains(expected), "\(text): \(error)")
      }
    }
    XCTAssertThrowsError(try VarlinkCall.decode([0x7B, 0xFF, 0x7D]))
  }

  func testADecodedCallKeepsItsParametersTextAndReadsTheSameTreeFromIt() throws {
    let text = #"{"more":true,"parameters":{"texts":["a","b\"c"],"room":7},"method":"a.b.C"}"#
    let call = try VarlinkCall.decode(Array(text.utf8))
    XCTAssertEqual(call.method, "a.b.C")
    XCTAssertTrue(call.more)
    XCTAssertFalse(call.oneway)
    XCTAssertEqual(
      call.parametersText.map { Array($0) }, Array(#"{"texts":["a","b\"c"],"room":7}"#.utf8))
    XCTAssertEqual(
      call.parameters,
      .object([("texts", .array([.string("a"), .string("b\"c")])), ("room", .int(7))]))
    // Setting the parameters replaces the text: what is read is what was set.
    var changed = call
    changed.parameters = .object([("x", .int(1))])
    XCTAssertNil(changed.parametersText)
    XCTAssertEqual(changed.parameters, .object([("x", .int(1))]))
    // No parameters: an empty object, and no text.
    let bare = try VarlinkCall.decode(Array(#"{"method":"a.b.C"}"#.utf8))
    XCTAssertNil(bare.parametersText)
    XCTAssertEqual(bare.parameters, .object([]))
  }

  func testACallsMembersAreReadAsJSONValueReadsThem() throws {
    // The last of duplicate members wins, escapes in the method are decoded, and blanks
    // anywhere are allowed.
    let call = try VarlinkCall.decode(
      Array(
        #" { "method" : "a.b.Old" , "parameters":{"x":1}, "method":"a.b.\u004eew", "parameters" : {"y":2} , "oneway":false } "#
          .utf8))
    XCTAssertEqual(call.method, "a.b.New")
    XCTAssertEqual(call.parameters, .object([("y", .int(2))]))
    XCTAssertFalse(call.oneway)
    let refused: [(String, String)] = [
      (#"{"method":""}"#, "no \"method\""), (#"{"method":7}"#, "no \"method\""),
      (#"{"method":"a.b","parameters":null}"#, "must be an object"),
      (#"{"method":"a.b","oneway":null}"#, "boolean"),
      (#"{"method":"a.b","more":1}"#, "boolean"),
      (#"{"method":"a.b","upgrade":false,"more":true}"#, ""),
    ]
    for (text, expected) in refused.dropLast() {
      XCTAssertThrowsError(try VarlinkCall.decode(Array(text.utf8)), text) { error in
        XCTAssertTrue("\(error)".contains(expected), "\(text): \(error)")
      }
    }
    XCTAssertTrue(try VarlinkCall.decode(Array(refused[refused.count - 1].0.utf8)).more)
  }

  func testRepliesCarryErrorsAndContinues() throws {
    let reply = VarlinkReply(.methodNotFound("x.y.Z"))
    let decoded = try VarlinkReply.decode(Array(reply.encoded.dropLast()))
    XCTAssertEqual(decoded.error, "org.varlink.service.MethodNotFound")
    XCTAssertEqual(
      VarlinkError(name: decoded.error!, parameters: decoded.parameters), .methodNotFound("x.y.Z"))
    let streaming = VarlinkReply(parameters: .object(["n": .int(1)]), continues: true)
    XCTAssertEqual(
      String(decoding: streaming.encoded.dropLast(), as: UTF8.self),
      #"{"parameters":{"n":1},"continues":true}"#)
  }

  func testADecodedReplyKeepsItsParametersTextAndReadsMembersOfTheWrongTypeAsAbsent() throws {
    let text = #"{"parameters":{"ids":["a","b"],"count":3},"continues":true}"#
    let reply = try VarlinkReply.decode(Array(text.utf8))
    XCTAssertEqual(
      reply.parametersText.map { Array($0) }, Array(#"{"ids":["a","b"],"count":3}"#.utf8))
    XCTAssertEqual(
      reply,
      VarlinkReply(
        parameters: try JSONValue.parse(#"{"ids":["a","b"],"count":3}"#),
        continues: true))
    XCTAssertEqual(
      reply.hashValue, VarlinkReply(parameters: reply.parameters, continues: true).hashValue)
    let odd = try VarlinkReply.decode(
      Array(#"{"continues":"yes","error":5,"parameters":null,"error":"a.b.C"}"#.utf8))
    XCTAssertFalse(odd.continues)
    XCTAssertEqual(odd.error, "a.b.C")
    XCTAssertEqual(odd.parameters, .null)
    let wrong = try VarlinkReply.decode(Array(#"{"error":5}"#.utf8))
    XCTAssertNil(wrong.error)
    XCTAssertNil(wrong.parametersText)
    XCTAssertEqual(wrong.parameters, .object([]))
    for text in ["[]", "5", "{", #"{"parameters":}"#] {
      XCTAssertThrowsError(try VarlinkReply.decode(Array(text.utf8)), text)
    }
  }

  func testErrorNamesRoundTrip() {
    let errors: [VarlinkError] = [
      .interfaceNotFound("a"), .methodNotFound("a.b"), .methodNotImplemented("a.b"),
      .invalidParameter(name: "room", reason: "bad"), .permissionDenied,
      .named("io.chatlink.Daemon.OutboxFull", .object(["limit": .int(5)])),
    ]
    for error in errors {
      XCTAssertEqual(VarlinkError(name: error.name, parameters: error.parameters), error)
      XCTAssertFalse(error.description.isEmpty)
    }
  }
}
