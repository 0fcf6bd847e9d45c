/// What the client asks of a stream negotiation.
public struct NegotiationSettings: Sendable, Hashable {
  /// The account's local part (the JID's before the `@`): SASL's user name.
  public var username: String
  /// The account's domain: the `to` of every `<open/>`.
  public var domain: String
  /// The resource to bind.
  public var resource: String
  public var password: String
  /// How the connection is protected, for PLAIN (`SASLTransport`).
  public var transport: SASLTransport
  /// Whether to enable stream management (XEP-0198) with resumption when the server offers
  /// it.
  public var streamManagement: Bool
  /// A session to resume instead of binding anew: its id and the count of stanzas we handled.
  public var resume: Resumption?

  public init(
    username: String, domain: String, resource: String, password: String,
    transport: SASLTransport, streamManagement: Bool = true, resume: Resumption? = nil
  ) {
    self.username = username
    self.domain = domain
    self.resource = resource
    self.password = password
    self.transport = transport
    self.streamManagement = streamManagement
    self.resume = resume
  }
}

/// A stream management session to resume (XEP-0198 §5).
public struct Resumption: Sendable, Hashable {
  /// The id the server gave in `<enabled/>`.
  public var id: String
  /// The full JID the session was bound to: a resumed session keeps it.
  public var jid: String
  /// How many stanzas from the server we handled (`h`, modulo 2^32).
  public var handled: UInt32

  public init(id: String, jid: String, handled: UInt32) {
    self.id = id
    self.jid = jid
    self.handled = handled
  }
}

/// Stream management as the server enabled it (XEP-0198 §4).
public struct StreamManagement: Sendable, Hashable {
  /// The session's id, for a resumption; nil when the server will not resume it.
  public var id: String?
  /// How long the server keeps the session after the connection is lost, if it said.
  public var maxSeconds: Int?
  /// Where to resume, if the server prefers another place (`location`).
  public var location: String?

  public init(id: String?, maxSeconds: Int? = nil, location: String? = nil) {
    self.id = id
    self.maxSeconds = maxSeconds
    self.location = location
  }
}

/// The session the negotiation ended in.
public struct NegotiatedSession: Sendable, Hashable {
  /// The full JID the server bound (or, after a resumption, the one asked to resume).
  public var jid: String
  /// Stream management, when enabled (or resumed).
  public var streamManagement: StreamManagement?
  /// After a resumption: how many of our stanzas the server had handled (`h` of
  /// `<resumed/>`), so the rest can be sent again. Nil for a new session.
  public var resumedWithServerHandled: UInt32?
  /// Why stream management is off though asked for (the server's `<failed/>`), for status.
  public var note: String?

  public init(
    jid: String, streamManagement: StreamManagement? = nil,
    resumedWithServerHandled: UInt32? = nil, note: String? = nil
  ) {
    self.jid = jid
    self.streamManagement = streamManagement
    self.resumedWithServerHandled = resumedWithServerHandled
    self.note = note
  }
}

/// Why the negotiation gave up (the server's refusal of the credentials is `SASLFailure`).
public enum NegotiationError: Error, Sendable, Hashable, CustomStringConvertible {
  /// The client gave up on SASL.
  case sasl(SASLError)
  /// The server ended the stream with an error (RFC 6120 §4.9): its condition and text.
  case streamError(condition: String, text: String?)
  /// The server's `<open/>` is not one we can talk to (no version 1.0).
  case badOpen(String)
  /// The server offers no resource binding after authentication.
  case noBinding
  /// The server refused the resource binding (or the session): its stanza error condition.
  case bindRefused(condition: String)
  /// An element the negotiation does not expect now.
  case unexpected(String)

  public var description: String {
    switch self {
    case .sasl(let error): "SASL: \(error)"
    case .streamError(let condition, let text):
      "stream error from the server: \(condition)" + (text.map { " (\($0))" } ?? "")
    case .badOpen(let why): "the server's stream opening: \(why)"
    case .noBinding: "the server offers no resource binding"
    case .bindRefused(let condition): "the server refused the resource binding: \(condition)"
    case .unexpected(let what): "unexpected during the stream negotiation: \(what)"
    }
  }
}

/// What the driver does after an event of the negotiation.
public enum NegotiationAction: Sendable, Hashable {
  /// Write this element as the next frame (`XMLWriter`).
  case send(XMLElement)
  /// SASL succeeded with this mechanism (for the log); the stream restarts.
  case authenticated(mechanism: String)
  /// The server would not resume the session (expired, unknown): what was not acknowledged
  /// is lost with it, so catch up from the archive. `serverHandled`: the server's `h`, if it
  /// said.
  case resumptionRefused(serverHandled: UInt32?)
  /// The session is up.
  case ready(NegotiatedSession)
  /// The server refused the credentials: like HTTP 401.
  case refused(SASLFailure)
  /// The negotiation failed; the connection should end.
  case failed(NegotiationError)
  /// The server closed the stream, perhaps sending us elsewhere (`see-other-uri`).
  case closed(seeOtherURI: String?)
}
