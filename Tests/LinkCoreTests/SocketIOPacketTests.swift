import JSON
import LinkCore
import WebSocket
import XCTest

/// The Engine.IO and Socket.IO packet headers, as servers write them.
final class SocketIOPacketTests: XCTestCase {
  private func parse(_ text: String) throws -> (SocketIOPacket, [UInt8]) {
    let bytes = Array(text.utf8)
    let packet = try bytes.withUnsafeBytes {
      try SocketIOPacket.parse($0, in: 0..<bytes.count)
    }
    return (packet, bytes)
  }

  private func slice(_ bytes: [UInt8], _ range: Range<Int>?) -> String? {
    range.map { String(decoding: bytes[$0], as: UTF8.self) }
  }

  func testEngineIOPacketTypesAreTheFirstDigit() {
    let cases: [(String, EngineIOPacket?)] = [
      ("0{\"sid\":\"a\"}", .open(1..<12)), ("1", .close), ("2", .ping), ("3", .pong),
      ("42[\"x\"]", .message(1..<7)), ("5", .upgrade), ("6", .noop), ("7", nil), ("", nil),
      ("x", nil),
    ]
    for (text, expected) in cases {
      let parsed = Array(text.utf8).withUnsafeBytes { EngineIOPacket.parse($0) }
      XCTAssertEqual(parsed, expected, text)
    }
  }

  func testAnEventWithoutNamespaceOrAckIDHasOnlyData() throws {
    let (packet, bytes) = try parse(#"2["message",{"a":1}]"#)
    XCTAssertEqual(packet.kind, .event)
    XCTAssertNil(packet.namespace)
    XCTAssertNil(packet.ackID)
    XCTAssertEqual(packet.attachments, 0)
    XCTAssertEqual(slice(bytes, packet.data), #"["message",{"a":1}]"#)
  }

  func testAnEventWithNamespaceAndAckIDKeepsBoth() throws {
    let (packet, bytes) = try parse(#"2/chat,17["x"]"#)
    XCTAssertEqual(slice(bytes, packet.namespace), "/chat")
    XCTAssertEqual(packet.ackID, 17)
    XCTAssertEqual(slice(bytes, packet.data), #"["x"]"#)
  }

  func testABinaryEventAnnouncesItsAttachments() throws {
    let (packet, bytes) = try parse(#"52-/chat,3["x",{"_placeholder":true,"num":0}]"#)
    XCTAssertEqual(packet.kind, .binaryEvent)
    XCTAssertEqual(packet.attachments, 2)
    XCTAssertEqual(slice(bytes, packet.namespace), "/chat")
    XCTAssertEqual(packet.ackID, 3)
    XCTAssertEqual(try parse("61-0[]").0.kind, .binaryAck)
  }

  func testConnectAndDisconnectMayEndWithTheNamespace() throws {
    let (disconnect, bytes) = try parse("1/admin")
    XCTAssertEqual(disconnect.kind, .disconnect)
    XCTAssertEqual(slice(bytes, disconnect.namespace), "/admin")
    XCTAssertEqual(disconnect.data.count, 0)
    let (connect, connectBytes) = try parse(#"0/admin,{"sid":"s"}"#)
    XCTAssertEqual(connect.kind, .connect)
    XCTAssertEqual(slice(connectBytes, connect.data), #"{"sid":"s"}"#)
    XCTAssertEqual(try parse(#"4{"message":"no"}"#).0.kind, .connectError)
  }

  func testMalformedHeadersAreRefusedWithTheirReason() {
    let cases: [(String, SocketIOPacket.ParseError)] = [
      ("", .empty), ("9[]", .unknownType(UInt8(ascii: "9"))),
      ("x", .unknownType(UInt8(ascii: "x"))),
      ("5[]", .badAttachmentCount), ("51[]", .badAttachmentCount),
      ("599999-[]", .badAttachmentCount),
      ("5300-[]", .badAttachmentCount), ("2/chat", .unterminatedNamespace),
      ("299999999999999999999[]", .ackIDTooLarge),
    ]
    for (text, expected) in cases {
      XCTAssertThrowsError(try parse(text), text) { error in
        XCTAssertEqual(error as? SocketIOPacket.ParseError, expected, text)
        XCTAssertFalse("\(error)".isEmpty)
      }
    }
  }

  func testTheEndpointGetsTheEngineIOPathAndQuery() throws {
    let cases: [(String, String)] = [
      ("ws://h:3000", "ws://h:3000/socket.io/?EIO=4&transport=websocket"),
      ("ws://h:3000/", "ws://h:3000/socket.io/?EIO=4&transport=websocket"),
      ("wss://h/chat/", "wss://h/chat/?EIO=4&transport=websocket"),
      ("ws://h/?room=1", "ws://h/socket.io/?room=1&EIO=4&transport=websocket"),
      ("ws://h/io/?EIO=3&x=1&transport=polling", "ws://h/io/?x=1&EIO=4&transport=websocket"),
    ]
    for (given, expected) in cases {
      XCTAssertEqual(
        SocketIOProtocol.endpoint(for: try WebSocketURL(parsing: given)).description, expected)
    }
  }

  func testTheAuthObjectGetsTheTokenInPlaceOfAnyOfItsOwn() throws {
    let auth = try JSONValue.parse(#"{"user":"u","token":"old"}"#)
    XCTAssertEqual(
      String(decoding: SocketIOProtocol.authPayload(auth, token: "t"), as: UTF8.self),
      #"{"user":"u","token":"t"}"#)
    XCTAssertEqual(
      String(decoding: SocketIOProtocol.authPayload(auth, token: nil), as: UTF8.self),
      #"{"user":"u","token":"old"}"#)
    XCTAssertEqual(
      String(decoding: SocketIOProtocol.authPayload(.object([]), token: nil), as: UTF8.self), "{}")
  }
}
