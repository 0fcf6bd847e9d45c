import XCTest
import XMPP

/// The parser and the negotiation against what a real Prosody sent (`ProsodyTranscripts`).
final class ProsodyTranscriptTests: XCTestCase {
  private typealias Line = ProsodyTranscripts.Line

  private func settings(_ transport: SASLTransport) -> NegotiationSettings {
    NegotiationSettings(
      username: "user", domain: "localhost", resource: "chatlink-0123456789ab",
      password: "pencil", transport: transport)
  }

  func testEveryFrameProsodySentParsesAtEverySplitAndRoundTrips() throws {
    for frame in ProsodyTranscripts.serverFrames {
      let bytes = Array(frame.utf8)
      let whole = XMLFrameParser().parse(frame: bytes)
      let event = try whole.get()
      let parser = XMLFrameParser()
      for cut in stride(from: 0, through: bytes.count, by: 1) {
        parser.append(Array(bytes[..<cut]))
        parser.append(Array(bytes[cut...]))
        XCTAssertEqual(parser.finishFrame(), whole, "cut at \(cut) of \(frame)")
      }
      switch event {
      case .open(let root), .stanza(let root), .close(let root):
        let again = XMLFrameParser().parse(frame: Array(XMLWriter.string(root).utf8))
        XCTAssertEqual(again, whole, frame)
      }
    }
  }

  /// The negotiation itself prefers SCRAM; PLAIN alone (as where it is the only mechanism)
  /// against what Prosody answered.
  private func plainOutcomes(_ transcript: [Line], password: String) throws -> (
    auth: String, outcome: SASLNegotiation.Outcome?
  ) {
    var sasl = try SASLNegotiation(
      offered: ["PLAIN"], username: "user", password: password, transport: .loopback,
      clientNonce: "", crypto: try OpenSSLSCRAM.crypto())
    let auth = XMLWriter.string(sasl.start())
    let answer = transcript.compactMap { line -> XMLElement? in
      guard case .server(let text) = line, text.contains("xmpp-sasl'"), !text.contains("mechanisms")
      else { return nil }
      guard case .success(.stanza(let element)) = XMLFrameParser().parse(frame: Array(text.utf8))
      else { return nil }
      return element
    }.first
    return (auth, answer.map { sasl.receive($0) })
  }

  func testPlainWithProsodySendsWhatProsodyAcceptedAndSucceeds() throws {
    let (auth, outcome) = try plainOutcomes(ProsodyTranscripts.plain, password: "pencil")
    XCTAssertEqual(auth, clientLines(ProsodyTranscripts.plain)[1])
    XCTAssertEqual(outcome, .succeeded)
  }

  /// The proof was computed by Python's hashlib from Prosody's salt and iteration count, and
  /// Prosody accepted it: ours must be the same bytes, Prosody's signature must verify, and
  /// the rest (restart, bind, stream management) must be what Prosody answered.
  func testASCRAMSHA1SessionWithProsodyReproducesTheProofVerifiesTheServerAndEndsReady()
    throws
  {
    let (sent, final) = try replay(ProsodyTranscripts.scram, settings(.plaintext))
    XCTAssertEqual(sent, Array(clientLines(ProsodyTranscripts.scram).prefix(6)))
    guard case .ready(let session) = final else { return XCTFail("\(String(describing: final))") }
    XCTAssertEqual(session.jid, "user@localhost/chatlink-0123456789ab")
    XCTAssertEqual(session.streamManagement?.maxSeconds, 600)
    XCTAssertNotNil(session.streamManagement?.id)
  }

  func testAWrongPasswordIsProsodysRefusalWithItsText() throws {
    let (auth, outcome) = try plainOutcomes(ProsodyTranscripts.wrongPassword, password: "wrong")
    XCTAssertEqual(auth, clientLines(ProsodyTranscripts.wrongPassword)[1])
    XCTAssertEqual(
      outcome,
      .refused(
        SASLFailure(
          condition: "not-authorized",
          text: "Unable to authorize you with the authentication credentials you've sent.")))
  }

  private func stanza(containing marker: String) throws -> XMLElement {
    let frame = try XCTUnwrap(ProsodyTranscripts.serverFrames.first { $0.contains(marker) })
    guard case .stanza(let element) = try XMLFrameParser().parse(frame: Array(frame.utf8)).get()
    else { throw XMLStreamError.comment }
    return element
  }

  func testProsodysMUCStanzasCarryWhatTheDialectWillRead() throws {
    let presence = try stanza(containing: "code='110'")
    let codes = presence.child("x", namespace: "http://jabber.org/protocol/muc#user")?
      .children("status").compactMap { $0.attribute("code") }
    XCTAssertEqual(codes, ["201", "110"])
    let reflection = try stanza(containing: "<stanza-id")
    XCTAssertEqual(reflection.attribute("id"), "m-1")
    XCTAssertEqual(reflection.child("body")?.text, "héllo & <welcome> 👋")
    let stanzaID = try XCTUnwrap(reflection.child("stanza-id", namespace: "urn:xmpp:sid:0"))
    XCTAssertEqual(stanzaID.attribute("by"), "lobby@conference.localhost")
    XCTAssertEqual(stanzaID.attribute("id"), "BAOTSyQMpYRATLro7L-dRQA4")
    let error = try stanza(containing: "item-not-found")
    XCTAssertEqual(error.attribute("type"), "error")
    XCTAssertNotNil(
      error.child("error")?.child("item-not-found", namespace: XMPPNamespace.stanzaErrors))
  }
}
