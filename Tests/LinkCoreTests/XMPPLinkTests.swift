import LinkCore
import WebSocket
import XCTest
import XMPP

/// The link core driving the XMPP dialect: the negotiation as the set-up, joins after it,
/// XEP-0198 acknowledgements only once records are durable.
final class XMPPLinkTests: XCTestCase {
  private typealias S = XMPPServer

  /// A link whose session is ready and whose room confirmed the join.
  private func ready() -> Harness {
    var link = Harness(rooms: [S.room], backend: S.dialect())
    link.on(.start)
    link.on(.upgraded(handshake(subprotocol: "xmpp")))
    for frame in S.negotiation() { link.on(.message(.xml(frame))) }
    link.on(.positions([:]))
    link.on(.message(.xml(S.selfPresence())))
    return link
  }

  func testTheNegotiationIsTheSetUpAndTheRoomsAreJoinedOnceTheStoreSaidTheirNewestIDs() {
    var link = Harness(rooms: [S.room], backend: S.dialect())
    link.on(.start)
    XCTAssertEqual(
      link.on(.upgraded(handshake(subprotocol: "xmpp"))).dropFirst(),
      [
        "send <open xmlns='urn:ietf:params:xml:ns:xmpp-framing' to='example.org' version='1.0'/>",
        "arm pongDeadline 5", "state upgrading (setting up the backend session)",
      ])
    for frame in S.negotiation().dropLast() { link.on(.message(.xml(frame))) }
    XCTAssertEqual(
      link.on(.message(.xml(S.enabled))),
      [
        "send <presence xmlns='jabber:client'/>", "disarm pongDeadline", "state open (connected)",
        "request positions lobby@conference.example.org", "request outbox", "arm keepalive 10",
      ])
    XCTAssertEqual(
      link.on(.positions([:])),
      [
        "send <presence xmlns='jabber:client' to='lobby@conference.example.org/user'><x "
          + "xmlns='http://jabber.org/protocol/muc'><history maxstanzas='0'/></x></presence>"
      ], "a room never stored: joined without an archive query to come")
  }

  func testAcknowledgementsWaitForDurabilityAndOnlyTheLastOfThoseReleasedTogetherGoesOut() {
    var link = ready()
    XCTAssertEqual(
      link.on(.message(.xml(S.groupchat("one", id: "m-1", stanzaID: "s-1")))).prefix(2),
      [
        "await durability",
        "store {\"body\":\"one\",\"from\":\"lobby@conference.example.org/alice\",\"id\":\"m-1\","
          + "\"type\":\"groupchat\",\"nick\":\"alice\",\"stanza_id\":\"s-1\"} (ack held)",
      ])
    link.on(.message(.xml(S.groupchat("two", id: "m-2", stanzaID: "s-2"))))
    link.on(.stored(seq: 1))
    link.on(.stored(seq: 2))
    XCTAssertEqual(
      link.on(.durable(through: 2)),
      ["send <a xmlns='urn:xmpp:sm:3' h='3'/>", "durability not awaited"])
  }

  func testAcknowledgementsThatBecomeDurableAfterOurCloseAreNotSentAfterIt() {
    var link = ready()
    link.on(.message(.xml(S.groupchat("one", id: "m-1", stanzaID: "s-1"))))
    link.on(.stored(seq: 1))
    XCTAssertTrue(
      link.on(.stop).contains("send <close xmlns='urn:ietf:params:xml:ns:xmpp-framing'/>"))
    XCTAssertEqual(link.on(.durable(through: 1)), ["durability not awaited"])
  }

  func testTheAnswerToTheServersRequestWaitsBehindRecordsNotYetDurable() {
    var link = ready()
    link.on(.message(.xml(S.groupchat("one"))))
    XCTAssertFalse(
      link.on(.message(.xml("<r xmlns='urn:xmpp:sm:3'/>"))).contains { $0.hasPrefix("send") },
      "h=2 would claim a record the store may still lose")
    link.on(.stored(seq: 1))
    XCTAssertEqual(
      link.on(.durable(through: 1)),
      ["send <a xmlns='urn:xmpp:sm:3' h='2'/>", "durability not awaited"])
    XCTAssertEqual(
      link.on(.message(.xml("<r xmlns='urn:xmpp:sm:3'/>"))).first,
      "send <a xmlns='urn:xmpp:sm:3' h='2'/>", "nothing waits: answered at once")
  }

  func testTheKeepaliveIsARequestAnsweredByTheServersCount() {
    var link = ready()
    link.advance(.seconds(10))
    XCTAssertEqual(
      link.on(.timerFired(.keepalive)),
      ["arm keepalive 10", "send <r xmlns='urn:xmpp:sm:3'/>", "arm pongDeadline 5"])
    link.on(.message(.xml("<a xmlns='urn:xmpp:sm:3' h='2'/>")))
    link.advance(.seconds(5))
    XCTAssertFalse(
      link.on(.timerFired(.pongDeadline)).contains { $0.hasPrefix("drop") },
      "the <a/> answered the request")
    link.advance(.seconds(10))
    link.on(.timerFired(.keepalive))
    link.advance(.seconds(5))
    XCTAssertTrue(
      link.on(.timerFired(.pongDeadline)).contains { $0.hasPrefix("drop") },
      "no <a/> within PongTimeoutSec=: the server is gone")
  }

  func testAFailedLoginIsARefusalRetriedSlowly() {
    var link = Harness(rooms: [S.room], backend: S.dialect())
    link.on(.start)
    link.on(.upgraded(handshake(subprotocol: "xmpp")))
    link.on(.message(.xml(S.open)))
    link.on(.message(.xml(S.features())))
    let lines = link.on(
      .message(
        .xml(
          "<failure xmlns='urn:ietf:params:xml:ns:xmpp-sasl'><not-authorized/></failure>")))
    XCTAssertEqual(lines.last, "close 1000 session refused")
    XCTAssertTrue(
      link.on(.ended(closed(.normalClosure))).contains("arm retry 60"),
      "a refusal waits ReconnectMaxSec=, like HTTP 401")
    XCTAssertEqual(
      link.core.lastError,
      "the backend refused the session: the XMPP server refused the login of user@example.org: not-authorized; check [XMPP] "
        + "JID= and TokenFile=")
  }

  func testStoppingEndsTheStreamWithACloseBeforeTheWebSocketCloses() {
    var link = ready()
    XCTAssertEqual(
      link.on(.stop).filter { $0.hasPrefix("send") || $0.hasPrefix("close") },
      ["send <close xmlns='urn:ietf:params:xml:ns:xmpp-framing'/>", "close 1001 shutting down"])
  }
}
