import WebSocket
import XCTest

final class WebSocketURLTests: XCTestCase {
  func testParsesSchemesPortsPathsAndIPv6Literals() throws {
    let a = try WebSocketURL(parsing: "wss://Chat.Example.com/ws?room=7")
    XCTAssertEqual(a.secure, true)
    XCTAssertEqual(a.host, "chat.example.com")
    XCTAssertEqual(a.port, 443)
    XCTAssertEqual(a.resource, "/ws?room=7")
    XCTAssertEqual(a.hostHeader, "chat.example.com")
    let b = try WebSocketURL(parsing: "ws://[::1]:9001")
    XCTAssertEqual(b.host, "::1")
    XCTAssertEqual(b.port, 9001)
    XCTAssertEqual(b.resource, "/")
    XCTAssertEqual(b.hostHeader, "[::1]:9001")
    XCTAssertEqual(b.description, "ws://[::1]:9001/")
    let c = try WebSocketURL(parsing: "ws://127.0.0.1:80?x")
    XCTAssertEqual(c.resource, "/?x")
    XCTAssertEqual(c.hostHeader, "127.0.0.1")
  }

  func testRefusesURLsThatAreNotWebSocketURLs() {
    let cases: [(String, WebSocketURL.ParseError)] = [
      ("http://example.com/", .unsupportedScheme("http")),
      ("example.com", .unsupportedScheme("example.com")),
      ("ws:///path", .missingHost),
      ("ws://host:0/", .invalidPort("0")),
      ("ws://host:65536/", .invalidPort("65536")),
      ("ws://host:/", .invalidPort("")),
      ("ws://user:pw@host/", .userInfoNotAllowed),
      ("ws://host/#frag", .fragmentNotAllowed),
      ("ws://host/a b", .invalidCharacter),
    ]
    for (text, expected) in cases {
      XCTAssertThrowsError(try WebSocketURL(parsing: text), text) {
        XCTAssertEqual($0 as? WebSocketURL.ParseError, expected, text)
      }
    }
  }
}
