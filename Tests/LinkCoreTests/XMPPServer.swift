import LinkCore
import Transport
import WebSocket
import XMPP

/// A scripted XMPP server for the dialect's transcripts: RFC 5802's SCRAM-SHA-1 example (user
/// "user", password "pencil", the RFC's nonces), then binding and stream management as
/// Prosody answers them.
enum XMPPServer {
  static let account = "user@example.org"
  static let room = "lobby@conference.example.org"
  static let otherRoom = "ops@conference.example.org"
  static let fullJID = "user@example.org/chatlink-test"
  static let nonce = "fyko+d2lbbFgONRv9qkxdawL"

  /// OpenSSL's primitives and the RFC's client nonce.
  static func services() -> DialectServices {
    DialectServices(scram: crypto, nonce: { nonce })
  }

  private static let crypto: SCRAMCrypto = {
    @Sendable func digest(_ hash: SCRAMHash) -> OpenSSLCrypto.Digest {
      hash == .sha1 ? .sha1 : .sha256
    }
    return SCRAMCrypto(
      hash: { (try? OpenSSLCrypto.shared())?.hash(digest($0), $1) },
      hmac: { (try? OpenSSLCrypto.shared())?.hmac(digest($0), key: $1, message: $2) },
      pbkdf2: {
        (try? OpenSSLCrypto.shared())?.pbkdf2(
          digest($0), password: $1, salt: $2, iterations: $3)
      })
  }()

  static func settings(
    transport: SASLTransport = .loopback,
    configure: (inout XMPPProtocol.Settings) -> Void = { _ in }
  ) -> XMPPProtocol.Settings {
    // swift-format-ignore: NeverUseForceTry
    var settings = XMPPProtocol.Settings(
      jid: try! JID(parsing: account), password: "pencil", resource: "chatlink-test",
      transport: transport)
    configure(&settings)
    return settings
  }

  static func dialect(transport: SASLTransport = .loopback) -> XMPPProtocol {
    XMPPProtocol(settings(transport: transport), services: services())
  }

  static func b64(_ text: String) -> String { Base64.encode(Array(text.utf8)) }

  static let open =
    "<open xmlns='urn:ietf:params:xml:ns:xmpp-framing' from='example.org' id='s-1' "
    + "version='1.0' xml:lang='en'/>"

  static func features(_ mechanisms: [String] = ["SCRAM-SHA-1", "PLAIN"]) -> String {
    "<stream:features xmlns:stream='http://etherx.jabber.org/streams'>"
      + "<mechanisms xmlns='urn:ietf:params:xml:ns:xmpp-sasl'>"
      + mechanisms.map { "<mechanism>\($0)</mechanism>" }.joined()
      + "</mechanisms></stream:features>"
  }

  static let challenge =
    "<challenge xmlns='urn:ietf:params:xml:ns:xmpp-sasl'>"
    + b64("r=fyko+d2lbbFgONRv9qkxdawL3rfcNHYJY1ZVvWVs7j,s=QSXCR+Q6sek8bf92,i=4096")
    + "</challenge>"
  static let success =
    "<success xmlns='urn:ietf:params:xml:ns:xmpp-sasl'>" + b64("v=rmF9pqV8S7suAoZWja4dJRkFsKQ=")
    + "</success>"

  static func boundFeatures(streamManagement: Bool = true) -> String {
    "<stream:features xmlns:stream='http://etherx.jabber.org/streams'>"
      + "<bind xmlns='urn:ietf:params:xml:ns:xmpp-bind'/>"
      + (streamManagement ? "<sm xmlns='urn:xmpp:sm:3'/>" : "") + "</stream:features>"
  }

  static let bound =
    "<iq xmlns='jabber:client' type='result' id='bind-1'>"
    + "<bind xmlns='urn:ietf:params:xml:ns:xmpp-bind'><jid>\(fullJID)</jid></bind></iq>"
  static let enabled = "<enabled xmlns='urn:xmpp:sm:3' id='sm-1' resume='true' max='600'/>"

  /// The server's frames from its `<open/>` to `<enabled/>`.
  static func negotiation(streamManagement: Bool = true) -> [String] {
    [open, features(), challenge, success, open, boundFeatures(streamManagement: streamManagement)]
      + [bound] + (streamManagement ? [enabled] : [])
  }

  /// The room's presence of ourselves: the join is confirmed.
  static func selfPresence(_ room: String = room, nick: String = "user") -> String {
    "<presence xmlns='jabber:client' from='\(room)/\(nick)' to='\(fullJID)'>"
      + "<x xmlns='http://jabber.org/protocol/muc#user'><item affiliation='none' "
      + "role='participant'/><status code='110'/></x></presence>"
  }

  static func groupchat(
    _ body: String?, id: String = "m-1", nick: String = "alice", room: String = room,
    stanzaID: String? = "sid-1", by: String? = nil, extra: String = ""
  ) -> String {
    "<message xmlns='jabber:client' from='\(room)/\(nick)' to='\(fullJID)' type='groupchat' "
      + "id='\(id)'>" + (body.map { "<body>\($0)</body>" } ?? "")
      + (stanzaID.map { "<stanza-id xmlns='urn:xmpp:sid:0' id='\($0)' by='\(by ?? room)'/>" }
        ?? "") + extra + "</message>"
  }
}

extension XMPPServer {
  /// A dialect whose session is negotiated and ready (stream management enabled, if asked).
  static func negotiated(streamManagement: Bool = true) -> XMPPProtocol {
    var dialect = dialect()
    _ = dialect.open(handshake(subprotocol: "xmpp"))
    for frame in negotiation(streamManagement: streamManagement) { _ = dialect.read(.xml(frame)) }
    return dialect
  }
}

extension Message {
  static func xml(_ text: String) -> Message { .text(Array(text.utf8)) }
}

/// The frames as text, for comparing with transcripts.
func texts(_ messages: [Message]) -> [String] { messages.map { $0.text ?? "binary" } }
