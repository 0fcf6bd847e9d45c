import ChatLinkAPI
import JSON
import LinkCore
import WebSocket

/// Everything chatlinkd.conf can say, with the defaults the shipped file shows commented out.
public struct Configuration: Sendable, Hashable {
  /// How inbound frames are interpreted and outbound messages encoded.
  public enum ChatProtocol: String, Sendable, Hashable, CaseIterable {
    /// The seeds' JSON event envelopes.
    case envelope
    /// Frames pass through untouched.
    case raw
    /// Socket.IO 5 over Engine.IO 4.
    case socketio
    /// MQTT 5 or 3.1.1: a broker, rooms as topic filters.
    case mqtt
    /// STOMP 1.2 or 1.1: a broker, rooms as destinations.
    case stomp
    /// XMPP over WebSocket (RFC 7395): a chat server, rooms as MUC rooms.
    case xmpp
  }

  /// When appended store lines are made durable.
  public enum SyncMode: String, Sendable, Hashable, CaseIterable {
    /// fsync before a record counts as stored.
    case always
    /// Group commit: fsync at least every SyncIntervalMSec.
    case batch
    /// Leave it to the kernel.
    case none
  }

  /// Field and event names of the envelope protocol.
  public typealias Envelope = EnvelopeNames

  // [Backend]
  /// The backend, ws:// or wss://.
  public var url: WebSocketURL?
  /// A file holding the bearer token; `$CREDENTIALS_DIRECTORY/token` wins when present.
  public var tokenFile: String?
  /// Extra handshake headers, in order.
  public var headers: [(name: String, value: String)] = []
  /// Subprotocols to offer.
  public var subprotocols: [String] = []
  /// Trusted CAs for wss://; nil means the system store.
  public var caFile: String?
  /// An HTTP CONNECT proxy, e.g. http://proxy:3128; nil means https_proxy/no_proxy apply.
  public var proxy: String?
  /// Envelope, raw, socketio, mqtt, stomp or xmpp.
  public var chatProtocol = ChatProtocol.envelope
  /// Rooms joined after every connect.
  public var rooms: [String] = []
  /// The sender name put on outgoing messages.
  public var sender = "chatlink"
  /// Time between keepalive pings.
  public var pingInterval: Duration = .seconds(10)
  /// Time without a pong (or any frame) after a ping before the peer is declared dead.
  public var pongTimeout: Duration = .seconds(10)
  /// Time allowed for DNS, TCP, TLS and the upgrade together.
  public var connectTimeout: Duration = .seconds(10)
  /// The smallest reconnect delay.
  public var reconnectMin: Duration = .seconds(1)
  /// The largest reconnect delay.
  public var reconnectMax: Duration = .seconds(60)
  /// Offer permessage-deflate.
  public var compression = true
  /// The largest inbound message accepted (after decompression).
  public var maxMessageSize = 16 << 20
  /// Envelope field names.
  public var envelope = Envelope()

  // [SocketIO]
  /// The Socket.IO namespace to connect to.
  public var socketIONamespace = "/"
  /// The auth object sent with the namespace connect (the token is added as "token").
  public var socketIOAuth = JSONValue.object([])

  // [MQTT]
  /// The protocol level.
  public var mqttVersion = MQTTVersion.v5
  /// The client id; nil: "chatlink-" and the first 12 hex digits of the machine id.
  public var mqttClientID: String?
  /// Start a new session on every connect.
  public var mqttCleanStart = false
  /// How long the broker keeps the session while we are away (MQTT 5).
  public var mqttSessionExpiry: Duration = .seconds(7 * 86400)
  /// The keepalive promised to the broker (PINGREQ this often).
  public var mqttKeepAlive: Duration = .seconds(30)
  /// The user name; the token is the password.
  public var mqttUsername: String?
  /// The QoS of subscriptions and publishes.
  public var mqttQoS: UInt8 = 1
  /// Put before a room's name to make the topic a send goes to.
  public var mqttTopicPrefix = ""
  /// The MQTT 5 user property holding a stable id set by publishers, or "correlation-data"
  /// for the Correlation Data ([MQTT] IDProperty=); empty: none.
  public var mqttIDProperty = ""

  // [STOMP]
  /// The `host` header of CONNECT: the broker's virtual host.
  public var stompVirtualHost = "/"
  /// The `login` header; the token is the passcode.
  public var stompUsername: String?
  /// Heart-beats sent, and asked of the server, this often; zero: none.
  public var stompHeartBeat: Duration = .milliseconds(10000)
  /// The MESSAGE header holding a stable id set by senders ([STOMP] IDHeader=); empty: none.
  public var stompIDHeader = ""

  // [XMPP]
  /// The account's bare JID ([XMPP] JID=); required with Protocol=xmpp.
  public var xmppJID: String?
  /// The nick in every room; nil: the JID's local part.
  public var xmppNick: String?
  /// The resource to bind; nil: chatlink- and 12 hex digits of /etc/machine-id (-NAME).
  public var xmppResource: String?
  /// Whether a room never stored imports its whole archive ([XMPP] CatchUp=all).
  public var xmppCatchUpAll = false

  /// The instance (`chatlinkd@NAME`, `--instance NAME`) whose defaults these are; nil for the
  /// plain chatlinkd.service.
  public var instance: Instance?

  // [Store]
  /// Where messages.jsonl and the outbox live.
  public var storeDirectory = "/var/lib/chatlink"
  /// When store lines become durable.
  public var sync = SyncMode.batch
  /// The group-commit interval for Sync=batch (SyncIntervalMSec=).
  public var syncInterval: Duration = .milliseconds(50)
  /// Rotate messages.jsonl when it reaches this size.
  public var maxFileSize = 64 << 20
  /// Keep this many files in all (the live one and rotated ones).
  public var maxFiles = 8
  /// The most recent inbound message ids kept per room, for dropping what the backend
  /// delivers again (DedupeWindow=); 0 keeps none.
  public var dedupeWindow = 10_000
  /// How often a running daemon writes the dedupe window to its snapshot, so a start after a
  /// crash reads only the records stored since (DedupeSnapshotSec=); zero: at a clean stop only.
  public var dedupeSnapshotInterval = Duration.seconds(60)

  // [Outbox]
  /// The most unconfirmed outgoing messages kept; sends beyond it are refused.
  public var outboxMaxMessages = 10_000

  // [Control]
  /// The Varlink control socket.
  public var controlSocket = "/run/chatlink/control.sock"
  /// Its file mode.
  public var socketMode: UInt32 = 0o660
  /// Its group; members may call every method.
  public var socketGroup = "chatlink"

  // [Metrics]
  /// Where the HTTP metrics endpoint listens; nil (the default) serves none.
  public var metricsListen: MetricsListenAddress?

  // [Daemon]
  /// The lowest log level written.
  public var logLevel = "info"

  /// Creates the defaults.
  public init() {}

  /// The defaults of `instance`: its store directory and control socket.
  public init(instance: Instance?) {
    self.instance = instance
    if let instance {
      storeDirectory = instance.storeDirectory
      controlSocket = instance.controlSocket
    }
  }

  public static func == (lhs: Configuration, rhs: Configuration) -> Bool {
    lhs.comparable == rhs.comparable
      && lhs.headers.map { "\($0.name): \($0.value)" }
        == rhs.headers.map { "\($0.name): \($0.value)" }
  }

  public func hash(into hasher: inout Hasher) {
    hasher.combine(comparable)
  }

  /// Every field but the header tuples, for equality.
  private var comparable: [String] {
    [
      url?.description ?? "", tokenFile ?? "", subprotocols.joined(separator: " "), caFile ?? "",
      proxy ?? "", chatProtocol.rawValue, rooms.joined(separator: " "), sender, "\(pingInterval)",
      "\(pongTimeout)", "\(connectTimeout)", "\(reconnectMin)", "\(reconnectMax)", "\(compression)",
      "\(maxMessageSize)", "\(envelope)", socketIONamespace, socketIOAuth.description,
      "\(mqttVersion)", mqttClientID ?? "", "\(mqttCleanStart)", "\(mqttSessionExpiry)",
      "\(mqttKeepAlive)", mqttUsername ?? "", "\(mqttQoS)", mqttTopicPrefix, mqttIDProperty,
      stompVirtualHost, stompUsername ?? "", "\(stompHeartBeat)", stompIDHeader,
      xmppJID ?? "", xmppNick ?? "", xmppResource ?? "", "\(xmppCatchUpAll)",
      storeDirectory, sync.rawValue, "\(syncInterval)",
      "\(maxFileSize)", "\(maxFiles)", "\(dedupeWindow)", "\(dedupeSnapshotInterval)",
      "\(outboxMaxMessages)", controlSocket,
      "\(socketMode)",
      socketGroup, metricsListen?.description ?? "", logLevel, instance?.name ?? "",
    ]
  }
}
