import LinkCore
import WebSocket
import XCTest
import XMPP

/// The XMPP dialect on its own: the negotiation, the rooms, what each stanza becomes.
final class XMPPProtocolTests: XCTestCase {
  private typealias S = XMPPServer

  /// The frames of a reading's replies, as text.
  /// A dialect through the whole negotiation, its rooms' joins sent and confirmed.
  private func ready(
    streamManagement: Bool = true, rooms: [String] = [XMPPServer.room]
  ) -> XMPPProtocol {
    var dialect = S.dialect()
    _ = dialect.open(handshake(subprotocol: "xmpp"))
    var last = ProtocolReading(record: nil)
    for frame in S.negotiation(streamManagement: streamManagement) {
      last = dialect.read(.xml(frame))
    }
    XCTAssertEqual(last.session, .ready)
    for room in rooms {
      _ = dialect.join(RoomID(room)!)
      _ = dialect.read(.xml(S.selfPresence(room)))
    }
    return dialect
  }

  func testTheSessionOpensAuthenticatesWithSCRAMBindsAndEnablesResumption() {
    var dialect = S.dialect()
    XCTAssertEqual(dialect.offeredSubprotocols, ["xmpp"])
    let opening = dialect.open(handshake(subprotocol: "xmpp"))
    XCTAssertFalse(opening.ready)
    XCTAssertEqual(
      texts(opening.frames),
      ["<open xmlns='urn:ietf:params:xml:ns:xmpp-framing' to='example.org' version='1.0'/>"])
    XCTAssertEqual(dialect.read(.xml(S.open)).replies, [])
    XCTAssertEqual(
      texts(dialect.read(.xml(S.features())).replies),
      [
        "<auth xmlns='urn:ietf:params:xml:ns:xmpp-sasl' mechanism='SCRAM-SHA-1'>"
          + S.b64("n,,n=user,r=fyko+d2lbbFgONRv9qkxdawL") + "</auth>"
      ])
    // RFC 5802 §5's proof, from OpenSSL's PBKDF2 and HMAC.
    XCTAssertEqual(
      texts(dialect.read(.xml(S.challenge)).replies),
      [
        "<response xmlns='urn:ietf:params:xml:ns:xmpp-sasl'>"
          + S.b64(
            "c=biws,r=fyko+d2lbbFgONRv9qkxdawL3rfcNHYJY1ZVvWVs7j,p=v0X8v3Bz2T0CJGbJQyF0X+HI4Ts=")
          + "</response>"
      ])
    XCTAssertEqual(
      texts(dialect.read(.xml(S.success)).replies),
      ["<open xmlns='urn:ietf:params:xml:ns:xmpp-framing' to='example.org' version='1.0'/>"])
    XCTAssertEqual(dialect.read(.xml(S.open)).replies, [])
    XCTAssertEqual(
      texts(dialect.read(.xml(S.boundFeatures())).replies),
      [
        "<iq xmlns='jabber:client' type='set' id='bind-1'><bind "
          + "xmlns='urn:ietf:params:xml:ns:xmpp-bind'><resource>chatlink-test</resource></bind></iq>"
      ])
    XCTAssertEqual(
      texts(dialect.read(.xml(S.bound)).replies), ["<enable xmlns='urn:xmpp:sm:3' resume='true'/>"])
    XCTAssertNil(dialect.session)
    let enabled = dialect.read(.xml(S.enabled))
    XCTAssertEqual(enabled.session, .ready)
    XCTAssertEqual(texts(enabled.replies), ["<presence xmlns='jabber:client'/>"])
    XCTAssertEqual(dialect.session?.id, S.fullJID)
    XCTAssertFalse(dialect.confirmsByPong)
    XCTAssertEqual(dialect.heartbeat().flatMap(\.text), "<r xmlns='urn:xmpp:sm:3'/>")
  }

  func testWithoutStreamManagementPongsConfirmAndWebSocketPingsProbe() {
    var dialect = ready(streamManagement: false)
    XCTAssertTrue(dialect.confirmsByPong)
    XCTAssertNil(dialect.heartbeat())
    let reading = dialect.read(.xml(S.groupchat("hi")))
    XCTAssertNotNil(reading.record)
    XCTAssertNil(reading.acknowledgement)
  }

  func testAFailureRefusesTheSessionWithTheServersText() {
    var dialect = S.dialect()
    _ = dialect.open(handshake(subprotocol: "xmpp"))
    _ = dialect.read(.xml(S.open))
    _ = dialect.read(.xml(S.features()))
    let reading = dialect.read(
      .xml(
        "<failure xmlns='urn:ietf:params:xml:ns:xmpp-sasl'><not-authorized/>"
          + "<text>Unable to authorize you with the authentication credentials you've sent.</text>"
          + "</failure>"))
    XCTAssertEqual(
      reading.session,
      .refused(
        "the XMPP server refused the login of user@example.org: not-authorized: Unable to "
          + "authorize you with the authentication credentials you've sent.; check [XMPP] JID= "
          + "and TokenFile="))
  }

  func testPlainIsNeverOfferedThePasswordOverPlaintextToAnotherHost() {
    var dialect = S.dialect(transport: .plaintext)
    _ = dialect.open(handshake(subprotocol: "xmpp"))
    _ = dialect.read(.xml(S.open))
    let reading = dialect.read(.xml(S.features(["PLAIN"])))
    XCTAssertEqual(reading.replies, [])
    XCTAssertEqual(
      reading.session,
      .broken(
        "XMPP stream negotiation: SASL: no usable SASL mechanism among [PLAIN] (PLAIN only "
          + "over wss:// or loopback)"))
  }

  func testPlainIsUsedOverLoopbackWhenNoSCRAMIsOffered() {
    var dialect = S.dialect(transport: .loopback)
    _ = dialect.open(handshake(subprotocol: "xmpp"))
    _ = dialect.read(.xml(S.open))
    XCTAssertEqual(
      texts(dialect.read(.xml(S.features(["PLAIN"]))).replies),
      [
        "<auth xmlns='urn:ietf:params:xml:ns:xmpp-sasl' mechanism='PLAIN'>"
          + Base64.encode([0] + Array("user".utf8) + [0] + Array("pencil".utf8)) + "</auth>"
      ])
  }

  func testADoctypeOrAnEntityBreaksTheSessionAndNothingIsStored() {
    var dialect = ready()
    let bomb =
      "<!DOCTYPE m [<!ENTITY a 'aaaaaaaa'><!ENTITY b '&a;&a;&a;&a;'>]>"
      + S.groupchat("&b;")
    let reading = dialect.read(.xml(bomb))
    XCTAssertNil(reading.record)
    XCTAssertEqual(
      reading.session,
      .broken("the XMPP server sent a DOCTYPE in the XML stream (DTDs are forbidden in XMPP)"))
  }

  func testAnOversizedFrameBreaksTheSession() {
    var dialect = XMPPProtocol(
      S.settings { $0.maxFrameBytes = 64 }, services: S.services())
    _ = dialect.open(handshake(subprotocol: "xmpp"))
    let reading = dialect.read(.xml(S.features() + String(repeating: " ", count: 100)))
    XCTAssertEqual(
      reading.session, .broken("the XMPP server sent an XML frame over the 64-byte limit"))
  }

  func testAStreamErrorEndsTheSessionWithItsConditionAndBlamesNoProtocol() {
    var dialect = ready()
    let reading = dialect.read(
      .xml(
        "<stream:error xmlns:stream='http://etherx.jabber.org/streams'><system-shutdown "
          + "xmlns='urn:ietf:params:xml:ns:xmpp-streams'/></stream:error>"))
    XCTAssertEqual(
      reading.session, .ended("stream error from the XMPP server: system-shutdown"))
    var link = Harness(rooms: [], backend: S.dialect())
    link.on(.start)
    link.on(.upgraded(handshake(subprotocol: "xmpp")))
    for frame in S.negotiation() { link.on(.message(.xml(frame))) }
    XCTAssertEqual(
      link.on(
        .message(
          .xml(
            "<stream:error xmlns:stream='http://etherx.jabber.org/streams'><conflict "
              + "xmlns='urn:ietf:params:xml:ns:xmpp-streams'/><text xmlns='urn:ietf:params:xml:ns:"
              + "xmpp-streams'>Replaced by new connection</text></stream:error>"))),
      ["close 1000 session ended"])
    let ended = link.on(.ended(closed(.normalClosure)))
    XCTAssertTrue(
      ended.contains {
        $0.contains(
          "the backend ended the session: stream error from the XMPP server: conflict "
            + "(Replaced by new connection)")
      }, "\(ended)")
    XCTAssertEqual(link.core.counters.endings["session_ended"], 1)
  }

  func testStanzasRoutedToTheBoundResourceBeforeEnabledAreTheSessionsNotAFault() {
    var dialect = S.dialect()
    _ = dialect.open(handshake(subprotocol: "xmpp"))
    for frame in S.negotiation().dropLast() { _ = dialect.read(.xml(frame)) }
    let early = dialect.read(.xml(S.groupchat("to a session the server kept")))
    XCTAssertNil(early.session)
    XCTAssertNil(early.record, "no room joined on this session yet: the archive has it")
    let ping = dialect.read(
      .xml(
        "<iq xmlns='jabber:client' from='example.org' type='get' id='p-9'><ping "
          + "xmlns='urn:xmpp:ping'/></iq>"))
    XCTAssertEqual(
      texts(ping.replies), ["<iq xmlns='jabber:client' type='result' id='p-9' to='example.org'/>"])
    XCTAssertNil(ping.session)
    XCTAssertEqual(dialect.read(.xml(S.enabled)).session, .ready)
    XCTAssertEqual(
      dialect.read(.xml("<r xmlns='urn:xmpp:sm:3'/>")).afterStored?.text,
      "<a xmlns='urn:xmpp:sm:3' h='0'/>", "what came before <enabled/> is not counted")
  }
}
