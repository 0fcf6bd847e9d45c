import WebSocket

/// The link core's settings: what status shows and what the keepalive and backoff use.
/// How to reach the backend (TLS, the resolver) is the driver's business; what a connection is
/// opened with is here, so the core decides what a reload needs.
public struct LinkSettings: Sendable, Hashable {
  /// The backend, for status and log texts.
  public var url: WebSocketURL
  /// Time between keepalive probes.
  public var pingInterval: Duration
  /// Time allowed for an answer (or any frame) after a probe.
  public var pongTimeout: Duration
  /// The shortest reconnect delay.
  public var reconnectMin: Duration
  /// The longest reconnect delay.
  public var reconnectMax: Duration
  /// How long a connection must stay up before past failures are forgotten.
  public var stableAfter: Duration = .seconds(30)
  /// Bytes the socket may hold unsent before the outbox waits for it to drain.
  public var sendBufferLimit = 1 << 20
  /// How soon the outbox tries again once the socket held too much.
  public var sendRetryDelay: Duration = .milliseconds(5)
  /// What the upgrade request carries besides the URL.
  public var upgrade = UpgradeSettings()
  /// The dialect spoken over the connection, with its settings.
  public var dialect = DialectSettings.envelope(EnvelopeNames(), sender: "chatlink")

  /// Creates settings.
  public init(
    url: WebSocketURL, pingInterval: Duration, pongTimeout: Duration, reconnectMin: Duration,
    reconnectMax: Duration
  ) {
    self.url = url
    self.pingInterval = pingInterval
    self.pongTimeout = pongTimeout
    self.reconnectMin = reconnectMin
    self.reconnectMax = reconnectMax
  }
}

extension LinkSettings {
  /// Whether going from `old` to these settings needs a new connection: what the upgrade
  /// carries changed, or the settings of a dialect with a session of its own (a broker's
  /// CONNECT, Socket.IO's namespace and auth), which are sent only when a session starts.
  public func needsNewConnection(from old: LinkSettings) -> Bool {
    url != old.url || upgrade != old.upgrade
      || (dialect != old.dialect && (dialect.hasSession || old.dialect.hasSession))
  }
}

/// What a connection's upgrade request carries besides the URL, and the route to the backend:
/// a change of any of it applies only to a new connection.
public struct UpgradeSettings: Sendable, Hashable {
  /// Handshake headers (the Authorization header with the token included).
  public var headers = HTTPHeaders()
  /// Subprotocols to offer, besides the dialect's own.
  public var subprotocols: [String] = []
  /// Whether permessage-deflate is offered.
  public var compression = false
  /// The largest inbound message accepted.
  public var maxMessageSize = 1 << 20
  /// The HTTP CONNECT proxy the connection goes through (its URL), or nil.
  public var proxy: String?

  /// Settings with the defaults: no headers, no subprotocols, no compression.
  public init() {}
}
