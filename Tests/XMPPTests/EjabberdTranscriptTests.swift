import XCTest
import XMPP

/// The parser and the negotiation against what a real ejabberd sent (`EjabberdTranscripts`).
final class EjabberdTranscriptTests: XCTestCase {
  /// Of DIGEST-MD5, PLAIN, SCRAM-SHA-512, SCRAM-SHA-256, SCRAM-SHA-1 and X-OAUTH2 we take
  /// SCRAM-SHA-256; the proof Python's hashlib computed from ejabberd's salt, which ejabberd
  /// accepted, must be our bytes too, ejabberd's signature must verify, and the rest (restart,
  /// bind, stream management) must be what ejabberd answered.
  func testASCRAMSHA256SessionWithEjabberdReproducesTheProofVerifiesTheServerAndEndsReady()
    throws
  {
    let settings = NegotiationSettings(
      username: "user", domain: "localhost", resource: "chatlink-0123456789ab",
      password: "pencil", transport: .plaintext)
    let (sent, final) = try replay(EjabberdTranscripts.scramSHA256, settings)
    XCTAssertEqual(sent, Array(clientLines(EjabberdTranscripts.scramSHA256).prefix(6)))
    XCTAssertTrue(sent[1].contains("mechanism='SCRAM-SHA-256'"), sent[1])
    guard case .ready(let session) = final else { return XCTFail("\(String(describing: final))") }
    XCTAssertEqual(session.jid, "user@localhost/chatlink-0123456789ab")
    XCTAssertEqual(session.streamManagement?.maxSeconds, 600)
    XCTAssertNotNil(session.streamManagement?.id)
  }
}
