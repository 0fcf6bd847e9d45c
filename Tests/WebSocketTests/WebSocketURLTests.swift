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
    let d = try WebSocketURL(parsing: "wss://[2001:DB8::1]/chat")
    XCTAssertEqual(d.description, "wss://[2001:db8::1]/chat")
    XCTAssertEqual(try WebSocketURL(parsing: d.description), d)
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
      // Found by the config fuzzer: this printed as ws://[y::1]]:9001/.
      ("ws://Y::1]:9001/", .invalidHost("Y::1]")),
      ("ws://::1/", .invalidHost(":")),
      ("ws://host]/", .invalidHost("host]")),
      ("ws://[127.0.0.1]/", .invalidHost("[127.0.0.1]")),
      ("ws://[[::1]/", .invalidHost("[[::1]")),
      ("ws://[]/", .missingHost),
    ]
    for (text, expected) in cases {
      XCTAssertThrowsError(try WebSocketURL(parsing: text), text) {
        XCTAssertEqual($0 as? WebSocketURL.ParseError, expected, text)
      }
    }
  }
}
