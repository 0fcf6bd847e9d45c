/// The framing of XMPP over WebSocket (RFC 7395 §3.3): `<open/>` and `<close/>` in their own
/// namespace, where a TCP stream has `<stream:stream>` and `</stream:stream>`.
public enum XMPPFraming {
  /// The framing elements' namespace.
  public static let namespace = "urn:ietf:params:xml:ns:xmpp-framing"
  /// The WebSocket subprotocol to ask for (RFC 7395 §3.2).
  public static let subprotocol = "xmpp"

  /// The stream's opening, sent after the upgrade and after each restart (SASL success):
  /// `<open xmlns='urn:ietf:params:xml:ns:xmpp-framing' to='DOMAIN' version='1.0'/>`, with
  /// `xml:lang` when a language is given.
  public static func open(to domain: String, language: String? = nil) -> String {
    XMLWriter.string(openElement(to: domain, language: language))
  }

  /// The stream's opening as an element (`open(to:language:)` is its text).
  public static func openElement(to domain: String, language: String? = nil) -> XMLElement {
    var attributes = [XMLAttribute("to", domain), XMLAttribute("version", "1.0")]
    if let language {
      attributes.append(XMLAttribute("lang", language, namespace: XMLWriter.xmlNamespace))
    }
    return XMLElement("open", namespace: namespace, attributes: attributes)
  }

  /// The stream's end: `<close xmlns='urn:ietf:params:xml:ns:xmpp-framing'/>`.
  public static let close = "<close xmlns='\(namespace)'/>"

  /// Where a server's `<close/>` sends the client instead (RFC 7395 §3.6.1), if anywhere.
  public static func seeOtherURI(_ close: XMLElement) -> String? {
    close.attribute("see-other-uri")
  }
}
