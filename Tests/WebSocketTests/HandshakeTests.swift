import TestSupport
import WebSocket
import XCTest

final class HandshakeTests: XCTestCase {
  private func makeHandshake(
    headers: HTTPHeaders = HTTPHeaders(), subprotocols: [String] = [],
    deflate: PerMessageDeflateOptions? = PerMessageDeflateOptions()
  ) throws -> ClientHandshake {
    var random = SplitMix64()
    return try ClientHandshake(
      url: try WebSocketURL(parsing: "ws://chat.example:8080/ws?x=1"), headers: headers,
      subprotocols: subprotocols, deflate: deflate, random: &random)
  }

  private func response(_ handshake: ClientHandshake, extra: [String] = [], accept: String? = nil)
    throws -> HTTPResponseHead
  {
    let lines =
      [
        "HTTP/1.1 101 Switching Protocols", "Upgrade: websocket", "Connection: Upgrade",
        "Sec-WebSocket-Accept: \(accept ?? handshake.expectedAccept)",
      ] + extra
    return try parse(lines)
  }

  private func parse(_ lines: [String]) throws -> HTTPResponseHead {
    var parser = HTTPResponseParser()
    let bytes = Array((lines.joined(separator: "\r\n") + "\r\n\r\n").utf8)
    guard let (head, rest) = try bytes.withUnsafeBytes({ try parser.append($0) }) else {
      throw HandshakeError.malformedResponse("incomplete")
    }
    XCTAssertEqual(rest, [])
    return head
  }

  /// RFC 6455 §1.3: the sample nonce and its accept value.
  func testAcceptValueMatchesTheRFCSample() throws {
    var random = FixedGenerator(word: 0)
    let handshake = try ClientHandshake(
      url: try WebSocketURL(parsing: "ws://h/"), deflate: nil, random: &random)
    XCTAssertEqual(handshake.key, "AAAAAAAAAAAAAAAAAAAAAA==")
    // Recompute with the RFC's own key through the public validate path.
    let head = HTTPResponseHead(
      status: 101, reason: "",
      headers: [
        "Upgrade": "websocket", "Connection": "Upgrade",
        "Sec-WebSocket-Accept": handshake.expectedAccept,
      ])
    XCTAssertNoThrow(try handshake.validate(head))
    XCTAssertEqual(
      RFCSample.accept(forKey: "dGhlIHNhbXBsZSBub25jZQ=="), "s3pPLMBiTxaQ9kYGzzhZRbK+xOo=")
  }

  func testRequestCarriesKeyVersionCustomHeadersSubprotocolsAndTheDeflateOffer() throws {
    let handshake = try makeHandshake(
      headers: ["Authorization": "Bearer s3cret", "Origin": "https://example.org", "X-Trace": "1"],
      subprotocols: ["chat.v2", "chat.v1"])
    let text = String(decoding: handshake.requestBytes, as: UTF8.self)
    XCTAssertTrue(text.hasPrefix("GET /ws?x=1 HTTP/1.1\r\nHost: chat.example:8080\r\n"))
    for line in [
      "Upgrade: websocket", "Connection: Upgrade", "Sec-WebSocket-Key: \(handshake.key)",
      "Sec-WebSocket-Version: 13", "Sec-WebSocket-Protocol: chat.v2, chat.v1",
      "Sec-WebSocket-Extensions: permessage-deflate; client_max_window_bits",
      "Authorization: Bearer s3cret", "Origin: https://example.org", "X-Trace: 1",
    ] {
      XCTAssertTrue(text.contains("\r\n\(line)\r\n"), line)
    }
    XCTAssertTrue(text.hasSuffix("\r\n\r\n"))
    XCTAssertEqual(Base64.decode(handshake.key)?.count, 16)
  }

  func testRequestHeadersThatCouldInjectOrBreakTheUpgradeAreRefused() {
    XCTAssertThrowsError(try makeHandshake(headers: ["X-Evil": "a\r\nHost: other"]))
    XCTAssertThrowsError(try makeHandshake(headers: ["Bad Name": "x"]))
    XCTAssertThrowsError(try makeHandshake(headers: ["upgrade": "h2c"]))
    XCTAssertThrowsError(try makeHandshake(headers: ["Sec-WebSocket-Key": "x"]))
    XCTAssertThrowsError(try makeHandshake(subprotocols: ["has space"]))
  }

  func testValidResponseIsAcceptedWithCaseInsensitiveHeaderNamesAndValues() throws {
    let handshake = try makeHandshake()
    let head = try parse([
      "HTTP/1.1 101 Switching Protocols", "upgrade: WebSocket", "CONNECTION: keep-alive, UPGRADE",
      "sec-websocket-accept: \(handshake.expectedAccept)",
    ])
    let result = try handshake.validate(head)
    XCTAssertNil(result.subprotocol)
    XCTAssertNil(result.deflate)
  }

  func testResponseWithoutUpgradeOrConnectionOrWithAWrongAcceptIsRefused() throws {
    let handshake = try makeHandshake()
    let noUpgrade = try parse([
      "HTTP/1.1 101 OK", "Connection: Upgrade", "Sec-WebSocket-Accept: \(handshake.expectedAccept)",
    ])
    XCTAssertThrowsError(try handshake.validate(noUpgrade)) {
      XCTAssertEqual($0 as? HandshakeError, .missingUpgradeHeader(found: nil))
    }
    let noConnection = try parse([
      "HTTP/1.1 101 OK", "Upgrade: websocket", "Sec-WebSocket-Accept: \(handshake.expectedAccept)",
    ])
    XCTAssertThrowsError(try handshake.validate(noConnection)) {
      XCTAssertEqual($0 as? HandshakeError, .missingConnectionUpgrade(found: nil))
    }
    XCTAssertThrowsError(try handshake.validate(try response(handshake, accept: "AAAA"))) {
      XCTAssertEqual(
        $0 as? HandshakeError, .invalidAccept(expected: handshake.expectedAccept, found: "AAAA"))
    }
  }

  func testRefusalsSurfaceAsTypedErrorsWithStatusAndHeaders() throws {
    let handshake = try makeHandshake()
    let unauthorized = try parse(["HTTP/1.1 401 Unauthorized", "WWW-Authenticate: Bearer"])
    XCTAssertThrowsError(try handshake.validate(unauthorized)) { error in
      XCTAssertEqual((error as? HandshakeError)?.status, 401)
    }
    let forbidden = try parse(["HTTP/1.1 403 Forbidden"])
    XCTAssertThrowsError(try handshake.validate(forbidden)) {
      XCTAssertEqual(($0 as? HandshakeError)?.status, 403)
    }
    let unavailable = try parse(["HTTP/1.1 503 Service Unavailable", "Retry-After: 7"])
    XCTAssertEqual(unavailable.retryAfter, .seconds(7))
    XCTAssertThrowsError(try handshake.validate(unavailable)) { error in
      guard case .unexpectedStatus(let head) = error as? HandshakeError else { return XCTFail() }
      XCTAssertEqual(head.retryAfter, .seconds(7))
      XCTAssertTrue("\(error)".contains("Retry-After: 7"))
    }
    let dated = try parse(["HTTP/1.1 503 Busy", "Retry-After: Wed, 21 Oct 2026 07:28:00 GMT"])
    XCTAssertEqual(dated.retryAfter, .date("Wed, 21 Oct 2026 07:28:00 GMT"))
    let redirect = try parse(["HTTP/1.1 302 Found", "Location: wss://elsewhere.example/ws"])
    XCTAssertTrue(redirect.isRedirect)
    XCTAssertEqual(redirect.location, "wss://elsewhere.example/ws")
    XCTAssertThrowsError(try handshake.validate(redirect)) {
      XCTAssertEqual(($0 as? HandshakeError)?.status, 302)
    }
  }

  func testSubprotocolMustBeOneWeOffered() throws {
    let handshake = try makeHandshake(subprotocols: ["chat.v2", "chat.v1"])
    let chosen = try handshake.validate(
      try response(handshake, extra: ["Sec-WebSocket-Protocol: chat.v1"]))
    XCTAssertEqual(chosen.subprotocol, "chat.v1")
    XCTAssertThrowsError(
      try handshake.validate(try response(handshake, extra: ["Sec-WebSocket-Protocol: mqtt"]))
    ) {
      XCTAssertEqual($0 as? HandshakeError, .unexpectedSubprotocol("mqtt"))
    }
    XCTAssertThrowsError(
      try handshake.validate(
        try response(handshake, extra: ["Sec-WebSocket-Protocol: chat.v1, chat.v2"])))
  }

  func testExtensionNegotiationAcceptsValidDeflateResponsesAndRefusesTheRest() throws {
    let handshake = try makeHandshake()
    let plain = try handshake.validate(
      try response(handshake, extra: ["Sec-WebSocket-Extensions: permessage-deflate"]))
    XCTAssertEqual(
      plain.deflate,
      NegotiatedDeflate(
        serverNoContextTakeover: false, clientNoContextTakeover: false, serverMaxWindowBits: 15,
        clientMaxWindowBits: 15))
    let tuned = try handshake.validate(
      try response(
        handshake,
        extra: [
          "Sec-WebSocket-Extensions: permessage-deflate; server_no_context_takeover; client_no_context_takeover; server_max_window_bits=10; client_max_window_bits=\"9\""
        ]))
    XCTAssertEqual(
      tuned.deflate,
      NegotiatedDeflate(
        serverNoContextTakeover: true, clientNoContextTakeover: true, serverMaxWindowBits: 10,
        clientMaxWindowBits: 9))
    let refused = [
      "x-webkit-deflate-frame",
      "permessage-deflate; unknown_param",
      "permessage-deflate; client_max_window_bits",
      "permessage-deflate; client_max_window_bits=16",
      "permessage-deflate; server_max_window_bits=7",
      "permessage-deflate; server_max_window_bits=010",
      "permessage-deflate; server_no_context_takeover=1",
      "permessage-deflate; server_no_context_takeover; server_no_context_takeover",
      "permessage-deflate, permessage-deflate",
    ]
    for header in refused {
      XCTAssertThrowsError(
        try handshake.validate(
          try response(handshake, extra: ["Sec-WebSocket-Extensions: \(header)"])), header)
    }
    let noOffer = try makeHandshake(deflate: nil)
    XCTAssertThrowsError(
      try noOffer.validate(
        try response(noOffer, extra: ["Sec-WebSocket-Extensions: permessage-deflate"]))
    ) {
      XCTAssertEqual($0 as? HandshakeError, .unsupportedExtension("permessage-deflate"))
    }
  }

  func testWindowBitsEightIsNegotiatedButDisablesOurCompression() throws {
    let handshake = try makeHandshake()
    let result = try handshake.validate(
      try response(
        handshake, extra: ["Sec-WebSocket-Extensions: permessage-deflate; client_max_window_bits=8"]
      ))
    XCTAssertEqual(result.deflate?.clientMaxWindowBits, 8)
    XCTAssertEqual(result.deflate?.canCompress, false)
  }

  func testResponseParserFindsTheHeadAtEverySplitAndKeepsTheFollowingBytes() throws {
    let bytes =
      Array("HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\n\r\n".utf8) + [0x81, 0x00]
    for split in 0...bytes.count {
      var parser = HTTPResponseParser()
      var result = try Array(bytes[..<split]).withUnsafeBytes { try parser.append($0) }
      var remainder = result.map { $0.remainder + bytes[split...] }
      if result == nil {
        result = try Array(bytes[split...]).withUnsafeBytes { try parser.append($0) }
        remainder = result?.remainder
      }
      XCTAssertEqual(result?.head.status, 101, "split \(split)")
      XCTAssertEqual(result?.head.headers[first: "upgrade"], "websocket")
      XCTAssertEqual(remainder, [0x81, 0x00], "split \(split)")
    }
  }

  func testResponseParserRefusesOversizedAndMalformedHeads() {
    var parser = HTTPResponseParser(limit: 100)
    let big = Array(("HTTP/1.1 101 OK\r\nX: " + String(repeating: "a", count: 200)).utf8)
    XCTAssertThrowsError(try big.withUnsafeBytes { try parser.append($0) }) {
      XCTAssertEqual($0 as? HandshakeError, .responseTooLarge(limit: 100))
    }
    for bad in [
      "HTTP/2 101 OK", "HTTP/1.1 1O1 OK", "SSH-2.0-OpenSSH", "HTTP/1.1 101 OK\r\nNoColon",
      "HTTP/1.1 101 OK\r\n folded: x", "HTTP/1.1 101 OK\nX: y",
    ] {
      var p = HTTPResponseParser()
      let bytes = Array((bad + "\r\n\r\n").utf8)
      XCTAssertThrowsError(try bytes.withUnsafeBytes { try p.append($0) }, bad)
    }
  }
}

/// Recomputes the RFC sample through the same public surface a test can reach.
enum RFCSample {
  static func accept(forKey key: String) -> String {
    // A generator whose 16 bytes are the RFC's nonce "the sample nonce".
    let nonce = Array("the sample nonce".utf8)
    var words: [UInt64] = []
    for i in 0..<2 {
      var word: UInt64 = 0
      for j in 0..<8 { word |= UInt64(nonce[i * 8 + j]) << (8 * UInt64(j)) }
      words.append(word)
    }
    struct Replay: RandomNumberGenerator {
      var words: [UInt64]
      mutating func next() -> UInt64 { words.removeFirst() }
    }
    var random = Replay(words: words)
    guard
      let url = try? WebSocketURL(parsing: "ws://server.example.com/chat"),
      let handshake = try? ClientHandshake(url: url, deflate: nil, random: &random),
      handshake.key == key
    else { return "key mismatch" }
    return handshake.expectedAccept
  }
}
