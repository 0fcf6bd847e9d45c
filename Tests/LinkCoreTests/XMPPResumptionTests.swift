import LinkCore
import WebSocket
import XCTest
import XMPP

/// XEP-0198 resumption: after a lost connection the dialect resumes its session with the count
/// of what it read, and falls back to a new session (rooms joined anew) when the server cannot.
final class XMPPResumptionTests: XCTestCase {
  private typealias S = XMPPServer

  /// A dialect whose session is ready, its room joined, and one groupchat message read (the
  /// room's presence and the message: two stanzas).
  private func readyWithOneMessage() -> XMPPProtocol {
    var dialect = S.dialect()
    _ = dialect.open(handshake(subprotocol: "xmpp"))
    for frame in S.negotiation() { _ = dialect.read(.xml(frame)) }
    _ = dialect.join(RoomID(S.room)!)
    _ = dialect.read(.xml(S.selfPresence()))
    XCTAssertNotNil(dialect.read(.xml(S.groupchat("before"))).record)
    return dialect
  }

  /// Opens the next connection and authenticates; returns what the restarted stream's
  /// features made the dialect send.
  private func reconnect(_ dialect: inout XMPPProtocol) -> [String] {
    _ = dialect.open(handshake(subprotocol: "xmpp"))
    for frame in [S.open, S.features(), S.challenge, S.success, S.open] {
      _ = dialect.read(.xml(frame))
    }
    return texts(dialect.read(.xml(S.boundFeatures())).replies)
  }

  func testTheNextConnectionResumesWithTheCountOfStanzasRead() {
    var dialect = readyWithOneMessage()
    XCTAssertEqual(reconnect(&dialect), ["<resume xmlns='urn:xmpp:sm:3' previd='sm-1' h='2'/>"])
  }

  func testAConnectionLostDuringTheAttemptTriesTheSameResumptionAgain() {
    var dialect = readyWithOneMessage()
    XCTAssertEqual(reconnect(&dialect), ["<resume xmlns='urn:xmpp:sm:3' previd='sm-1' h='2'/>"])
    XCTAssertEqual(reconnect(&dialect), ["<resume xmlns='urn:xmpp:sm:3' previd='sm-1' h='2'/>"])
    _ = dialect.read(.xml("<resumed xmlns='urn:xmpp:sm:3' previd='sm-1' h='2'/>"))
    XCTAssertNil(dialect.join(RoomID(S.room)!), "the room kept through both connections")
  }

  func testAResumedSessionKeepsItsRoomsAndCountsOnFromBothSides() {
    var dialect = readyWithOneMessage()
    _ = dialect.encode(entry(1, "lost?", id: "c1", room: "alice@example.org"))
    _ = reconnect(&dialect)
    let resumed = dialect.read(.xml("<resumed xmlns='urn:xmpp:sm:3' previd='sm-1' h='2'/>"))
    XCTAssertEqual(resumed.session, .ready)
    XCTAssertEqual(resumed.replies, [], "the session's presence stands")
    XCTAssertEqual(resumed.notice, .sessionResumed(id: "sm-1"))
    XCTAssertNil(dialect.join(RoomID(S.room)!), "still in the room")
    XCTAssertEqual(
      dialect.read(.xml(S.groupchat("after", id: "m-2", stanzaID: "sid-2"))).acknowledgement?.text,
      "<a xmlns='urn:xmpp:sm:3' h='3'/>", "counting on from the old session's two")
    // The server had two of ours (presence and join); the chat send goes out again as the third.
    _ = dialect.encode(entry(1, "lost?", id: "c1", room: "alice@example.org"))
    XCTAssertEqual(dialect.read(.xml("<a xmlns='urn:xmpp:sm:3' h='3'/>")).delivered, [1])
  }

  func testAResumptionTheServerRefusesBindsANewSessionAndJoinsTheRoomsAgain() {
    var dialect = readyWithOneMessage()
    _ = reconnect(&dialect)
    let failed = dialect.read(
      .xml(
        "<failed xmlns='urn:xmpp:sm:3' h='1'><item-not-found "
          + "xmlns='urn:ietf:params:xml:ns:xmpp-stanzas'/></failed>"))
    XCTAssertEqual(
      texts(failed.replies),
      [
        "<iq xmlns='jabber:client' type='set' id='bind-1'><bind "
          + "xmlns='urn:ietf:params:xml:ns:xmpp-bind'><resource>chatlink-test</resource></bind></iq>"
      ])
    XCTAssertEqual(failed.notice, .resumptionRefused)
    _ = dialect.read(.xml(S.bound))
    let ready = dialect.read(.xml(S.enabled))
    XCTAssertEqual(ready.session, .ready)
    XCTAssertEqual(texts(ready.replies), ["<presence xmlns='jabber:client'/>"])
    XCTAssertNotNil(dialect.join(RoomID(S.room)!), "a new session joins again")
    XCTAssertNil(dialect.read(.xml(S.groupchat("too early"))).record)
  }

  func testAServerThatWillNotResumeGetsANewSessionWithoutAsking() {
    var dialect = S.dialect()
    _ = dialect.open(handshake(subprotocol: "xmpp"))
    for frame in S.negotiation().dropLast() { _ = dialect.read(.xml(frame)) }
    _ = dialect.read(.xml("<enabled xmlns='urn:xmpp:sm:3'/>"))
    XCTAssertEqual(
      reconnect(&dialect),
      [
        "<iq xmlns='jabber:client' type='set' id='bind-1'><bind "
          + "xmlns='urn:ietf:params:xml:ns:xmpp-bind'><resource>chatlink-test</resource></bind></iq>"
      ])
  }

  func testTheLinkResumesAfterALostConnectionWithoutJoiningAgain() {
    var link = Harness(rooms: [S.room], backend: S.dialect())
    link.on(.start)
    link.on(.upgraded(handshake(subprotocol: "xmpp")))
    for frame in S.negotiation() { link.on(.message(.xml(frame))) }
    link.on(.message(.xml(S.selfPresence())))
    link.on(.ended(closed(.abnormalClosure)))
    link.advance(.seconds(2))
    link.on(.timerFired(.retry))
    link.on(.upgraded(handshake(subprotocol: "xmpp")))
    for frame in [S.open, S.features(), S.challenge, S.success, S.open] {
      link.on(.message(.xml(frame)))
    }
    XCTAssertEqual(
      link.on(.message(.xml(S.boundFeatures()))),
      ["send <resume xmlns='urn:xmpp:sm:3' previd='sm-1' h='1'/>"])
    let lines = link.on(.message(.xml("<resumed xmlns='urn:xmpp:sm:3' previd='sm-1' h='2'/>")))
    XCTAssertTrue(lines.contains("state open (connected)"), "\(lines)")
    XCTAssertFalse(lines.contains { $0.hasPrefix("send <presence") }, "\(lines)")
  }
}
