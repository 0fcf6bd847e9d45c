import WebSocket
import XMPP

/// What the server sends: the negotiation's frames until the session is ready, then stanzas
/// and stream management's elements.
extension XMPPProtocol {
  static let streamManagementNamespace = XMPPNamespace.streamManagement
  static let pingNamespace = "urn:xmpp:ping"

  public mutating func read(_ message: Message) -> ProtocolReading {
    var reading = ProtocolReading(record: nil)
    let event: XMLFrameEvent
    switch parser.parse(frame: message.bytes) {
    case .success(let parsed): event = parsed
    case .failure(let error):
      reading.session = .broken("the XMPP server sent \(error)")
      return reading
    }
    if let negotiation {
      // Bound already: a room we were in on a session the server still keeps (after a kill)
      // routes its messages here before <enabled/>; they are the session's stanzas.
      if negotiation.isBound, case .stanza(let element) = event,
        element.namespace == XMPPNamespace.client
      {
        stanza(element, into: &reading)
      } else {
        negotiate(event, into: &reading)
      }
      return reading
    }
    switch event {
    case .open:
      reading.problem = "an <open/> after the stream was negotiated"
    case .close(let close):
      if let uri = XMPPFraming.seeOtherURI(close) {
        moved(to: uri, into: &reading)
      } else {
        reading.session = .broken("the XMPP server closed the stream")
      }
    case .stanza(let element):
      stanza(element, into: &reading)
    }
    return reading
  }

  /// A frame of the negotiation, and what its actions mean to the link.
  private mutating func negotiate(_ event: XMLFrameEvent, into reading: inout ProtocolReading) {
    guard var negotiation else { return }
    let actions = negotiation.receive(event)
    self.negotiation = negotiation
    for action in actions {
      switch action {
      case .send(let element): reading.replies.append(Self.frame(element))
      case .authenticated: break
      case .resumptionRefused:
        // What the old session held unacknowledged is gone with it: the rooms start anew.
        resumption = nil
        previousRooms = [:]
        reading.notice = .resumptionRefused
      case .ready(let session):
        self.negotiation = nil
        ready(session, into: &reading)
      case .refused(let failure):
        reading.session = .refused(
          "the XMPP server refused the login of \(settings.jid.bareText): \(failure); "
            + "check [XMPP] JID= and TokenFile=")
      case .failed(let error):
        reading.session = .broken("XMPP stream negotiation: \(error)")
      case .closed(let uri?):
        moved(to: uri, into: &reading)
      case .closed(nil):
        reading.session = .broken("the XMPP server closed the stream during set-up")
      }
    }
  }

  /// `<close see-other-uri=…/>`: the session goes on elsewhere (RFC 7395 §3.6.1), unless that
  /// would take a password PLAIN may send over loopback ws:// off the loopback.
  private func moved(to uri: String, into reading: inout ProtocolReading) {
    if settings.transport == .loopback,
      let url = try? WebSocketURL(parsing: uri), !url.secure,
      !SASLTransport.isLoopback(url.host)
    {
      reading.session = .broken(
        "the XMPP server sent us to \(url), off the loopback without TLS; not followed")
      return
    }
    reading.session = .movedTo(uri)
  }

  /// The session is bound (and stream management enabled, if offered): available presence,
  /// so that chats to our bare JID reach this resource (RFC 6121 §8.5.2.1), then the rooms.
  private mutating func ready(_ session: NegotiatedSession, into reading: inout ProtocolReading) {
    boundJID = (try? JID(parsing: session.jid)) ?? settings.jid.with(resource: settings.resource)
    streamManagement = session.streamManagement != nil
    resumableID = session.streamManagement?.id
    sessionNote = session.note
    reading.session = .ready
    resumption = nil
    if let serverHandled = session.resumedWithServerHandled {
      // The session goes on: its presence and rooms stand, the server resends what we had not
      // acknowledged, and counts on from what it had of ours (the core resends the rest).
      resumed = true
      if let id = resumableID { reading.notice = .sessionResumed(id: id) }
      handled = previousHandled
      sentStanzas = serverHandled
      rooms = previousRooms
      previousRooms = [:]
      return
    }
    previousRooms = [:]
    countSent()
    reading.replies.append(
      Self.frame(XMLElement("presence", namespace: XMPPNamespace.client)))
  }

  /// A top-level element once the session is ready.
  private mutating func stanza(_ element: XMLElement, into reading: inout ProtocolReading) {
    switch element.namespace {
    case XMPPNamespace.client:
      guard ["message", "presence", "iq"].contains(element.name) else {
        reading.problem = "an unknown top-level element <\(element.name)/>"
        return
      }
      if streamManagement { handled &+= 1 }
      switch element.name {
      case "message": message(element, into: &reading)
      case "presence": presence(element, into: &reading)
      default: iq(element, into: &reading)
      }
    case Self.streamManagementNamespace:
      streamManagement(element, into: &reading)
    case XMPPNamespace.streams where element.name == "error":
      let condition =
        element.children.first {
          $0.namespace == XMPPNamespace.streamErrors && $0.name != "text"
        }?.name ?? "undefined-condition"
      let text = element.child("text", namespace: XMPPNamespace.streamErrors)?.text
      // The server ends the stream on purpose (RFC 6120 §4.9): its condition says why.
      reading.session = .ended(
        "stream error from the XMPP server: \(condition)" + (text.map { " (\($0))" } ?? ""))
    default:
      reading.problem =
        "an unknown top-level element <\(element.name) xmlns='\(element.namespace)'/>"
    }
  }

  /// `<r/>`: answered with our count once everything read so far is durable; `<a h/>`: the
  /// server's count of our stanzas, confirming the chat sends it covers.
  private mutating func streamManagement(
    _ element: XMLElement, into reading: inout ProtocolReading
  ) {
    switch element.name {
    case "r":
      reading.afterStored = acknowledgement()
    case "a":
      guard let h = element.attribute("h").flatMap({ UInt32($0) }) else {
        reading.problem = "an <a/> without a count"
        return
      }
      reading.heartbeatAnswered = true
      // Counts wrap at 2^32 (XEP-0198 §4): "covered" is within half the range behind h.
      for sent in awaitingAck.takeFirst(while: { h &- $0.stanza < 1 << 31 }) {
        pendingSends[sent.id] = nil
        reading.delivered.append(sent.count)
      }
    default:
      reading.problem = "an unexpected <\(element.name) xmlns='urn:xmpp:sm:3'/>"
    }
  }

  /// `<a xmlns='urn:xmpp:sm:3' h='N'/>` with the count of stanzas read so far.
  func acknowledgement() -> Message {
    .text(Array("<a xmlns='urn:xmpp:sm:3' h='\(handled)'/>".utf8))
  }

  /// An `<iq/>` to us: XEP-0199 pings are answered; any other request gets
  /// `service-unavailable` (RFC 6120 §8.4: every get or set has an answer).
  private mutating func iq(_ element: XMLElement, into reading: inout ProtocolReading) {
    let type = element.attribute("type") ?? ""
    guard type == "get" || type == "set" else {
      _ = archiveAnswer(element, into: &reading)
      return
    }
    var attributes = [XMLAttribute("type", "result")]
    if let id = element.attribute("id") { attributes.append(XMLAttribute("id", id)) }
    if let from = element.attribute("from") { attributes.append(XMLAttribute("to", from)) }
    var answer = XMLElement("iq", namespace: XMPPNamespace.client, attributes: attributes)
    let isPing = type == "get" && element.child("ping", namespace: Self.pingNamespace) != nil
    if !isPing {
      answer.attributes[0] = XMLAttribute("type", "error")
      answer.children = [
        XMLElement(
          "error", namespace: XMPPNamespace.client,
          attributes: [XMLAttribute("type", "cancel")],
          children: [
            XMLElement("service-unavailable", namespace: XMPPNamespace.stanzaErrors)
          ])
      ]
    }
    countSent()
    reading.replies.append(Self.frame(answer))
  }
}
