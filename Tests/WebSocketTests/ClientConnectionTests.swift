import TestSupport
import WebSocket
import XCTest

/// Drives a `ClientConnection` as a scripted server would, without sockets.
final class ClientConnectionTests: XCTestCase {
  private func open(
    extensions: String? = nil, limits: ClientConnection.Limits = ClientConnection.Limits(),
    deflate: PerMessageDeflateOptions? = PerMessageDeflateOptions(), trailing: [UInt8] = []
  ) throws -> ClientConnection {
    var random = SplitMix64()
    let handshake = try ClientHandshake(
      url: try WebSocketURL(parsing: "ws://127.0.0.1:9001/"), deflate: deflate, random: &random)
    let connection = ClientConnection(
      handshake: handshake, limits: limits, random: SplitMix64(seed: 9))
    XCTAssertEqual(connection.takeOutbound(), handshake.requestBytes)
    var response =
      "HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
    response += "Sec-WebSocket-Accept: \(handshake.expectedAccept)\r\n"
    if let extensions { response += "Sec-WebSocket-Extensions: \(extensions)\r\n" }
    response += "\r\n"
    connection.receive(Array(response.utf8) + trailing)
    guard case .opened = connection.nextEvent() else {
      XCTFail("not opened")
      return connection
    }
    XCTAssertEqual(connection.state, .open)
    return connection
  }

  private func events(_ connection: ClientConnection, _ bytes: [UInt8]) -> [ClientConnection.Event]
  {
    connection.receive(bytes)
    var events: [ClientConnection.Event] = []
    while let event = connection.nextEvent() { events.append(event) }
    return events
  }

  /// The close frame the client sent, as (code, reason).
  private func sentClose(_ connection: ClientConnection) -> (UInt16?, String)? {
    guard let frame = clientFrames(connection.takeOutbound()).last, frame.opcode == .close else {
      return nil
    }
    if frame.payload.count < 2 { return (nil, "") }
    return (
      UInt16(frame.payload[0]) << 8 | UInt16(frame.payload[1]),
      String(decoding: frame.payload[2...], as: UTF8.self)
    )
  }

  func testFramesSentRightAfterThe101AreNotLost() throws {
    let connection = try open(trailing: ServerFrames.text("early"))
    XCTAssertEqual(connection.nextEvent(), .message(.text(Array("early".utf8))))
  }

  func testFragmentedMessageWithInterleavedPingIsAssembledAndThePingAnswered() throws {
    let connection = try open()
    let stream =
      ServerFrames.text("Hel", fin: false) + ServerFrames.frame(0x9, Array("p1".utf8))
      + ServerFrames.frame(0x0, Array("lo".utf8))
    XCTAssertEqual(
      events(connection, stream),
      [.ping(Array("p1".utf8)), .message(.text(Array("Hello".utf8)))])
    let written = clientFrames(connection.takeOutbound())
    XCTAssertEqual(written.map(\.opcode), [.pong])
    XCTAssertEqual(written.first?.payload, Array("p1".utf8))
  }

  func testWriteOutboundHandsOverTheSameBytesInOrderAndEmptiesTheBuffer() throws {
    var random = SplitMix64()
    let handshake = try ClientHandshake(
      url: try WebSocketURL(parsing: "ws://127.0.0.1:9001/"), deflate: nil, random: &random)
    let connection = ClientConnection(handshake: handshake, random: SplitMix64(seed: 9))
    var written: [UInt8] = []
    connection.writeOutbound { written += $0 }
    XCTAssertEqual(written, handshake.requestBytes, "the handshake request goes first")
    let reference = try open(deflate: nil)
    let opened = try open(deflate: nil)
    // Big rounds (the buffer is kept), then a small one (a big buffer is given back): the
    // bytes must be the same as takeOutbound's whatever happens to the memory.
    for round in [3000, 3000, 2, 3000, 1] {
      for i in 0..<round {
        try reference.send(.text(Array("message \(i) of \(round)".utf8)))
        try opened.send(.text(Array("message \(i) of \(round)".utf8)))
      }
      var bytes: [UInt8] = []
      opened.writeOutbound { bytes += $0 }
      let expected = reference.takeOutbound()
      XCTAssertEqual(bytes, expected)
      XCTAssertEqual(clientFrames(bytes).count, round)
      XCTAssertFalse(opened.hasOutbound)
      opened.writeOutbound { _ in XCTFail("nothing is left to write") }
    }
  }

  func testBinaryAndEmptyMessagesAreDelivered() throws {
    let connection = try open()
    XCTAssertEqual(
      events(connection, ServerFrames.frame(0x2, [0, 255]) + ServerFrames.text("")),
      [.message(.binary([0, 255])), .message(.text([]))])
  }

  /// RFC 6455 §5.5.1: the client echoes the server's close code and reports a clean close.
  func testServerCloseIsEchoedAndReportedClean() throws {
    let connection = try open()
    let result = events(connection, ServerFrames.close(1001, Array("restart".utf8)))
    XCTAssertEqual(
      result,
      [.closed(CloseInfo(code: .goingAway, reason: "restart", initiator: .peer, clean: true))])
    XCTAssertEqual(sentClose(connection)?.0, 1001)
    XCTAssertEqual(connection.state, .closed)
  }

  /// 1005 is never sent: an empty close is answered with an empty close.
  func testEmptyCloseIsAnsweredWithAnEmptyClose() throws {
    let connection = try open()
    let result = events(connection, ServerFrames.close(nil))
    XCTAssertEqual(
      result,
      [.closed(CloseInfo(code: .noStatusReceived, reason: "", initiator: .peer, clean: true))])
    let frame = clientFrames(connection.takeOutbound()).last
    XCTAssertEqual(frame?.opcode, .close)
    XCTAssertEqual(frame?.payload, [])
  }

  func testInvalidCloseCodesAreAnsweredWithProtocolError() throws {
    for code: UInt16 in [0, 999, 1004, 1005, 1006, 1015, 1016, 2000, 2999, 5000] {
      let connection = try open()
      XCTAssertEqual(events(connection, ServerFrames.close(code)), [], "\(code)")
      XCTAssertEqual(sentClose(connection)?.0, 1002, "\(code)")
      XCTAssertEqual(connection.state, .closing)
    }
  }

  func testCloseWithAOneBytePayloadOrInvalidUTF8ReasonFails() throws {
    let short = try open()
    _ = events(short, ServerFrames.frame(0x8, [0x03]))
    XCTAssertEqual(sentClose(short)?.0, 1002)
    let badReason = try open()
    _ = events(badReason, ServerFrames.close(1000, [0xCE, 0xBA, 0xED, 0xA0, 0x80]))
    XCTAssertEqual(sentClose(badReason)?.0, 1007)
  }

  func testLocalCloseCompletesWhenTheServerEchoes() throws {
    let connection = try open()
    try connection.close(code: .normalClosure, reason: "bye")
    XCTAssertEqual(connection.state, .closing)
    XCTAssertEqual(sentClose(connection)?.0, 1000)
    // Data after our close is discarded; the server's close completes the handshake.
    let result = events(connection, ServerFrames.text("late") + ServerFrames.close(1000))
    XCTAssertEqual(
      result,
      [.closed(CloseInfo(code: .normalClosure, reason: "bye", initiator: .local, clean: true))])
    XCTAssertThrowsError(try connection.send(text: "x"))
  }

  func testLocalCloseRefusesReservedCodesAndTruncatesLongReasons() throws {
    let connection = try open()
    XCTAssertThrowsError(try connection.close(code: .noStatusReceived))
    XCTAssertThrowsError(try connection.close(code: .abnormalClosure))
    XCTAssertThrowsError(try connection.close(code: .unknown(2000)))
    try connection.close(code: .normalClosure, reason: String(repeating: "é", count: 100))
    let close = sentClose(connection)
    XCTAssertLessThanOrEqual(close?.1.utf8.count ?? 999, 123)
    XCTAssertEqual(close?.1.count, 61)
  }

  func testProtocolViolationsFailTheConnectionWithTheRightCode() throws {
    let cases: [([UInt8], UInt16)] = [
      (ServerFrames.frame(0x3, []), 1002),  // reserved opcode
      (ServerFrames.frame(0x1, [0x41], rsv: 4), 1002),  // RSV1 without deflate
      (ServerFrames.frame(0x0, [0x41]), 1002),  // continuation without a start
      (ServerFrames.text("a", fin: false) + ServerFrames.text("b"), 1002),  // text inside text
      (ServerFrames.frame(0x9, [], fin: false), 1002),  // fragmented ping
      (ServerFrames.frame(0x1, [0xC0, 0xAF]), 1007),  // overlong UTF-8
      ([0x81, 0x81, 1, 2, 3, 4, 0], 1002),  // masked server frame
    ]
    for (bytes, code) in cases {
      let connection = try open()
      XCTAssertEqual(events(connection, bytes), [], "\(bytes)")
      XCTAssertEqual(sentClose(connection)?.0, code, "\(bytes)")
      // The failure is reported when the transport ends.
      guard case .closed(let info) = connection.transportClosed() else { return XCTFail() }
      XCTAssertEqual(info.code.rawValue, code)
      guard case .failure = info.initiator else { return XCTFail("\(info)") }
    }
  }

  /// RFC 6455 §8.1 fail fast: a bad byte in the first chunk of a long text frame fails at once.
  func testInvalidUTF8InsideAnIncompleteFrameFailsBeforeTheFrameEnds() throws {
    let connection = try open()
    let frame = ServerFrames.frame(
      0x1, Array("κόσμε".utf8) + [0xED, 0xA0, 0x80] + Array(repeating: 0x61, count: 1000))
    XCTAssertEqual(events(connection, Array(frame[..<20])), [])
    XCTAssertEqual(sentClose(connection)?.0, 1007)
  }

  func testInvalidUTF8InAFragmentFailsBeforeTheMessageEnds() throws {
    let connection = try open()
    _ = events(connection, ServerFrames.text("ok", fin: false))
    XCTAssertNil(sentClose(connection))
    _ = events(connection, ServerFrames.frame(0x0, [0xF4, 0x90], fin: false))
    XCTAssertEqual(sentClose(connection)?.0, 1007)
  }

  func testValidUTF8SplitAcrossPartialReadsOfOneFrameIsAccepted() throws {
    let connection = try open()
    let text = String(repeating: "κόσμε ", count: 100)
    let frame = ServerFrames.text(text)
    var result: [ClientConnection.Event] = []
    for start in stride(from: 0, to: frame.count, by: 7) {
      result += events(connection, Array(frame[start..<min(start + 7, frame.count)]))
    }
    XCTAssertEqual(result, [.message(.text(Array(text.utf8)))])
  }

  func testMessagesOverTheLimitFailWithMessageTooBig() throws {
    let limits = ClientConnection.Limits(maxFrameSize: 100, maxMessageSize: 150)
    let frame = try open(limits: limits)
    _ = events(frame, ServerFrames.frame(0x2, Array(repeating: 0, count: 101)))
    XCTAssertEqual(sentClose(frame)?.0, 1009)
    let message = try open(limits: limits)
    _ = events(message, ServerFrames.frame(0x2, Array(repeating: 0, count: 100), fin: false))
    XCTAssertNil(sentClose(message))
    _ = events(message, ServerFrames.frame(0x0, Array(repeating: 0, count: 60)))
    XCTAssertEqual(sentClose(message)?.0, 1009)
  }

  func testCompressedMessagesAreInflatedAndTheBombLimitUsesInflatedSize() throws {
    let connection = try open(
      extensions: "permessage-deflate", limits: ClientConnection.Limits(maxMessageSize: 10_000))
    let hello: [UInt8] = [0xf2, 0x48, 0xcd, 0xc9, 0xc9, 0x07, 0x00]
    XCTAssertEqual(
      events(connection, ServerFrames.frame(0x1, hello, rsv: 4)),
      [.message(.text(Array("Hello".utf8)))])
    // Fragmented compressed message: RSV1 on the first frame only.
    let body = try MessageDeflater.make(noContextTakeover: true).compress(
      Array(String(repeating: "ab", count: 500).utf8))
    let half = body.count / 2
    let result = events(
      connection,
      ServerFrames.frame(0x1, Array(body[..<half]), fin: false, rsv: 4)
        + ServerFrames.frame(0x0, Array(body[half...])))
    XCTAssertEqual(result, [.message(.text(Array(String(repeating: "ab", count: 500).utf8)))])
    let bomb = try MessageDeflater.make(noContextTakeover: true).compress(
      [UInt8](repeating: 0x41, count: 100_000))
    _ = events(connection, ServerFrames.frame(0x2, bomb, rsv: 4))
    XCTAssertEqual(sentClose(connection)?.0, 1009)
  }

  func testRSV1OnAContinuationFrameIsAProtocolError() throws {
    let connection = try open(extensions: "permessage-deflate")
    _ = events(
      connection, ServerFrames.text("a", fin: false) + ServerFrames.frame(0x0, [0x00], rsv: 4))
    XCTAssertEqual(sentClose(connection)?.0, 1002)
  }

  func testCorruptCompressedDataFailsWithInvalidPayload() throws {
    let connection = try open(extensions: "permessage-deflate")
    _ = events(connection, ServerFrames.frame(0x2, [0xFF, 0xFF, 0xFF], rsv: 4))
    XCTAssertEqual(sentClose(connection)?.0, 1007)
  }

  func testOutgoingMessagesAreCompressedWhenNegotiated() throws {
    let connection = try open(extensions: "permessage-deflate; client_no_context_takeover")
    let text = String(repeating: "compress me ", count: 20)
    try connection.send(text: text)
    try connection.send(text: "tiny")
    let frames = clientFrames(connection.takeOutbound())
    XCTAssertEqual(frames.count, 2)
    XCTAssertTrue(frames[0].header.rsv1)
    XCTAssertLessThan(frames[0].payload.count, text.utf8.count)
    let inflater = try MessageInflater.make()
    var out: [UInt8] = []
    try frames[0].payload.withUnsafeBytes {
      try inflater.inflate($0, isFinal: true, limit: 1 << 20, into: &out)
    }
    XCTAssertEqual(out, Array(text.utf8))
    // Below the threshold a message goes out uncompressed, RSV1 clear.
    XCTAssertFalse(frames[1].header.rsv1)
    XCTAssertEqual(frames[1].payload, Array("tiny".utf8))
  }

  /// zlib cannot honour client_max_window_bits=8: every message is sent uncompressed.
  func testClientWindowOfEightBitsSendsUncompressed() throws {
    let connection = try open(extensions: "permessage-deflate; client_max_window_bits=8")
    let text = String(repeating: "x", count: 500)
    try connection.send(text: text)
    let frames = clientFrames(connection.takeOutbound())
    XCTAssertFalse(frames[0].header.rsv1)
    XCTAssertEqual(frames[0].payload.count, 500)
  }

  func testSendingInvalidUTF8TextOrOversizedPingIsRefused() throws {
    let connection = try open()
    XCTAssertThrowsError(try [UInt8]([0xFF]).withUnsafeBytes { try connection.send(text: $0) }) {
      XCTAssertEqual($0 as? ClientConnection.SendError, .invalidUTF8)
    }
    XCTAssertThrowsError(try connection.ping(Array(repeating: 0, count: 126)))
    XCTAssertFalse(connection.hasOutbound)
  }

  func testTransportLossIsReportedAsAbnormalClosure() throws {
    let connection = try open()
    XCTAssertEqual(
      connection.transportClosed(),
      .closed(CloseInfo(code: .abnormalClosure, reason: "", initiator: .transport, clean: false)))
    XCTAssertNil(connection.transportClosed())
  }

  func testHandshakeFailuresAreReportedOnce() throws {
    var random = SplitMix64()
    let handshake = try ClientHandshake(url: try WebSocketURL(parsing: "ws://h/"), random: &random)
    let connection = ClientConnection(handshake: handshake)
    _ = connection.takeOutbound()
    connection.receive(Array("HTTP/1.1 403 Forbidden\r\nContent-Length: 0\r\n\r\n".utf8))
    guard case .handshakeFailed(let error) = connection.nextEvent() else { return XCTFail() }
    XCTAssertEqual(error.status, 403)
    XCTAssertNil(connection.nextEvent())
    XCTAssertEqual(connection.state, .closed)
    XCTAssertNil(connection.transportClosed())
  }

  func testConnectionClosedBeforeTheResponseIsAHandshakeFailure() throws {
    var random = SplitMix64()
    let handshake = try ClientHandshake(url: try WebSocketURL(parsing: "ws://h/"), random: &random)
    let connection = ClientConnection(handshake: handshake)
    guard case .handshakeFailed = connection.transportClosed() else { return XCTFail() }
  }
}
