import WebSocket
import XCTest
import XMPP

final class SASLNegotiationTests: XCTestCase {
  private let sasl = SASLNegotiation.namespace

  private func element(_ name: String, _ data: String) -> XMLElement {
    XMLElement(name, namespace: sasl, text: Base64.encode(Array(data.utf8)))
  }

  private func decoded(_ element: XMLElement) -> String? {
    Base64.decode(element.text).map { String(decoding: $0, as: UTF8.self) }
  }

  private func negotiation(
    _ offered: [String], transport: SASLTransport = .plaintext,
    nonce: String = "fyko+d2lbbFgONRv9qkxdawL"
  ) throws -> SASLNegotiation {
    try SASLNegotiation(
      offered: offered, username: "user", password: "pencil", transport: transport,
      clientNonce: nonce, crypto: try OpenSSLSCRAM.crypto())
  }

  func testSCRAMSHA256IsPreferredThenSCRAMSHA1ThenPlain() {
    let all = ["PLAIN", "SCRAM-SHA-1", "SCRAM-SHA-256"]
    XCTAssertEqual(SASLMechanism.choose(offered: all, transport: .encrypted), .scram(.sha256))
    XCTAssertEqual(
      SASLMechanism.choose(offered: ["PLAIN", "SCRAM-SHA-1"], transport: .encrypted), .scram(.sha1))
    XCTAssertEqual(SASLMechanism.choose(offered: ["PLAIN"], transport: .encrypted), .plain)
    XCTAssertEqual(SASLMechanism.choose(offered: ["PLAIN"], transport: .loopback), .plain)
    XCTAssertNil(SASLMechanism.choose(offered: ["DIGEST-MD5", "X-OAUTH2"], transport: .encrypted))
  }

  func testPlainIsNeverChosenOverPlaintextToAnotherHost() {
    XCTAssertNil(SASLMechanism.choose(offered: ["PLAIN"], transport: .plaintext))
    XCTAssertThrowsError(try negotiation(["PLAIN"])) {
      XCTAssertEqual($0 as? SASLError, .noMechanism(offered: ["PLAIN"]))
      XCTAssertEqual(
        ($0 as? SASLError)?.description,
        "no usable SASL mechanism among [PLAIN] (PLAIN only over wss:// or loopback)")
    }
  }

  func testTheTransportFollowsTheSchemeAndTheHost() {
    XCTAssertEqual(SASLTransport(secure: true, host: "xmpp.example.org"), .encrypted)
    for host in ["127.0.0.1", "127.1.2.3", "localhost", "LOCALHOST", "a.localhost", "::1", "[::1]"]
    {
      XCTAssertEqual(SASLTransport(secure: false, host: host), .loopback, host)
    }
    for host in [
      "example.org", "10.0.0.1", "127.0.0.1.example.org", "localhost.example.org", "::2",
      "1270.0.0.1",
    ] {
      XCTAssertEqual(SASLTransport(secure: false, host: host), .plaintext, host)
    }
  }

  func testTheOfferedMechanismsAreReadFromTheFeatures() throws {
    guard
      case .success(.stanza(let features)) = XMLFrameParser().parse(
        frame: Array(ProsodyFrames.features.utf8))
    else { return XCTFail() }
    XCTAssertEqual(SASLNegotiation.offered(in: features), ["SCRAM-SHA-1", "PLAIN"])
    XCTAssertEqual(SASLNegotiation.offered(in: XMLElement("features")), [])
  }

  /// The RFC 5802 exchange as XMPP carries it, the server-final in `<success/>`.
  func testASCRAMExchangeEndsInSuccessWithTheServersSignature() throws {
    var negotiation = try negotiation(["SCRAM-SHA-1", "PLAIN"])
    let auth = negotiation.start()
    XCTAssertEqual(auth.name, "auth")
    XCTAssertEqual(auth.attribute("mechanism"), "SCRAM-SHA-1")
    XCTAssertEqual(decoded(auth), "n,,n=user,r=fyko+d2lbbFgONRv9qkxdawL")
    let challenge = element(
      "challenge", "r=fyko+d2lbbFgONRv9qkxdawL3rfcNHYJY1ZVvWVs7j,s=QSXCR+Q6sek8bf92,i=4096")
    guard case .send(let response) = negotiation.receive(challenge) else { return XCTFail() }
    XCTAssertEqual(response.name, "response")
    XCTAssertEqual(
      decoded(response),
      "c=biws,r=fyko+d2lbbFgONRv9qkxdawL3rfcNHYJY1ZVvWVs7j,p=v0X8v3Bz2T0CJGbJQyF0X+HI4Ts=")
    XCTAssertEqual(
      negotiation.receive(element("success", "v=rmF9pqV8S7suAoZWja4dJRkFsKQ=")), .succeeded)
  }

  func testAServerFinalSentAsAChallengeIsAnsweredEmptyThenSuccessSuffices() throws {
    var negotiation = try negotiation(["SCRAM-SHA-1"])
    _ = negotiation.start()
    _ = negotiation.receive(
      element("challenge", "r=fyko+d2lbbFgONRv9qkxdawL3rfcNHYJY1ZVvWVs7j,s=QSXCR+Q6sek8bf92,i=4096")
    )
    XCTAssertEqual(
      negotiation.receive(element("challenge", "v=rmF9pqV8S7suAoZWja4dJRkFsKQ=")),
      .send(XMLElement("response", namespace: sasl)))
    XCTAssertEqual(negotiation.receive(XMLElement("success", namespace: sasl)), .succeeded)
  }

  func testASuccessWithoutTheServersSignatureIsNotTrusted() throws {
    var negotiation = try negotiation(["SCRAM-SHA-1"])
    _ = negotiation.start()
    _ = negotiation.receive(
      element("challenge", "r=fyko+d2lbbFgONRv9qkxdawL3rfcNHYJY1ZVvWVs7j,s=QSXCR+Q6sek8bf92,i=4096")
    )
    XCTAssertEqual(
      negotiation.receive(XMLElement("success", namespace: sasl, text: "=")),
      .failed(.malformedChallenge("a success without the server's signature")))
  }

  func testAWrongServerSignatureFailsTheExchange() throws {
    var negotiation = try negotiation(["SCRAM-SHA-1"])
    _ = negotiation.start()
    _ = negotiation.receive(
      element("challenge", "r=fyko+d2lbbFgONRv9qkxdawL3rfcNHYJY1ZVvWVs7j,s=QSXCR+Q6sek8bf92,i=4096")
    )
    XCTAssertEqual(
      negotiation.receive(element("success", "v=AAAAAAAAAAAAAAAAAAAAAAAAAAA=")),
      .failed(.serverSignatureMismatch))
  }

  func testPlainSendsTheCredentialsAndSucceeds() throws {
    var negotiation = try negotiation(["PLAIN"], transport: .loopback)
    let auth = negotiation.start()
    XCTAssertEqual(auth.attribute("mechanism"), "PLAIN")
    XCTAssertEqual(Base64.decode(auth.text), [0] + Array("user".utf8) + [0] + Array("pencil".utf8))
    XCTAssertEqual(negotiation.receive(XMLElement("success", namespace: sasl)), .succeeded)
  }

  func testAFailureIsARefusalWithTheServersConditionAndText() throws {
    var negotiation = try negotiation(["SCRAM-SHA-1"])
    _ = negotiation.start()
    let frame =
      "<failure xmlns='urn:ietf:params:xml:ns:xmpp-sasl'><not-authorized/>"
      + "<text xml:lang='en'>Unable to authorize you with the authentication credentials you've sent.</text></failure>"
    guard case .success(.stanza(let failure)) = XMLFrameParser().parse(frame: Array(frame.utf8))
    else { return XCTFail() }
    let outcome = negotiation.receive(failure)
    let expected = SASLFailure(
      condition: "not-authorized",
      text: "Unable to authorize you with the authentication credentials you've sent.")
    XCTAssertEqual(outcome, .refused(expected))
    XCTAssertEqual(expected.description, "not-authorized: " + expected.text!)
    XCTAssertEqual(
      negotiation.receive(XMLElement("failure", namespace: sasl)),
      .refused(SASLFailure(condition: "not-authorized")))
  }

  func testUnexpectedElementsFailTheExchange() throws {
    var negotiation = try negotiation(["SCRAM-SHA-1"])
    _ = negotiation.start()
    XCTAssertEqual(
      negotiation.receive(XMLElement("message", namespace: "jabber:client")),
      .failed(.unexpected("<message xmlns='jabber:client'/>")))
    XCTAssertEqual(
      negotiation.receive(XMLElement("abort", namespace: sasl)), .failed(.unexpected("<abort/>")))
    XCTAssertEqual(
      negotiation.receive(XMLElement("challenge", namespace: sasl, text: "!!")),
      .failed(.malformedChallenge("the challenge is not base64")))
    var plain = try self.negotiation(["PLAIN"], transport: .encrypted)
    _ = plain.start()
    XCTAssertEqual(
      plain.receive(element("challenge", "x")), .failed(.unexpected("a challenge to PLAIN")))
  }
}
