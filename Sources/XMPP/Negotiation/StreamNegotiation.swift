/// The negotiation of an XMPP stream over WebSocket as a pure state machine: `<open/>`,
/// features, SASL, the restart, then resumption (XEP-0198 §5) or resource binding (RFC 6120
/// §7) and stream management (XEP-0198 §4), until `.ready`. Frame events in, actions out; the
/// SASL nonce and the crypto are handed in.
///
/// RFC 7395 §3.5: after SASL succeeds, the client opens the stream again (a new `<open/>`,
/// no new connection) and the server answers with an `<open/>` and new features.
public struct StreamNegotiation: Sendable {
  private enum Phase: Sendable {
    case idle
    case awaitingOpen(authenticated: Bool)
    case awaitingFeatures(authenticated: Bool)
    case authenticating(SASLNegotiation)
    case resuming(offersStreamManagement: Bool)
    case binding(offersStreamManagement: Bool, needsSession: Bool)
    case establishingSession(jid: String, offersStreamManagement: Bool)
    case enabling(jid: String)
    case done
  }

  /// The ids of our own `<iq/>`s: one of each per connection.
  static let bindID = "bind-1"
  static let sessionID = "session-1"

  public let settings: NegotiationSettings
  private let clientNonce: String
  private let crypto: SCRAMCrypto
  private var phase = Phase.idle

  public init(settings: NegotiationSettings, clientNonce: String, crypto: SCRAMCrypto) {
    self.settings = settings
    self.clientNonce = clientNonce
    self.crypto = crypto
  }

  /// Whether the negotiation ended (ready, refused, failed or closed).
  public var isFinished: Bool {
    if case .done = phase { true } else { false }
  }

  /// Whether a resource is bound and the negotiation still goes on (RFC 3921's session, or
  /// stream management being enabled): the server may route stanzas to us already, which are
  /// the session's, not the negotiation's (`receive` refuses them).
  public var isBound: Bool {
    switch phase {
    case .establishingSession, .enabling: true
    default: false
    }
  }

  /// The connection is upgraded: the first `<open/>`.
  public mutating func start() -> [NegotiationAction] {
    phase = .awaitingOpen(authenticated: false)
    return [.send(XMPPFraming.openElement(to: settings.domain))]
  }

  /// Reads the server's next frame.
  public mutating func receive(_ event: XMLFrameEvent) -> [NegotiationAction] {
    switch event {
    case .close(let close):
      return finish(.closed(seeOtherURI: XMPPFraming.seeOtherURI(close)))
    case .open(let open):
      guard case .awaitingOpen(let authenticated) = phase else {
        return finish(.failed(.unexpected("a second <open/>")))
      }
      guard open.attribute("version") == "1.0" else {
        return finish(.failed(.badOpen("version \(open.attribute("version") ?? "none"), not 1.0")))
      }
      phase = .awaitingFeatures(authenticated: authenticated)
      return []
    case .stanza(let element):
      if element.name == "error" && element.namespace == XMPPNamespace.streams {
        return finish(.failed(Self.streamError(element)))
      }
      return stanza(element)
    }
  }

  private mutating func stanza(_ element: XMLElement) -> [NegotiationAction] {
    switch phase {
    case .awaitingFeatures(let authenticated)
    where element.name == "features" && element.namespace == XMPPNamespace.streams:
      return authenticated ? afterAuthentication(element) : authenticate(element)
    case .authenticating(var sasl):
      let outcome = sasl.receive(element)
      phase = .authenticating(sasl)
      switch outcome {
      case .send(let response): return [.send(response)]
      case .succeeded:
        phase = .awaitingOpen(authenticated: true)
        return [
          .authenticated(mechanism: sasl.mechanism.name),
          .send(XMPPFraming.openElement(to: settings.domain)),
        ]
      case .refused(let failure): return finish(.refused(failure))
      case .failed(let error): return finish(.failed(.sasl(error)))
      }
    case .resuming(let offersStreamManagement):
      return resumption(element, offersStreamManagement: offersStreamManagement)
    case .binding(let offersStreamManagement, let needsSession):
      guard let result = Self.result(element, id: Self.bindID) else { break }
      guard case .success = result else {
        return finish(.failed(.bindRefused(condition: Self.failureCondition(result))))
      }
      let bind = element.child("bind", namespace: XMPPNamespace.bind)
      let jid = bind?.child("jid", namespace: XMPPNamespace.bind)?.text ?? ""
      guard !jid.isEmpty else { return finish(.failed(.unexpected("a bind result without a JID"))) }
      if needsSession {
        phase = .establishingSession(jid: jid, offersStreamManagement: offersStreamManagement)
        return [.send(Self.sessionRequest())]
      }
      return enable(jid: jid, offersStreamManagement: offersStreamManagement)
    case .establishingSession(let jid, let offersStreamManagement):
      guard let result = Self.result(element, id: Self.sessionID) else { break }
      guard case .success = result else {
        return finish(.failed(.bindRefused(condition: Self.failureCondition(result))))
      }
      return enable(jid: jid, offersStreamManagement: offersStreamManagement)
    case .enabling(let jid) where element.namespace == XMPPNamespace.streamManagement:
      switch element.name {
      case "enabled":
        let resumable = ["true", "1"].contains(element.attribute("resume") ?? "")
        let management = StreamManagement(
          id: resumable ? element.attribute("id") : nil,
          maxSeconds: element.attribute("max").flatMap { Int($0) },
          location: element.attribute("location"))
        return finish(.ready(NegotiatedSession(jid: jid, streamManagement: management)))
      case "failed":
        let note =
          "stream management refused: "
          + Self.condition(of: element, in: XMPPNamespace.stanzaErrors)
        return finish(.ready(NegotiatedSession(jid: jid, note: note)))
      default: break
      }
    default: break
    }
    return finish(.failed(.unexpected(Self.describe(element))))
  }

  /// The first features: choose a SASL mechanism and send `<auth/>`.
  private mutating func authenticate(_ features: XMLElement) -> [NegotiationAction] {
    do throws(SASLError) {
      var sasl = try SASLNegotiation(
        offered: SASLNegotiation.offered(in: features), username: settings.username,
        password: settings.password, transport: settings.transport, clientNonce: clientNonce,
        crypto: crypto)
      let auth = sasl.start()
      phase = .authenticating(sasl)
      return [.send(auth)]
    } catch {
      return finish(.failed(.sasl(error)))
    }
  }

  /// The features after the restart: resume the old session, or bind a new one.
  private mutating func afterAuthentication(_ features: XMLElement) -> [NegotiationAction] {
    let offersStreamManagement =
      settings.streamManagement
      && features.child("sm", namespace: XMPPNamespace.streamManagement) != nil
    if offersStreamManagement, let resume = settings.resume {
      phase = .resuming(offersStreamManagement: offersStreamManagement)
      return [.send(Self.resumeRequest(resume))]
    }
    guard features.child("bind", namespace: XMPPNamespace.bind) != nil else {
      return finish(.failed(.noBinding))
    }
    // RFC 6121 dropped the session; a server that still lists it without <optional/> needs it.
    let needsSession =
      features.child("session", namespace: XMPPNamespace.session).map {
        $0.child("optional") == nil
      } ?? false
    phase = .binding(offersStreamManagement: offersStreamManagement, needsSession: needsSession)
    return [.send(Self.bindRequest(resource: settings.resource))]
  }

  private mutating func resumption(_ element: XMLElement, offersStreamManagement: Bool)
    -> [NegotiationAction]
  {
    guard element.namespace == XMPPNamespace.streamManagement else {
      return finish(.failed(.unexpected(Self.describe(element))))
    }
    switch element.name {
    case "resumed":
      guard let resume = settings.resume, element.attribute("previd") == resume.id,
        let handled = element.attribute("h").flatMap({ UInt32($0) })
      else {
        return finish(.failed(.unexpected(Self.describe(element) + " without our previd and h")))
      }
      let management = StreamManagement(id: resume.id)
      return finish(
        .ready(
          NegotiatedSession(
            jid: resume.jid,
            streamManagement: management, resumedWithServerHandled: handled)))
    case "failed":
      // The old session is gone: bind a new one on this stream (XEP-0198 §5).
      phase = .binding(offersStreamManagement: offersStreamManagement, needsSession: false)
      return [
        .resumptionRefused(serverHandled: element.attribute("h").flatMap { UInt32($0) }),
        .send(Self.bindRequest(resource: settings.resource)),
      ]
    default:
      return finish(.failed(.unexpected(Self.describe(element))))
    }
  }

  private mutating func enable(jid: String, offersStreamManagement: Bool) -> [NegotiationAction] {
    guard offersStreamManagement else { return finish(.ready(NegotiatedSession(jid: jid))) }
    phase = .enabling(jid: jid)
    return [.send(Self.enableRequest())]
  }

  private mutating func finish(_ action: NegotiationAction) -> [NegotiationAction] {
    phase = .done
    return [action]
  }
}
