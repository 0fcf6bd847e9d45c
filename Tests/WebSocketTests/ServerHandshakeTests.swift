import TestSupport
import WebSocket
import XCTest

/// Our client against our server, without sockets: both roles of the same engine.
final class ServerHandshakeTests: XCTestCase {
  private func request(_ lines: [String]) throws -> HTTPRequestHead {
    var parser = ServerHandshake()
    let bytes = Array((lines.joined(separator: "\r\n") + "\r\n\r\n").utf8)
    guard let (head, _) = try bytes.withUnsafeBytes({ try parser.append($0) }) else {
      throw ServerHandshake.Refusal(status: 0, reason: "incomplete")
    }
    return head
  }

  private let upgrade = [
    "GET /chat HTTP/1.1", "Host: h", "Upgrade: websocket", "Connection: keep-alive, Upgrade",
    "Sec-WebSocket-Version: 13", "Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==",
  ]

  /// RFC 6455 §1.3: the sample key is answered with the sample accept value.
  func testServerAnswersTheRFCSampleKey() throws {
    let accepted = try ServerHandshake.accept(try request(upgrade), subprotocols: ["chat"])
    let text = String(decoding: accepted.response, as: UTF8.self)
    XCTAssertTrue(text.hasPrefix("HTTP/1.1 101 Switching Protocols\r\n"))
    XCTAssertTrue(text.contains("Sec-WebSocket-Accept: s3pPLMBiTxaQ9kYGzzhZRbK+xOo=\r\n"))
    XCTAssertNil(accepted.subprotocol)
    XCTAssertEqual(accepted.request.target, "/chat")
  }

  func testServerRefusesRequestsThatAreNotUpgrades() throws {
    let cases: [([String], Int)] = [
      (["POST /chat HTTP/1.1", "Upgrade: websocket", "Connection: Upgrade"], 405),
      (["GET / HTTP/1.1", "Host: h"], 426),
      (
        upgrade.filter { !$0.hasPrefix("Sec-WebSocket-Version") } + ["Sec-WebSocket-Version: 8"],
        426
      ),
      (upgrade.filter { !$0.hasPrefix("Sec-WebSocket-Key") } + ["Sec-WebSocket-Key: short"], 400),
    ]
    for (lines, status) in cases {
      XCTAssertThrowsError(try ServerHandshake.accept(try request(lines))) { error in
        XCTAssertEqual((error as? ServerHandshake.Refusal)?.status, status, "\(lines)")
      }
    }
    var parser = ServerHandshake()
    XCTAssertThrowsError(
      try Array("GET / HTTP/1.0\r\n\r\n".utf8).withUnsafeBytes { try parser.append($0) })
    let refusal = String(
      decoding: ServerHandshake.refusal(status: 401, reason: "Unauthorized"), as: UTF8.self)
    XCTAssertTrue(refusal.hasPrefix("HTTP/1.1 401 Unauthorized\r\n"))
  }

  /// RFC 7692 §7.1: the server honours what the client asks of it, or declines the offer.
  func testServerHonoursDeflateParametersOrDeclines() throws {
    let tuned = try ServerHandshake.accept(
      try request(
        upgrade + [
          "Sec-WebSocket-Extensions: permessage-deflate; server_no_context_takeover; server_max_window_bits=10; client_max_window_bits"
        ]),
      deflate: true)
    XCTAssertTrue(
      String(decoding: tuned.response, as: UTF8.self).contains(
        "Sec-WebSocket-Extensions: permessage-deflate; server_no_context_takeover; server_max_window_bits=10\r\n"
      ))
    XCTAssertEqual(tuned.compression?.outgoingWindowBits, 10)
    XCTAssertEqual(tuned.compression?.outgoingNoContextTakeover, true)
    let unknown = try ServerHandshake.accept(
      try request(
        upgrade + ["Sec-WebSocket-Extensions: permessage-deflate; mystery, permessage-deflate"]),
      deflate: true)
    XCTAssertTrue(
      String(decoding: unknown.response, as: UTF8.self).contains(
        "Sec-WebSocket-Extensions: permessage-deflate\r\n"))
    let declined = try ServerHandshake.accept(
      try request(
        upgrade + ["Sec-WebSocket-Extensions: permessage-deflate; server_max_window_bits=99"]),
      deflate: true)
    XCTAssertNil(declined.compression)
  }

  func testOurClientAndServerTalkThroughBothRolesWithCompression() throws {
    var random = SplitMix64()
    let handshake = try ClientHandshake(
      url: try WebSocketURL(parsing: "ws://h/chat"), subprotocols: ["v2"], random: &random)
    let client = ClientConnection(handshake: handshake, random: SplitMix64(seed: 3))
    var serverParser = ServerHandshake()
    guard let (head, _) = try client.takeOutbound().withUnsafeBytes({ try serverParser.append($0) })
    else {
      return XCTFail("no request")
    }
    let accepted = try ServerHandshake.accept(head, subprotocols: ["v2"], deflate: true)
    let server = try FrameSession(
      role: .server, limits: ClientConnection.Limits(), encoder: FrameEncoder(),
      compression: accepted.compression)
    client.receive(accepted.response)
    guard case .opened(let result) = client.nextEvent() else { return XCTFail("not opened") }
    XCTAssertEqual(result.subprotocol, "v2")
    XCTAssertNotNil(result.deflate)
    let text = String(repeating: "both roles ", count: 50)
    try client.send(text: text)
    client.takeOutbound().withUnsafeBytes { server.receive($0) }
    XCTAssertEqual(server.nextEvent(), .message(.text(Array(text.utf8))))
    try server.send(.text(Array(text.utf8)))
    try server.close(code: .goingAway, reason: "bye")
    client.receive(server.takeOutbound())
    XCTAssertEqual(client.nextEvent(), .message(.text(Array(text.utf8))))
    guard case .closed(let info) = client.nextEvent() else { return XCTFail() }
    XCTAssertEqual(info.code, .goingAway)
    client.takeOutbound().withUnsafeBytes { server.receive($0) }
    guard case .closed(let serverInfo) = server.nextEvent() else { return XCTFail() }
    XCTAssertTrue(serverInfo.clean)
  }
}
