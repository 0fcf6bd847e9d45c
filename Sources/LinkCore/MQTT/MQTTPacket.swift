/// The MQTT protocol levels spoken: 3.1.1 (level 4) and 5.0 (level 5).
public enum MQTTVersion: UInt8, Sendable, Hashable {
  /// MQTT 3.1.1 (OASIS, 2014).
  case v311 = 4
  /// MQTT 5.0 (OASIS, 2019).
  case v5 = 5
}

/// The message of a PUBLISH packet.
public struct MQTTPublish: Sendable, Hashable {
  /// The topic it was published to.
  public var topic: String
  /// The payload, as sent.
  public var payload: [UInt8]
  /// 0 (at most once), 1 (at least once) or 2 (exactly once).
  public var qos: UInt8
  /// Whether it is the broker's retained message for the topic.
  public var retain: Bool
  /// Whether this is a resend of a packet that may have arrived before.
  public var duplicate: Bool
  /// The packet id (QoS 1 and 2 only).
  public var packetID: UInt16?
  /// MQTT 5 properties (content type, user properties, response topic, …).
  public var properties: MQTTProperties

  /// Creates a message.
  public init(
    topic: String, payload: [UInt8], qos: UInt8, retain: Bool = false, duplicate: Bool = false,
    packetID: UInt16? = nil, properties: MQTTProperties = MQTTProperties()
  ) {
    self.topic = topic
    self.payload = payload
    self.qos = qos
    self.retain = retain
    self.duplicate = duplicate
    self.packetID = packetID
    self.properties = properties
  }
}

/// What a CONNECT packet says.
public struct MQTTConnect: Sendable, Hashable {
  /// The protocol level.
  public var version: MQTTVersion
  /// The client identifier.
  public var clientID: String
  /// Whether the broker should discard any session it holds for this client.
  public var cleanStart: Bool
  /// The keepalive in seconds (0: none).
  public var keepAlive: UInt16
  /// The user name, if any.
  public var username: String?
  /// The password (the token), if any.
  public var password: [UInt8]?
  /// MQTT 5 properties (session expiry, receive maximum, …).
  public var properties: MQTTProperties

  /// Creates the packet's content.
  public init(
    version: MQTTVersion, clientID: String, cleanStart: Bool, keepAlive: UInt16,
    username: String? = nil, password: [UInt8]? = nil,
    properties: MQTTProperties = MQTTProperties()
  ) {
    self.version = version
    self.clientID = clientID
    self.cleanStart = cleanStart
    self.keepAlive = keepAlive
    self.username = username
    self.password = password
    self.properties = properties
  }
}

/// One MQTT control packet, in either direction.
public enum MQTTPacket: Sendable, Hashable {
  /// Opens the session (client).
  case connect(MQTTConnect)
  /// The broker's answer: whether it holds a session for us, a reason code (0: accepted).
  case connack(sessionPresent: Bool, reasonCode: UInt8, properties: MQTTProperties)
  /// A message.
  case publish(MQTTPublish)
  /// Acknowledges a QoS 1 PUBLISH (reason codes from 0x80 are failures, MQTT 5).
  case puback(packetID: UInt16, reasonCode: UInt8, properties: MQTTProperties)
  /// QoS 2, step 1 (received).
  case pubrec(packetID: UInt16, reasonCode: UInt8)
  /// QoS 2, step 2 (release).
  case pubrel(packetID: UInt16, reasonCode: UInt8)
  /// QoS 2, step 3 (complete).
  case pubcomp(packetID: UInt16, reasonCode: UInt8)
  /// Subscribes to topic filters, each with a maximum QoS.
  case subscribe(packetID: UInt16, filters: [MQTTSubscription], properties: MQTTProperties)
  /// The broker's answer: per filter, the granted QoS or a failure (from 0x80).
  case suback(packetID: UInt16, reasonCodes: [UInt8], properties: MQTTProperties)
  /// Removes subscriptions.
  case unsubscribe(packetID: UInt16, filters: [String], properties: MQTTProperties)
  /// The broker's answer to an UNSUBSCRIBE.
  case unsuback(packetID: UInt16, reasonCodes: [UInt8])
  /// The keepalive probe.
  case pingreq
  /// Its answer.
  case pingresp
  /// The end of the session (MQTT 5: with a reason code).
  case disconnect(reasonCode: UInt8, properties: MQTTProperties)
  /// Extended authentication (MQTT 5; not used by this client, read to report it).
  case auth(reasonCode: UInt8)

  /// The packet type number of the fixed header.
  public var typeNumber: UInt8 {
    switch self {
    case .connect: 1
    case .connack: 2
    case .publish: 3
    case .puback: 4
    case .pubrec: 5
    case .pubrel: 6
    case .pubcomp: 7
    case .subscribe: 8
    case .suback: 9
    case .unsubscribe: 10
    case .unsuback: 11
    case .pingreq: 12
    case .pingresp: 13
    case .disconnect: 14
    case .auth: 15
    }
  }
}

/// A topic filter to subscribe to, with the most QoS wanted.
public struct MQTTSubscription: Sendable, Hashable {
  /// The filter (`chat/7`, `chat/+/alerts`, `chat/#`).
  public var filter: String
  /// The maximum QoS wanted.
  public var qos: UInt8
  /// MQTT 5: when the broker sends the retained messages (0: on every subscribe, 1: only
  /// when the subscription is new, 2: never).
  public var retainHandling: UInt8

  /// Creates a subscription.
  public init(filter: String, qos: UInt8, retainHandling: UInt8 = 0) {
    self.filter = filter
    self.qos = qos
    self.retainHandling = retainHandling
  }
}

/// The MQTT 5 properties this client reads or writes; unknown identifiers are malformed.
public struct MQTTProperties: Sendable, Hashable {
  /// 0x01: 1 when the payload is UTF-8 text.
  public var payloadFormat: UInt8?
  /// 0x02: seconds until the message expires.
  public var messageExpiry: UInt32?
  /// 0x03: the payload's content type.
  public var contentType: String?
  /// 0x08: where a reply should go.
  public var responseTopic: String?
  /// 0x09: what ties a reply to its request.
  public var correlationData: [UInt8]?
  /// 0x0B: the subscriptions a message matched.
  public var subscriptionIDs: [UInt32] = []
  /// 0x11: seconds the broker keeps the session after the connection ends.
  public var sessionExpiry: UInt32?
  /// 0x12: the client id the broker chose.
  public var assignedClientID: String?
  /// 0x13: the keepalive the broker wants instead of ours.
  public var serverKeepAlive: UInt16?
  /// 0x1F: a human reason.
  public var reasonString: String?
  /// 0x21: the most unacknowledged QoS 1 and 2 messages the sender accepts.
  public var receiveMaximum: UInt16?
  /// 0x22: the most topic aliases the sender accepts.
  public var topicAliasMaximum: UInt16?
  /// 0x23: a topic alias.
  public var topicAlias: UInt16?
  /// 0x24: the highest QoS the broker supports.
  public var maximumQoS: UInt8?
  /// 0x25: whether the broker supports retained messages.
  public var retainAvailable: Bool?
  /// 0x26: user properties, in order (names may repeat).
  public var userProperties: [MQTTUserProperty] = []
  /// 0x27: the largest packet the sender accepts.
  public var maximumPacketSize: UInt32?

  /// No properties.
  public init() {}

  /// Whether no property is set.
  public var isEmpty: Bool { self == MQTTProperties() }
}

/// One MQTT 5 user property.
public struct MQTTUserProperty: Sendable, Hashable {
  /// The name.
  public var name: String
  /// The value.
  public var value: String

  /// Creates a property.
  public init(_ name: String, _ value: String) {
    self.name = name
    self.value = value
  }
}
