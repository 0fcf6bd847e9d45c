import ChatLinkAPI
import LinkCore
import Transport
import WebSocket
import WebSocketClient

/// How `BackendLink` connects, and the link core's settings, from a validated configuration.
public struct BackendSettings: Sendable {
  /// The backend.
  public var url: WebSocketURL
  /// Handshake headers, the Authorization header with the token included.
  public var headers: HTTPHeaders
  /// Subprotocols to offer.
  public var subprotocols: [String]
  /// Offer permessage-deflate.
  public var compression: Bool
  /// The largest inbound message accepted.
  public var maxMessageSize: Int
  /// Time allowed for DNS, TCP, TLS and the upgrade together.
  public var connectTimeout: Duration
  /// The HTTP CONNECT proxy: Proxy= or, when unset, https_proxy/http_proxy and no_proxy.
  public var proxy: ProxyAddress?
  /// What the link core needs.
  public var link: LinkSettings
  /// The Socket.IO dialect's settings, the token in its auth object (Protocol=socketio only).
  public var socketIO: SocketIOProtocol.Settings?
  /// The MQTT dialect's settings, the token as its password (Protocol=mqtt only).
  public var mqtt: MQTTProtocol.Settings?
  /// The STOMP dialect's settings, the token as its passcode (Protocol=stomp only).
  public var stomp: STOMPProtocol.Settings?

  /// Takes the settings of a validated configuration (whose URL is `url`), plus the token
  /// (never logged).
  public init(_ c: Configuration, url configured: WebSocketURL, token: String?) {
    let url =
      c.chatProtocol == .socketio ? SocketIOProtocol.endpoint(for: configured) : configured
    self.url = url
    var headers = HTTPHeaders(c.headers)
    if let token { headers.add(name: "Authorization", value: "Bearer \(token)") }
    self.headers = headers
    subprotocols = c.subprotocols
    compression = c.compression
    maxMessageSize = c.maxMessageSize
    connectTimeout = c.connectTimeout
    if let configured = c.proxy {
      proxy = ProxyAddress(url: configured)
    } else {
      proxy = ProxyAddress.fromEnvironment(for: url.host, secure: url.secure)
    }
    link = LinkSettings(
      url: url, pingInterval: c.pingInterval, pongTimeout: c.pongTimeout,
      reconnectMin: c.reconnectMin, reconnectMax: c.reconnectMax)
    if c.chatProtocol == .mqtt {
      mqtt = Self.mqtt(c, token: token)
      // PINGREQ is the keepalive: sent every KeepAliveSec=, as promised to the broker.
      link.pingInterval = c.mqttKeepAlive
    }
    if c.chatProtocol == .stomp {
      stomp = Self.stomp(c, token: token)
      // Our heart-beats go out on the keepalive's interval: HeartBeatMSec=, as CONNECT offers.
      if c.stompHeartBeat > .zero { link.pingInterval = c.stompHeartBeat }
    }
    if c.chatProtocol == .socketio {
      var dialect = SocketIOProtocol.Settings()
      dialect.namespace = c.socketIONamespace
      dialect.auth = SocketIOProtocol.authPayload(c.socketIOAuth, token: token)
      dialect.names = c.envelope
      dialect.sender = c.sender
      socketIO = dialect
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
    return dialect
  }

  private static func stomp(_ c: Configuration, token: String?) -> STOMPProtocol.Settings {
    var dialect = STOMPProtocol.Settings()
    dialect.virtualHost = c.stompVirtualHost
    dialect.login = c.stompUsername
    dialect.passcode = token
    dialect.heartBeat = c.stompHeartBeat
    dialect.maximumFrameSize = c.maxMessageSize
    return dialect
  }

  /// "chatlink-" and the first 12 hex digits of /etc/machine-id (plus "-NAME" for an
  /// instance): stable across restarts, so the broker finds the session, and different on
  /// every host of a fleet and for every instance of a host (a broker ends the older of two
  /// sessions with one client id).
  static func defaultMQTTClientID(instance: Instance?) -> String {
    let id = (try? FileSystem.readText("/etc/machine-id", limit: 128)) ?? ""
    let hex = id.filter(\.isHexDigit).prefix(12)
    let host = "chatlink-" + (hex.isEmpty ? "host" : String(hex))
    return instance.map { host + "-" + $0.name } ?? host
  }

  /// The dialect for these settings.
  func makeBackend(_ c: Configuration) -> any BackendProtocol {
    if let socketIO { return SocketIOProtocol(socketIO) }
    if let mqtt { return MQTTProtocol(mqtt) }
    if let stomp { return STOMPProtocol(stomp) }
    return c.chatProtocol == .raw
      ? RawProtocol() : EnvelopeProtocol(names: c.envelope, sender: c.sender)
  }

  /// Whether going from `self` to `new` needs a new connection (what the upgrade carried).
  func needsReconnect(for new: BackendSettings) -> Bool {
    new.url != url || new.headers != headers || new.proxy != proxy
      || new.subprotocols != subprotocols || new.compression != compression
      || new.maxMessageSize != maxMessageSize || new.socketIO != socketIO || new.mqtt != mqtt
      || new.stomp != stomp
  }

  /// The WebSocket client's configuration, with the dialect's own subprotocols offered too.
  func clientConfiguration(offering extra: [String]) -> WebSocketClient.Configuration {
    WebSocketClient.Configuration(
      url: url, headers: headers,
      subprotocols: subprotocols + extra.filter { !subprotocols.contains($0) },
      deflate: compression ? PerMessageDeflateOptions() : nil,
      limits: ClientConnection.Limits(maxFrameSize: maxMessageSize, maxMessageSize: maxMessageSize),
      connectTimeout: connectTimeout.wholeMicroseconds, closeTimeout: 3_000_000, proxy: proxy)
  }
}
