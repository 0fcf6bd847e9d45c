import LinkCore
import XCTest

/// STOMP frames as the 1.2 specification lays them out: escapes, bodies with and without
/// content-length, heart-beats between frames, split at every byte, and malformed input.
final class STOMPCodecTests: XCTestCase {
  private func decode(_ bytes: [UInt8], limit: Int = 1 << 20) throws -> [STOMPDecoder.Item] {
    var decoder = STOMPDecoder(maximumFrameSize: limit)
    decoder.append(bytes)
    var items: [STOMPDecoder.Item] = []
    while let item = try decoder.next() { items.append(item) }
    XCTAssertEqual(decoder.pendingCount, 0)
    return items
  }

  private func bytes(_ text: String) -> [UInt8] { Array(text.utf8) }

  func testAConnectIsWrittenWithoutEscapesAndOtherFramesWithThem() {
    let connect = STOMPFrame(
      .connect,
      [STOMPHeader("accept-version", "1.2,1.1"), STOMPHeader("passcode", "a:b\\c\nd")])
    XCTAssertEqual(
      STOMPEncoder.encode(connect),
      bytes("CONNECT\naccept-version:1.2,1.1\npasscode:a:b\\cd\n\n\0"),
      "CONNECT keeps colons and backslashes, and can carry no line break")
    let send = STOMPFrame(
      .send, [STOMPHeader("destination", "/queue/a:b"), STOMPHeader("x\\y", "1\r\n2")],
      body: bytes("hi"))
    XCTAssertEqual(
      STOMPEncoder.encode(send), bytes("SEND\ndestination:/queue/a\\cb\nx\\\\y:1\\r\\n2\n\nhi\0"))
    XCTAssertEqual(STOMPEncoder.heartbeat, [0x0A])
  }

  func testEveryFrameRoundTripsAndEscapesComeBack() throws {
    let frames = [
      STOMPFrame(
        .connected,
        [STOMPHeader("version", "1.2"), STOMPHeader("heart-beat", "0,0"), STOMPHeader("a", "b:c")]),
      STOMPFrame(
        .message,
        [
          STOMPHeader("destination", "/topic/chat.7"), STOMPHeader("message-id", "T_1@@s@@1"),
          STOMPHeader("subscription", "sub-1"), STOMPHeader("ack", "x:1"),
          STOMPHeader("weird\\name:", "line\nbreak\rcr\\back"),
          STOMPHeader("content-length", "5"),
        ], body: [0, 1, 0xFF, 0x0A, 0]),
      STOMPFrame(.message, [STOMPHeader("destination", "/queue/ops")], body: bytes("{\"a\":1}")),
      STOMPFrame(.receipt, [STOMPHeader("receipt-id", "send-7")]),
      STOMPFrame(
        .error, [STOMPHeader("message", "Bad CONNECT"), STOMPHeader("content-type", "text/plain")],
        body: bytes("Access refused\n")),
      STOMPFrame(.disconnect), STOMPFrame(.ack, [STOMPHeader("id", "é")]),
    ]
    for frame in frames {
      XCTAssertEqual(try decode(STOMPEncoder.encode(frame)), [.frame(frame)], "\(frame.command)")
    }
  }

  func testFramesAndHeartBeatsSplitAtEveryByteComeOutWhole() throws {
    // CRLF lines, heart-beats before, between and after frames, a body with content-length
    // holding a NUL, and one read up to its NUL.
    let stream = bytes(
      "\n\r\nMESSAGE\r\ndestination:/queue/a\r\ncontent-length:3\r\n\r\na\0b\0\n"
        + "RECEIPT\nreceipt-id:send-1\n\n\0\r\n\n"
        + "MESSAGE\ndestination:/topic/t\nsubscription:sub-1\n\n\(String(repeating: "x", count: 40))\0"
    )
    let expected: [STOMPDecoder.Item] = [
      .heartbeat, .heartbeat,
      .frame(
        STOMPFrame(
          .message,
          [STOMPHeader("destination", "/queue/a"), STOMPHeader("content-length", "3")],
          body: [0x61, 0, 0x62])),
      .heartbeat,
      .frame(STOMPFrame(.receipt, [STOMPHeader("receipt-id", "send-1")])),
      .heartbeat, .heartbeat,
      .frame(
        STOMPFrame(
          .message,
          [STOMPHeader("destination", "/topic/t"), STOMPHeader("subscription", "sub-1")],
          body: Array(repeating: 0x78, count: 40))),
    ]
    XCTAssertEqual(try decode(stream), expected)
    for split in 0...stream.count {
      var decoder = STOMPDecoder(maximumFrameSize: 1 << 20)
      var out: [STOMPDecoder.Item] = []
      decoder.append(Array(stream[..<split]))
      while let item = try decoder.next() { out.append(item) }
      decoder.append(Array(stream[split...]))
      while let item = try decoder.next() { out.append(item) }
      XCTAssertEqual(out, expected, "split at \(split)")
    }
    var decoder = STOMPDecoder(maximumFrameSize: 1 << 20)
    var out: [STOMPDecoder.Item] = []
    for byte in stream {
      decoder.append([byte])
      while let item = try decoder.next() { out.append(item) }
    }
    XCTAssertEqual(out, expected, "a byte at a time")
  }

  /// A long stream fed in pieces that end mid-frame: the consumed front is dropped now and
  /// then (past 64 KiB) while a partial frame waits, and nothing is lost or altered.
  func testALongStreamInPiecesKeepsThePartialFrameAcrossCompactions() throws {
    var stream: [UInt8] = []
    var expected: [STOMPDecoder.Item] = []
    for i in 0..<600 {
      let body = Array(
        String(repeating: Character(UnicodeScalar(UInt8(97 + i % 26))), count: 200 + i % 90).utf8)
      stream += bytes("MESSAGE\ndestination:/queue/q\(i % 7)\n\n") + body + [0, 0x0A]
      expected += [
        .frame(STOMPFrame(.message, [STOMPHeader("destination", "/queue/q\(i % 7)")], body: body)),
        .heartbeat,
      ]
    }
    XCTAssertGreaterThan(stream.count, 2 * 65536)
    var decoder = STOMPDecoder(maximumFrameSize: 1 << 20)
    var out: [STOMPDecoder.Item] = []
    var at = 0
    while at < stream.count {
      let end = min(stream.count, at + 1009)
      decoder.append(Array(stream[at..<end]))
      while let item = try decoder.next() { out.append(item) }
      at = end
    }
    XCTAssertEqual(out, expected)
    XCTAssertEqual(decoder.pendingCount, 0)
  }

  func testTheFirstOfRepeatedHeadersCountsAndTheContentLengthToo() throws {
    let items = try decode(bytes("MESSAGE\ncontent-length:2\ncontent-length:9\na:1\na:2\n\nhi\0"))
    guard case .frame(let frame)? = items.first else { return XCTFail("no frame") }
    XCTAssertEqual(frame.body, bytes("hi"))
    XCTAssertEqual(frame["a"], "1")
    XCTAssertEqual(frame.headers.count, 4, "all are kept, in order")
    XCTAssertNil(frame["nope"])
  }

  func testCONNECTEDHeadersAreNotUnescaped() throws {
    let items = try decode(bytes("CONNECTED\nserver:a\\cb\n\n\0"))
    XCTAssertEqual(items, [.frame(STOMPFrame(.connected, [STOMPHeader("server", "a\\cb")]))])
  }

  func testMalformedFramesAreRefusedWithTheReason() {
    let cases: [(String, String)] = [
      ("HELLO\n\n\0", "an unknown command 'HELLO'"),
      ("send\n\n\0", "an unknown command 'send'"),
      ("SEND\nno colon\n\n\0", "a header line without a colon"),
      ("SEND\n:v\n\n\0", "a header without a name"),
      ("SEND\na:\\t\n\n\0", "an undefined escape \\t"),
      ("SEND\na:x\\\n\n\0", "a lone backslash"),
      ("SEND\na:b\rc\n\n\0", "a CR inside a line"),
      ("\rX", "a CR that does not end a line"),
      ("SEND\ncontent-length:x\n\n\0", "a content-length that is not a number: 'x'"),
      ("SEND\ncontent-length:-1\n\n\0", "not a number"),
      ("SEND\ncontent-length:1\n\nab\0", "no NUL after the 1 bytes"),
      ("SEND\na:b\0\n\n", "a NUL before the blank line"),
      ("MESSAGE\0", "a NUL before the blank line"),
    ]
    for (input, reason) in cases {
      XCTAssertThrowsError(try decode(bytes(input)), reason) { error in
        XCTAssertTrue("\(error)".contains(reason), "\(error) for \(reason)")
      }
    }
    XCTAssertThrowsError(
      try decode([0x53, 0x45, 0x4E, 0x44, 0x0A, 0x61, 0x3A, 0xC3, 0x28, 0x0A, 0x0A, 0])
    ) { error in
      XCTAssertTrue("\(error)".contains("not UTF-8"), "\(error)")
    }
  }

  func testFramesOverTheLimitAreRefusedBeforeTheyArriveWhole() {
    let limit = 64
    let cases: [(String, String)] = [
      ("SEND\ncontent-length:100\n\n", "a frame of 125 bytes or more, over the limit of 64"),
      ("SEND\n\n" + String(repeating: "x", count: 80), "over the limit of 64"),
      ("SEND\n" + String(repeating: "h", count: 80), "over the limit of 64"),
      ("SEND\n\n" + String(repeating: "x", count: 70) + "\0", "over the limit of 64"),
    ]
    for (input, reason) in cases {
      var decoder = STOMPDecoder(maximumFrameSize: limit)
      decoder.append(bytes(input))
      XCTAssertThrowsError(try decoder.next(), reason) { error in
        XCTAssertTrue("\(error)".contains(reason), "\(error) for \(reason)")
      }
    }
    XCTAssertNoThrow(
      try decode(bytes("SEND\n\n" + String(repeating: "x", count: 58) + "\0"), limit: 64))
  }

  func testAnErrorsTextJoinsItsMessageHeaderAndBody() {
    XCTAssertEqual(
      STOMPFrame(.error, [STOMPHeader("message", "Bad CONNECT")], body: bytes("Access refused\n"))
        .errorText, "Bad CONNECT: Access refused")
    XCTAssertEqual(STOMPFrame(.error, [STOMPHeader("message", "m")]).errorText, "m")
    XCTAssertEqual(STOMPFrame(.error, body: bytes("only\tbody")).errorText, "only body")
    XCTAssertEqual(STOMPFrame(.error, body: [0xFF]).errorText, "no reason given")
    XCTAssertEqual(
      STOMPFrame(.error, [STOMPHeader("message", "Oops")], body: bytes("Oops, it broke"))
        .errorText, "Oops, it broke")
  }
}
