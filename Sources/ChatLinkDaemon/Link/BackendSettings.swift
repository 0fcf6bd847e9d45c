import ChatLinkAPI
import LinkCore
import Transport
import WebSocket
import WebSocketClient
import XMPP

/// The link's settings from a validated configuration: what the link core needs (the
/// upgrade, the dialect, the keepalive and backoff) and how `BackendLink` reaches the backend.
public struct BackendSettings: Sendable {
  /// Time allowed for DNS, TCP, TLS and the upgrade together.
  public var connectTimeout: Duration
  /// The HTTP CONNECT proxy: Proxy= or, when unset, https_proxy/http_proxy and no_proxy.
  public var proxy: ProxyAddress?
  /// What the link core needs, the upgrade and the dialect included.
  public var link: LinkSettings

  /// The backend.
  public var url: WebSocketURL { link.url }
  /// Handshake headers, the Authorization header with the token included.
  public var headers: HTTPHeaders { link.upgrade.headers }

  /// Takes the settings of a validated configuration (whose URL is `url`), plus the token
  /// (never logged).
  public init(_ c: Configuration, url configured: WebSocketURL, token: String?) {
    let url =
      c.chatProtocol == .socketio ? SocketIOProtocol.endpoint(for: configured) : configured
    connectTimeout = c.connectTimeout
    if let configured = c.proxy {
      proxy = ProxyAddress(url: configured)
    } else {
      proxy = ProxyAddress.fromEnvironment(for: url.host, secure: url.secure)
    }
    link = LinkSettings(
      url: url, pingInterval: c.pingInterval, pongTimeout: c.pongTimeout,
      reconnectMin: c.reconnectMin, reconnectMax: c.reconnectMax)
    var headers = HTTPHeaders(c.headers)
    // XMPP's token is the account's password: it goes only into SASL, which protects it
    // (SCRAM never sends it; PLAIN only over TLS or loopback), never into a header.
    if let token, c.chatProtocol != .xmpp {
      headers.add(name: "Authorization", value: "Bearer \(token)")
    }
    link.upgrade.headers = headers
    link.upgrade.subprotocols = c.subprotocols
    link.upgrade.compression = c.compression
    link.upgrade.maxMessageSize = c.maxMessageSize
    link.upgrade.proxy = proxy?.description
    link.dialect = Self.dialect(c, url: url, token: token)
    switch link.dialect {
    case .mqtt:
      // PINGREQ is the keepalive: sent every KeepAliveSec=, as promised to the broker.
      link.pingInterval = c.mqttKeepAlive
    case .stomp:
      // Our heart-beats go out on the keepalive's interval: HeartBeatMSec=, as CONNECT offers.
      if c.stompHeartBeat > .zero { link.pingInterval = c.stompHeartBeat }
    case .envelope, .raw, .socketIO, .xmpp:
      break
    }
  }

  /// The dialect Protocol= names, with its settings.
  private static func dialect(_ c: Configuration, url: WebSocketURL, token: String?)
    -> DialectSettings
  {
    switch c.chatProtocol {
    case .envelope: return .envelope(c.envelope, sender: c.sender)
    case .raw: return .raw
    case .mqtt: return .mqtt(mqtt(c, token: token))
    case .stomp: return .stomp(stomp(c, token: token))
    case .xmpp: return .xmpp(xmpp(c, url: url, token: token))
    case .socketio:
      var dialect = SocketIOProtocol.Settings()
      dialect.namespace = c.socketIONamespace
      dialect.auth = SocketIOProtocol.authPayload(c.socketIOAuth, token: token)
      dialect.names = c.envelope
      dialect.sender = c.sender
      return .socketIO(dialect)
    }
  }

  private static func mqtt(_ c: Configuration, token: String?) -> MQTTProtocol.Settings {
    var dialect = MQTTProtocol.Settings()
    dialect.version = c.mqttVersion
    dialect.clientID = c.mqttClientID ?? defaultMQTTClientID(instance: c.instance)
    dialect.cleanStart = c.mqttCleanStart
    dialect.sessionExpiry = UInt32(clamping: c.mqttSessionExpiry.components.seconds)
    dialect.keepAlive = UInt16(clamping: c.mqttKeepAlive.components.seconds)
    dialect.username = c.mqttUsername
    dialect.password = token.map { Array($0.utf8) }
    dialect.qos = c.mqttQoS
    dialect.topicPrefix = c.mqttTopicPrefix
    dialect.maximumPacketSize = c.maxMessageSize
    dialect.idProperty = c.mqttIDProperty
    return dialect
  }

  private static func stomp(_ c: Configuration, token: String?) -> STOMPProtocol.Settings {
    var dialect = STOMPProtocol.Settings()
    dialect.virtualHost = c.stompVirtualHost
    dialect.login = c.stompUsername
    dialect.passcode = token
    dialect.heartBeat = c.stompHeartBeat
    dialect.idHeader = c.stompIDHeader
    dialect.maximumFrameSize = c.maxMessageSize
    return dialect
  }

  private static func xmpp(_ c: Configuration, url: WebSocketURL, token: String?)
    -> XMPPProtocol.Settings
  {
    // The loader refuses Protocol=xmpp without a valid JID= (validateXMPP).
    let jid = (try? JID(parsing: c.xmppJID ?? "")) ?? JID(local: "", domain: "invalid")
    var dialect = XMPPProtocol.Settings(
      jid: jid, password: token ?? "",
      resource: c.xmppResource ?? defaultMQTTClientID(instance: c.instance),
      transport: SASLTransport(secure: url.secure, host: url.host), nick: c.xmppNick)
    dialect.maxFrameBytes = c.maxMessageSize
    dialect.catchUpAll = c.xmppCatchUpAll
    return dialect
  }

  /// "chatlink-" and the first 12 hex digits of /etc/machine-id (plus "-NAME" for an
  /// instance): stable across restarts, so the broker finds the session, and different on
  /// every host of a fleet and for every instance of a host (a broker ends the older of two
  /// sessions with one client id). XMPP's default resource is the same, for the same reasons.
  static func defaultMQTTClientID(instance: Instance?) -> String {
    let id = (try? FileSystem.readText("/etc/machine-id", limit: 128)) ?? ""
    let hex = id.filter(\.isHexDigit).prefix(12)
    let host = "chatlink-" + (hex.isEmpty ? "host" : String(hex))
    return instance.map { host + "-" + $0.name } ?? host
  }

  /// The WebSocket client's configuration, with the dialect's own subprotocols offered too.
  func clientConfiguration(to url: WebSocketURL, offering extra: [String])
    -> WebSocketClient.Configuration
  {
    let upgrade = link.upgrade
    return WebSocketClient.Configuration(
      url: url, headers: upgrade.headers,
      subprotocols: upgrade.subprotocols + extra.filter { !upgrade.subprotocols.contains($0) },
      deflate: upgrade.compression ? PerMessageDeflateOptions() : nil,
      limits: ClientConnection.Limits(
        maxFrameSize: upgrade.maxMessageSize, maxMessageSize: upgrade.maxMessageSize),
      connectTimeout: connectTimeout.loopMicroseconds,
      closeTimeout: Duration.seconds(3).loopMicroseconds, proxy: proxy)
  }
}
