/// The elements the negotiation writes and the answers it reads.
extension StreamNegotiation {
  /// `<iq type='set' id='bind-1'><bind><resource>R</resource></bind></iq>`; an empty
  /// resource lets the server choose one.
  static func bindRequest(resource: String) -> XMLElement {
    var bind = XMLElement("bind", namespace: XMPPNamespace.bind)
    if !resource.isEmpty {
      bind.children = [XMLElement("resource", namespace: XMPPNamespace.bind, text: resource)]
    }
    return iq(id: bindID, children: [bind])
  }

  /// RFC 3921's session request, for servers that still require it.
  static func sessionRequest() -> XMLElement {
    iq(id: sessionID, children: [XMLElement("session", namespace: XMPPNamespace.session)])
  }

  /// `<enable xmlns='urn:xmpp:sm:3' resume='true'/>`.
  static func enableRequest() -> XMLElement {
    XMLElement(
      "enable", namespace: XMPPNamespace.streamManagement,
      attributes: [XMLAttribute("resume", "true")])
  }

  /// `<resume xmlns='urn:xmpp:sm:3' previd='ID' h='N'/>`.
  static func resumeRequest(_ resume: Resumption) -> XMLElement {
    XMLElement(
      "resume", namespace: XMPPNamespace.streamManagement,
      attributes: [XMLAttribute("previd", resume.id), XMLAttribute("h", String(resume.handled))])
  }

  private static func iq(id: String, children: [XMLElement]) -> XMLElement {
    XMLElement(
      "iq", namespace: XMPPNamespace.client,
      attributes: [XMLAttribute("type", "set"), XMLAttribute("id", id)], children: children)
  }

  /// The answer to our `<iq/>` `id`: success, or failure with its error's condition; nil when
  /// the element is not that answer.
  static func result(_ element: XMLElement, id: String) -> Result<Void, IQError>? {
    guard element.name == "iq", element.namespace == XMPPNamespace.client,
      element.attribute("id") == id
    else { return nil }
    switch element.attribute("type") {
    case "result": return .success(())
    case "error":
      let error = element.child("error", namespace: XMPPNamespace.client)
      return .failure(
        IQError(
          condition: error.map { condition(of: $0, in: XMPPNamespace.stanzaErrors) }
            ?? "undefined-condition"))
    default: return nil
    }
  }

  /// An `<iq/>` error's condition.
  struct IQError: Error {
    var condition: String
  }

  static func failureCondition(_ result: Result<Void, IQError>) -> String {
    if case .failure(let error) = result { error.condition } else { "" }
  }

  /// The first child in `namespace` other than `<text/>`: a condition's name.
  static func condition(of element: XMLElement, in namespace: String) -> String {
    element.children.first { $0.namespace == namespace && $0.name != "text" }?.name
      ?? "undefined-condition"
  }

  /// `<stream:error/>`'s condition and text (RFC 6120 §4.9.2).
  static func streamError(_ element: XMLElement) -> NegotiationError {
    .streamError(
      condition: condition(of: element, in: XMPPNamespace.streamErrors),
      text: element.child("text", namespace: XMPPNamespace.streamErrors)?.text)
  }

  /// An element named for a message: `<name xmlns='namespace'/>`.
  static func describe(_ element: XMLElement) -> String {
    "<\(element.name) xmlns='\(element.namespace)'/>"
  }
}
