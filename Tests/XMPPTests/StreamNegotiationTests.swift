import WebSocket
import XCTest
import XMPP

/// Whole negotiations as transcripts: the server's frames in, what the client does out.
final class StreamNegotiationTests: XCTestCase {
  private let framing = "urn:ietf:params:xml:ns:xmpp-framing"
  private let sasl = "urn:ietf:params:xml:ns:xmpp-sasl"
  private let jid = "user@example.org/chatlink-0123456789ab"

  private func settings(
    transport: SASLTransport = .plaintext, streamManagement: Bool = true,
    resume: Resumption? = nil
  ) -> NegotiationSettings {
    NegotiationSettings(
      username: "user", domain: "example.org", resource: "chatlink-0123456789ab",
      password: "pencil", transport: transport, streamManagement: streamManagement,
      resume: resume)
  }

  private func negotiation(_ settings: NegotiationSettings) throws -> StreamNegotiation {
    StreamNegotiation(
      settings: settings, clientNonce: "fyko+d2lbbFgONRv9qkxdawL", crypto: try OpenSSLSCRAM.crypto()
    )
  }

  /// What the client does: sends as "> text", the rest as their descriptions.
  private func lines(_ actions: [NegotiationAction]) -> [String] {
    actions.map {
      if case .send(let element) = $0 { return "> " + XMLWriter.string(element) }
      return "\($0)"
    }
  }

  /// Feeds each frame (text) and collects what the client does.
  private func feed(_ negotiation: inout StreamNegotiation, _ frames: [String]) -> [String] {
    var out: [String] = []
    let parser = XMLFrameParser()
    for frame in frames {
      switch parser.parse(frame: Array(frame.utf8)) {
      case .success(let event): out += lines(negotiation.receive(event))
      case .failure(let error): out.append("unparsable: \(error)")
      }
    }
    return out
  }

  private func base64(_ text: String) -> String { Base64.encode(Array(text.utf8)) }

  private var serverOpen: String {
    "<open xmlns='\(framing)' from='example.org' id='s1' version='1.0' xml:lang='en'/>"
  }

  private func features(_ inner: String) -> String {
    "<stream:features xmlns:stream='http://etherx.jabber.org/streams' xmlns='jabber:client'>"
      + inner + "</stream:features>"
  }

  private var scramFeatures: String {
    features(
      "<mechanisms xmlns='\(sasl)'><mechanism>SCRAM-SHA-1</mechanism>"
        + "<mechanism>PLAIN</mechanism></mechanisms>")
  }

  private var boundFeatures: String {
    features(
      "<bind xmlns='urn:ietf:params:xml:ns:xmpp-bind'><required/></bind>"
        + "<session xmlns='urn:ietf:params:xml:ns:xmpp-session'><optional/></session>"
        + "<sm xmlns='urn:xmpp:sm:2'><optional/></sm><sm xmlns='urn:xmpp:sm:3'><optional/></sm>")
  }

  /// The RFC 5802 exchange, the restart, up to the second features.
  private var authenticated: [String] {
    [
      serverOpen, scramFeatures,
      "<challenge xmlns='\(sasl)'>"
        + base64("r=fyko+d2lbbFgONRv9qkxdawL3rfcNHYJY1ZVvWVs7j,s=QSXCR+Q6sek8bf92,i=4096")
        + "</challenge>",
      "<success xmlns='\(sasl)'>" + base64("v=rmF9pqV8S7suAoZWja4dJRkFsKQ=") + "</success>",
      serverOpen,
    ]
  }

  private var authenticatedLines: [String] {
    [
      "> <auth xmlns='\(sasl)' mechanism='SCRAM-SHA-1'>"
        + base64("n,,n=user,r=fyko+d2lbbFgONRv9qkxdawL") + "</auth>",
      "> <response xmlns='\(sasl)'>"
        + base64(
          "c=biws,r=fyko+d2lbbFgONRv9qkxdawL3rfcNHYJY1ZVvWVs7j,p=v0X8v3Bz2T0CJGbJQyF0X+HI4Ts=")
        + "</response>",
      "authenticated(mechanism: \"SCRAM-SHA-1\")",
      "> <open xmlns='\(framing)' to='example.org' version='1.0'/>",
    ]
  }

  private let bindRequest =
    "> <iq xmlns='jabber:client' type='set' id='bind-1'><bind xmlns='urn:ietf:params:xml:ns:xmpp-bind'>"
    + "<resource>chatlink-0123456789ab</resource></bind></iq>"

  private var bindResult: String {
    "<iq xmlns='jabber:client' type='result' id='bind-1'>"
      + "<bind xmlns='urn:ietf:params:xml:ns:xmpp-bind'><jid>\(jid)</jid></bind></iq>"
  }

  func testAFullNegotiationOpensAuthenticatesWithSCRAMRestartsBindsAndEnablesStreamManagement()
    throws
  {
    var negotiation = try negotiation(settings())
    XCTAssertEqual(
      lines(negotiation.start()), ["> <open xmlns='\(framing)' to='example.org' version='1.0'/>"])
    let transcript = feed(
      &negotiation,
      authenticated + [
        boundFeatures, bindResult,
        "<enabled xmlns='urn:xmpp:sm:3' id='sm-1' resume='true' max='600'/>",
      ])
    let session = NegotiatedSession(
      jid: jid, streamManagement: StreamManagement(id: "sm-1", maxSeconds: 600))
    XCTAssertEqual(
      transcript,
      authenticatedLines + [
        bindRequest, "> <enable xmlns='urn:xmpp:sm:3' resume='true'/>",
        "\(NegotiationAction.ready(session))",
      ])
    XCTAssertTrue(negotiation.isFinished)
  }

  func testWithoutStreamManagementOfferedTheSessionIsReadyAfterTheBind() throws {
    var negotiation = try negotiation(settings())
    _ = negotiation.start()
    let transcript = feed(
      &negotiation,
      authenticated + [
        features("<bind xmlns='urn:ietf:params:xml:ns:xmpp-bind'/>"), bindResult,
      ])
    XCTAssertEqual(
      transcript.suffix(2),
      [bindRequest, "\(NegotiationAction.ready(NegotiatedSession(jid: jid)))"])
  }

  func testARefusedEnableLeavesASessionWithoutStreamManagementAndSaysWhy() throws {
    var negotiation = try negotiation(settings())
    _ = negotiation.start()
    let transcript = feed(
      &negotiation,
      authenticated + [
        boundFeatures, bindResult,
        "<failed xmlns='urn:xmpp:sm:3'><unexpected-request xmlns='urn:ietf:params:xml:ns:xmpp-stanzas'/></failed>",
      ])
    let session = NegotiatedSession(
      jid: jid, note: "stream management refused: unexpected-request")
    XCTAssertEqual(transcript.last, "\(NegotiationAction.ready(session))")
  }

  func testARequiredLegacySessionIsEstablishedAfterTheBind() throws {
    var negotiation = try negotiation(settings(streamManagement: false))
    _ = negotiation.start()
    let transcript = feed(
      &negotiation,
      authenticated + [
        features(
          "<bind xmlns='urn:ietf:params:xml:ns:xmpp-bind'/>"
            + "<session xmlns='urn:ietf:params:xml:ns:xmpp-session'/><sm xmlns='urn:xmpp:sm:3'/>"),
        bindResult, "<iq xmlns='jabber:client' type='result' id='session-1'/>",
      ])
    XCTAssertEqual(
      transcript.suffix(3),
      [
        bindRequest,
        "> <iq xmlns='jabber:client' type='set' id='session-1'>"
          + "<session xmlns='urn:ietf:params:xml:ns:xmpp-session'/></iq>",
        "\(NegotiationAction.ready(NegotiatedSession(jid: jid)))",
      ])
  }

  func testAResumptionTheServerAcceptsEndsWithItsCountOfOurStanzas() throws {
    let resume = Resumption(id: "sm-1", jid: jid, handled: 17)
    var negotiation = try negotiation(settings(resume: resume))
    _ = negotiation.start()
    let transcript = feed(
      &negotiation,
      authenticated + [boundFeatures, "<resumed xmlns='urn:xmpp:sm:3' previd='sm-1' h='5'/>"])
    let session = NegotiatedSession(
      jid: jid, streamManagement: StreamManagement(id: "sm-1"), resumedWithServerHandled: 5)
    XCTAssertEqual(
      transcript.suffix(2),
      [
        "> <resume xmlns='urn:xmpp:sm:3' previd='sm-1' h='17'/>",
        "\(NegotiationAction.ready(session))",
      ])
  }

  func testARefusedResumptionIsReportedThenANewSessionIsBoundAndEnabled() throws {
    var negotiation = try negotiation(
      settings(resume: Resumption(id: "gone", jid: jid, handled: 3)))
    _ = negotiation.start()
    let transcript = feed(
      &negotiation,
      authenticated + [
        boundFeatures,
        "<failed xmlns='urn:xmpp:sm:3' h='2'><item-not-found xmlns='urn:ietf:params:xml:ns:xmpp-stanzas'/></failed>",
        bindResult, "<enabled xmlns='urn:xmpp:sm:3' id='sm-2' resume='1'/>",
      ])
    XCTAssertEqual(
      transcript.suffix(5),
      [
        "> <resume xmlns='urn:xmpp:sm:3' previd='gone' h='3'/>",
        "\(NegotiationAction.resumptionRefused(serverHandled: 2))", bindRequest,
        "> <enable xmlns='urn:xmpp:sm:3' resume='true'/>",
        "\(NegotiationAction.ready(NegotiatedSession(jid: jid, streamManagement: StreamManagement(id: "sm-2"))))",
      ])
  }

  func testAResumedAnswerForAnotherSessionFailsTheNegotiation() throws {
    var negotiation = try negotiation(
      settings(resume: Resumption(id: "sm-1", jid: jid, handled: 0)))
    _ = negotiation.start()
    let transcript = feed(
      &negotiation,
      authenticated + [boundFeatures, "<resumed xmlns='urn:xmpp:sm:3' previd='other' h='1'/>"])
    XCTAssertEqual(
      transcript.last,
      "\(NegotiationAction.failed(.unexpected("<resumed xmlns='urn:xmpp:sm:3'/> without our previd and h")))"
    )
  }

  func testPlainOverLoopbackAuthenticatesWithTheCredentials() throws {
    var negotiation = try negotiation(settings(transport: .loopback))
    _ = negotiation.start()
    let transcript = feed(
      &negotiation,
      [
        serverOpen,
        features("<mechanisms xmlns='\(sasl)'><mechanism>PLAIN</mechanism></mechanisms>"),
        "<success xmlns='\(sasl)'/>",
      ])
    XCTAssertEqual(
      transcript,
      [
        "> <auth xmlns='\(sasl)' mechanism='PLAIN'>"
          + Base64.encode([0] + Array("user".utf8) + [0] + Array("pencil".utf8)) + "</auth>",
        "authenticated(mechanism: \"PLAIN\")",
        "> <open xmlns='\(framing)' to='example.org' version='1.0'/>",
      ])
  }

  func testOnlyPlainOverPlaintextFailsWithoutSendingThePassword() throws {
    var negotiation = try negotiation(settings(transport: .plaintext))
    _ = negotiation.start()
    let transcript = feed(
      &negotiation,
      [
        serverOpen,
        features("<mechanisms xmlns='\(sasl)'><mechanism>PLAIN</mechanism></mechanisms>"),
      ])
    XCTAssertEqual(
      transcript, ["\(NegotiationAction.failed(.sasl(.noMechanism(offered: ["PLAIN"]))))"])
  }

  func testAWrongPasswordIsARefusalWithTheServersWords() throws {
    var negotiation = try negotiation(settings())
    _ = negotiation.start()
    let transcript = feed(
      &negotiation,
      [
        serverOpen, scramFeatures,
        "<failure xmlns='\(sasl)'><not-authorized/><text>Invalid username or password</text></failure>",
      ])
    XCTAssertEqual(
      transcript.last,
      "\(NegotiationAction.refused(SASLFailure(condition: "not-authorized", text: "Invalid username or password")))"
    )
    XCTAssertTrue(negotiation.isFinished)
  }

  func testAStreamErrorFailsTheNegotiationWithItsConditionAndText() throws {
    var negotiation = try negotiation(settings())
    _ = negotiation.start()
    let transcript = feed(
      &negotiation,
      [
        serverOpen,
        "<stream:error xmlns:stream='http://etherx.jabber.org/streams'><host-unknown xmlns='urn:ietf:params:xml:ns:xmpp-streams'/>"
          + "<text xmlns='urn:ietf:params:xml:ns:xmpp-streams'>no such domain</text></stream:error>",
      ])
    XCTAssertEqual(
      transcript,
      [
        "\(NegotiationAction.failed(.streamError(condition: "host-unknown", text: "no such domain")))"
      ])
  }

  func testACloseWithSeeOtherURIIsReportedSoTheDriverCanFollowIt() throws {
    var negotiation = try negotiation(settings())
    _ = negotiation.start()
    XCTAssertEqual(
      feed(&negotiation, ["<close xmlns='\(framing)' see-other-uri='wss://b.example.org/ws'/>"]),
      ["\(NegotiationAction.closed(seeOtherURI: "wss://b.example.org/ws"))"])
  }

  func testARefusedBindFailsWithTheStanzaErrorCondition() throws {
    var negotiation = try negotiation(settings())
    _ = negotiation.start()
    let transcript = feed(
      &negotiation,
      authenticated + [
        boundFeatures,
        "<iq xmlns='jabber:client' type='error' id='bind-1'><error type='cancel'>"
          + "<conflict xmlns='urn:ietf:params:xml:ns:xmpp-stanzas'/></error></iq>",
      ])
    XCTAssertEqual(
      transcript.last, "\(NegotiationAction.failed(.bindRefused(condition: "conflict")))")
  }

  func testFeaturesWithoutBindingAfterAuthenticationFail() throws {
    var negotiation = try negotiation(settings())
    _ = negotiation.start()
    let transcript = feed(&negotiation, authenticated + [features("")])
    XCTAssertEqual(transcript.last, "\(NegotiationAction.failed(.noBinding))")
  }

  func testAnOpenWithoutVersionOneIsRefused() throws {
    var negotiation = try negotiation(settings())
    _ = negotiation.start()
    XCTAssertEqual(
      feed(&negotiation, ["<open xmlns='\(framing)' from='example.org'/>"]),
      ["\(NegotiationAction.failed(.badOpen("version none, not 1.0")))"])
  }

  func testAStanzaOutOfPlaceFailsTheNegotiation() throws {
    var negotiation = try negotiation(settings())
    _ = negotiation.start()
    XCTAssertEqual(
      feed(
        &negotiation, [serverOpen, "<message xmlns='jabber:client'><body>early</body></message>"]),
      ["\(NegotiationAction.failed(.unexpected("<message xmlns='jabber:client'/>")))"])
    var again = try self.negotiation(settings())
    _ = again.start()
    XCTAssertEqual(
      feed(&again, [serverOpen, serverOpen]),
      ["\(NegotiationAction.failed(.unexpected("a second <open/>")))"])
  }

  func testErrorsDescribeThemselvesForTheLog() {
    XCTAssertEqual(
      NegotiationError.streamError(condition: "conflict", text: "replaced").description,
      "stream error from the server: conflict (replaced)")
    XCTAssertEqual(
      NegotiationError.bindRefused(condition: "not-allowed").description,
      "the server refused the resource binding: not-allowed")
  }
}
