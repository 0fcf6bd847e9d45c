import XCTest

@testable import Transport

/// How `ProxyTunnel` judges a proxy's answer to CONNECT, byte by byte as it arrives.
final class ProxyTunnelTests: XCTestCase {
  private func answer(_ text: String) -> ProxyTunnel.Answer {
    ProxyTunnel.answer(Array(text.utf8))
  }

  func testA200WhoseHeadIsAllThatArrivedOpensTheTunnel() {
    XCTAssertEqual(answer("HTTP/1.1 200 Connection established\r\n\r\n"), .established)
    XCTAssertEqual(answer("HTTP/1.0 200 OK\r\nProxy-Agent: x\r\n\r\n"), .established)
  }

  func testAnAnswerIsIncompleteUntilItsHeadEnds() {
    let head = Array("HTTP/1.1 200 Connection established\r\n\r\n".utf8)
    for length in 0..<head.count {
      XCTAssertEqual(ProxyTunnel.answer(Array(head.prefix(length))), .incomplete, "\(length)")
    }
  }

  func testAnyOtherStatusIsARefusalQuotingTheStatusLine() {
    XCTAssertEqual(
      answer("HTTP/1.1 407 Proxy Authentication Required\r\n\r\n"),
      .failed("the proxy refused the tunnel: HTTP/1.1 407 Proxy Authentication Required"))
    XCTAssertEqual(
      answer("SSH-2.0-OpenSSH\r\n\r\n"), .failed("the proxy refused the tunnel: SSH-2.0-OpenSSH"))
  }

  func testBytesAfterTheHeadAreRefusedAsTheyWouldBeLost() {
    XCTAssertEqual(
      answer("HTTP/1.1 200 OK\r\n\r\nx"), .failed("the proxy sent data before the tunnel was up"))
  }

  func testAnEndlessHeadIsRefusedPastTheLimit() {
    let long = Array(("HTTP/1.1 200 OK\r\n" + String(repeating: "X: y\r\n", count: 3000)).utf8)
    XCTAssertGreaterThan(long.count, ProxyTunnel.maxAnswerSize)
    XCTAssertEqual(ProxyTunnel.answer(long), .failed("the proxy's answer is too long"))
    XCTAssertEqual(
      ProxyTunnel.answer(Array(long.prefix(ProxyTunnel.maxAnswerSize))), .incomplete)
  }
}
