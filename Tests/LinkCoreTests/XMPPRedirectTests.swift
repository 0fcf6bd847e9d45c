import LinkCore
import TestSupport
import WebSocket
import XCTest
import XMPP

/// `<close see-other-uri=…/>` (RFC 7395 §3.6.1): the next connection goes where the server
/// sent us, if as protected as the configured URL, and not round in circles.
final class XMPPRedirectTests: XCTestCase {
  private typealias S = XMPPServer

  private func close(to uri: String) -> Message {
    .xml("<close xmlns='urn:ietf:params:xml:ns:xmpp-framing' see-other-uri='\(uri)'/>")
  }

  /// A link whose session is ready, on `transport`.
  private func ready(transport: SASLTransport = .plaintext) -> Harness {
    var link = Harness(rooms: [], backend: S.dialect(transport: transport))
    link.on(.start)
    link.on(.upgraded(handshake(subprotocol: "xmpp")))
    for frame in S.negotiation() { link.on(.message(.xml(frame))) }
    link.on(.positions([:]))
    return link
  }

  /// The link after the server's redirect closed the connection: the lines of the end.
  @discardableResult
  private func moved(_ link: inout Harness, to uri: String) -> [String] {
    let read = link.on(.message(close(to: uri)))
    XCTAssertTrue(read.contains("close 1000 moved"), "\(read)")
    return link.on(.ended(closed(.normalClosure)))
  }

  func testTheNextConnectionGoesWhereTheServerSentUsAtOnce() throws {
    var link = ready()
    let ended = moved(&link, to: "ws://xmpp2.chat.example:5280/xmpp-websocket")
    XCTAssertTrue(
      ended.contains { $0.contains("the backend moved the session to ws://xmpp2.chat.example") },
      "\(ended)")
    XCTAssertEqual(link.core.counters.endings["redirected"], 1)
    XCTAssertEqual(link.core.failures, 0, "a redirect is not a failure")
    XCTAssertEqual(link.core.connectURL.host, "xmpp2.chat.example")
    XCTAssertEqual(
      link.on(.timerFired(.retry)),
      ["connect", "state connecting (connecting to ws://xmpp2.chat.example:5280/xmpp-websocket)"])
  }

  func testASessionReadyThereKeepsItAndAFailureBeforeReadyGoesBackToTheConfiguredURL() {
    var link = ready()
    moved(&link, to: "ws://xmpp2.chat.example:5280/xmpp-websocket")
    link.on(.timerFired(.retry))
    link.on(.upgraded(handshake(subprotocol: "xmpp")))
    // The session resumed there.
    let frames =
      [S.open, S.features(), S.challenge, S.success, S.open, S.boundFeatures()]
      + ["<resumed xmlns='urn:xmpp:sm:3' previd='sm-1' h='0'/>"]
    let lines = frames.flatMap { link.on(.message(.xml($0))) }
    XCTAssertTrue(lines.contains("state open (connected)"), "\(lines)")
    link.on(.ended(closed(.abnormalClosure)))
    XCTAssertEqual(link.core.connectURL.host, "xmpp2.chat.example", "it worked there: kept")
    link.on(.timerFired(.retry))
    link.on(.ended(.connectionFailed("connection refused")))
    XCTAssertEqual(link.core.connectURL, testURL, "it failed there: back to the configured URL")
  }

  func testALessProtectedURLIsNotFollowed() {
    // swift-format-ignore: NeverUseForceTry
    let secure = try! WebSocketURL(parsing: "wss://chat.example/ws")
    var link = Harness(
      core: LinkCore(
        settings: LinkSettings(
          url: secure, pingInterval: .seconds(10), pongTimeout: .seconds(5),
          reconnectMin: .seconds(1), reconnectMax: .seconds(60)),
        rooms: [], backend: S.dialect(transport: .encrypted), random: SplitMix64()))
    link.on(.start)
    link.on(.upgraded(handshake(subprotocol: "xmpp")))
    for frame in S.negotiation() { link.on(.message(.xml(frame))) }
    let ended = moved(&link, to: "ws://evil.example/xmpp-websocket")
    XCTAssertTrue(ended.contains { $0.contains("not protected as wss://chat.example") }, "\(ended)")
    XCTAssertEqual(link.core.connectURL.host, "chat.example")
  }

  func testALoopbackSessionWithoutTLSIsNotMovedOffTheLoopback() {
    var link = ready(transport: .loopback)
    link.on(.message(close(to: "ws://xmpp2.chat.example/xmpp-websocket")))
    let ended = link.on(.ended(closed(.normalClosure)))
    XCTAssertTrue(ended.contains { $0.contains("off the loopback without TLS") }, "\(ended)")
    XCTAssertEqual(link.core.connectURL, testURL)
  }

  func testServersSendingUsRoundInCirclesAreFollowedThreeTimesInARow() {
    var link = ready()
    for n in 1...4 {
      let ended = moved(&link, to: "ws://xmpp\(n).chat.example/xmpp-websocket")
      if n <= 3 {
        XCTAssertEqual(link.core.connectURL.host, "xmpp\(n).chat.example")
      } else {
        XCTAssertTrue(ended.contains { $0.contains("after 3 redirects in a row") }, "\(ended)")
      }
      link.on(.timerFired(.retry))
      link.on(.upgraded(handshake(subprotocol: "xmpp")))
      // Sent on during the negotiation, before any session is ready.
      for frame in S.negotiation().prefix(2) { link.on(.message(.xml(frame))) }
    }
  }

  func testNotAWebSocketURLIsNotFollowed() {
    var link = ready()
    let ended = moved(&link, to: "https://chat.example/")
    XCTAssertTrue(ended.contains { $0.contains("not a ws:// or wss:// URL") }, "\(ended)")
  }
}
