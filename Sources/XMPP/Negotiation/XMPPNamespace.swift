/// The namespaces of what the stream negotiation reads and writes.
public enum XMPPNamespace {
  /// Stanzas of a client stream (RFC 6120 §4.8.3).
  public static let client = "jabber:client"
  /// `<stream:features/>` and `<stream:error/>` (RFC 6120 §4.8.1).
  public static let streams = "http://etherx.jabber.org/streams"
  /// A stream error's condition (RFC 6120 §4.9.3).
  public static let streamErrors = "urn:ietf:params:xml:ns:xmpp-streams"
  /// A stanza error's condition (RFC 6120 §8.3.3).
  public static let stanzaErrors = "urn:ietf:params:xml:ns:xmpp-stanzas"
  /// Resource binding (RFC 6120 §7).
  public static let bind = "urn:ietf:params:xml:ns:xmpp-bind"
  /// The session establishment of RFC 3921, which old servers still require.
  public static let session = "urn:ietf:params:xml:ns:xmpp-session"
  /// Stream management (XEP-0198), version 3.
  public static let streamManagement = "urn:xmpp:sm:3"
}
