import JSON
import WebSocket

/// MQTT 5.0 or 3.1.1 over WebSocket (`Protocol=mqtt`): a broker as the backend.
///
/// - Set-up: CONNECT (client id, clean start or a persistent session, keepalive, user name and
///   the token as password); CONNACK accepts or refuses.
/// - Rooms are topic filters, subscribed after every connect at the configured QoS (with a
///   persistent 3.1.1 session the broker already holds the ones subscribed before).
/// - Sends are PUBLISHes to the room's topic; at QoS 1 the PUBACK confirms (MQTT 5: a reason
///   code from 0x80 refuses), at QoS 0 the next PINGRESP does. Packet ids come from the outbox
///   count, so a resend after a reconnect carries the same id, with DUP set. At QoS 2 the
///   broker's PUBREC asks for our PUBREL, which goes out once the outbox holds the entry as
///   released (never PUBLISHed again, only released again), and the PUBCOMP confirms.
/// - Inbound PUBLISHes are stored (room: the topic; the payload as JSON, text or binary; QoS,
///   retain and MQTT 5 properties as `meta`), and a QoS 1 message is acknowledged only once its
///   record is durable: the broker keeps it until then, across a crash or an outage. At QoS 2
///   the PUBREC waits likewise, the packet id is remembered until the broker's PUBREL (the
///   core's `InboundReceipts`), and a redelivery of a remembered id is answered without a
///   second record.
/// - With `idProperty` set (MQTT 5), a message's id is the value of that user property or its
///   Correlation Data, and the store drops a message whose id its room has already.
/// - Keepalive: PINGREQ every KeepAliveSec=, PINGRESP expected.
public struct MQTTProtocol: BackendProtocol {
  /// What `MQTTProtocol` is configured with ([MQTT] in chatlinkd.conf).
  public struct Settings: Sendable, Hashable {
    /// The protocol level.
    public var version = MQTTVersion.v5
    /// The client identifier (stable across restarts, so the broker finds the session).
    public var clientID = "chatlink"
    /// Start a new session on every connect instead of resuming the broker's.
    public var cleanStart = false
    /// Seconds the broker keeps the session after a disconnect (MQTT 5).
    public var sessionExpiry: UInt32 = 7 * 86400
    /// The keepalive promised to the broker, in seconds.
    public var keepAlive: UInt16 = 30
    /// The user name, if any.
    public var username: String?
    /// The password: the token.
    public var password: [UInt8]?
    /// The QoS of subscriptions and publishes: 0, 1 or 2.
    public var qos: UInt8 = 1
    /// Put before a room's name to make the topic a send goes to.
    public var topicPrefix = ""
    /// The largest packet accepted from the broker.
    public var maximumPacketSize = 16 << 20
    /// Where an inbound message's id is (`[MQTT] IDProperty=`, MQTT 5 only): the name of a
    /// user property, or `MQTTProtocol.correlationDataID` for the Correlation Data; empty:
    /// messages have no id.
    public var idProperty = ""

    /// Creates the defaults.
    public init() {}
  }

  /// The most QoS 2 messages the broker may send us unacknowledged (MQTT 5's receive
  /// maximum); at lower QoS the broker's own limit applies.
  static let qos2ReceiveMaximum: UInt16 = 1000

  /// Packet ids 1…`publishIDs` are for publishes (from the outbox count); the rest cycle for
  /// subscriptions, so the two never collide.
  static let publishIDs: UInt64 = 60_000

  let settings: Settings
  let encoder: MQTTEncoder
  var decoder: MQTTDecoder
  /// The broker's receive maximum (MQTT 5), for `maxInFlight`.
  var receiveMaximum: Int?
  /// The largest packet the broker accepts (MQTT 5).
  var brokerMaximumPacketSize: Int?
  var sessionPresent = false
  var connected = false
  /// Subscription packet ids waiting for their SUBACK or UNSUBACK, with the filter.
  var awaitedSubscriptions: [UInt16: String] = [:]
  var nextSubscriptionID: UInt16 = 0
  /// Publish packet ids waiting for their PUBACK, with the outbox count.
  var awaitedPublishes: [UInt16: UInt64] = [:]
  /// The highest count ever published (across connections): a count at or below it is a
  /// resend, with DUP.
  var everPublished: UInt64 = 0
  /// Filters subscribed under the broker's persistent session (kept across connections).
  var sessionFilters: Set<String> = []
  /// Filters the broker granted a lower QoS than asked, with what it granted (kept across
  /// connections: a 3.1.1 session the broker kept is not subscribed again).
  var grantedLess: [String: UInt8] = [:]
  /// Filters whose lower grant was logged already: once per room, not on every reconnect.
  var grantsNoticed: Set<String> = []

  /// Creates the adapter.
  public init(_ settings: Settings) {
    self.settings = settings
    encoder = MQTTEncoder(version: settings.version)
    decoder = MQTTDecoder(
      version: settings.version, maximumPacketSize: settings.maximumPacketSize)
  }

  public var offeredSubprotocols: [String] { ["mqtt"] }
  public var hasRooms: Bool { true }
  public var confirmsByPong: Bool { settings.qos == 0 }
  public var maxFrameSize: Int? { brokerMaximumPacketSize }
  public var maxInFlight: Int? { settings.qos == 0 ? nil : receiveMaximum ?? 1000 }
  public var keepsReceipts: Bool { settings.qos == 2 }

  public var session: ProtocolSession? {
    connected ? ProtocolSession(id: settings.clientID, note: grantNote) : nil
  }

  public mutating func open(_ handshake: ClientHandshake.Result) -> ProtocolOpening {
    decoder = MQTTDecoder(version: settings.version, maximumPacketSize: settings.maximumPacketSize)
    receiveMaximum = nil
    brokerMaximumPacketSize = nil
    sessionPresent = false
    connected = false
    awaitedSubscriptions = [:]
    awaitedPublishes = [:]
    var properties = MQTTProperties()
    if settings.version == .v5 {
      properties.sessionExpiry = settings.cleanStart ? 0 : settings.sessionExpiry
      properties.maximumPacketSize = UInt32(clamping: settings.maximumPacketSize)
      // At QoS 2 each message stays pending until its PUBCOMP: a bounded window keeps the
      // receipts, their journal and the broker's resends after a reconnect bounded too.
      if settings.qos == 2 { properties.receiveMaximum = Self.qos2ReceiveMaximum }
    }
    let connect = MQTTConnect(
      version: settings.version, clientID: settings.clientID, cleanStart: settings.cleanStart,
      keepAlive: settings.keepAlive, username: settings.username, password: settings.password,
      properties: properties)
    return ProtocolOpening(frames: [frame(.connect(connect))], ready: false)
  }

  public mutating func join(_ room: RoomID) -> Message? {
    // A 3.1.1 session the broker kept still holds the subscription: subscribing again would
    // have it send the topic's retained message once more.
    if sessionPresent && settings.version == .v311 && sessionFilters.contains(room.name) {
      return nil
    }
    let id = subscriptionID(for: room.name)
    // MQTT 5: the topic's retained message only for a new subscription, not again on every
    // reconnect to a session that kept it.
    let subscription = MQTTSubscription(
      filter: room.name, qos: settings.qos, retainHandling: settings.version == .v5 ? 1 : 0)
    return frame(.subscribe(packetID: id, filters: [subscription], properties: MQTTProperties()))
  }

  public mutating func leave(_ room: RoomID) -> Message? {
    sessionFilters.remove(room.name)
    grantedLess[room.name] = nil
    let id = subscriptionID(for: room.name)
    return frame(.unsubscribe(packetID: id, filters: [room.name], properties: MQTTProperties()))
  }

  private mutating func subscriptionID(for filter: String) -> UInt16 {
    nextSubscriptionID = nextSubscriptionID % UInt16(65535 - Self.publishIDs) + 1
    let id = UInt16(Self.publishIDs) + nextSubscriptionID
    awaitedSubscriptions[id] = filter
    return id
  }

  /// The topic a send to `room` goes to.
  func topic(_ room: RoomID?) -> String {
    settings.topicPrefix + (room?.name ?? "")
  }

  public func refusal(of entry: OutboxEntry) -> String? {
    let topic = topic(entry.room)
    if entry.room == nil { return "MQTT needs a room (the topic) for every message" }
    if topic.contains(where: { $0 == "+" || $0 == "#" }) {
      return "'\(topic)' is a topic filter with wildcards, not a topic to publish to"
    }
    if topic.utf8.count > 65535 { return "the topic is longer than MQTT allows" }
    return nil
  }

  public mutating func encode(_ entry: OutboxEntry) -> Message {
    if entry.released {
      // The broker holds it (it was sent at QoS 2, whatever QoS= says now): PUBLISHed again,
      // it would deliver it twice.
      let id = UInt16(entry.count % Self.publishIDs + 1)
      awaitedPublishes[id] = entry.count
      return frame(.pubrel(packetID: id, reasonCode: 0))
    }
    var message = MQTTPublish(
      topic: topic(entry.room), payload: entry.textBytes, qos: settings.qos)
    if settings.qos > 0 {
      let id = UInt16(entry.count % Self.publishIDs + 1)
      message.packetID = id
      message.duplicate = entry.count <= everPublished
      awaitedPublishes[id] = entry.count
    }
    if settings.version == .v5 { message.properties.payloadFormat = 1 }
    everPublished = max(everPublished, entry.count)
    return frame(.publish(message))
  }

  /// The "out" record keeps the message's text, not the packet (which may be its PUBREL).
  public func storedForm(of frame: Message, for entry: OutboxEntry) -> Message {
    .text(entry.textBytes)
  }

  /// The "out" record keeps the message's text, not the packet.
  public func storedForm(of frame: Message) -> Message {
    var decoder = MQTTDecoder(version: settings.version, maximumPacketSize: Int.max)
    decoder.append(frame.bytes)
    guard case .publish(let message)? = try? decoder.next() else { return frame }
    return .text(message.payload)
  }

  public mutating func heartbeat() -> Message? { frame(.pingreq) }

  /// A broker may hang up on bad credentials instead of answering CONNACK (RabbitMQ's
  /// web-mqtt closes with 1002 "unauthenticated").
  public func refusal(closedDuringSetUp info: CloseInfo) -> String {
    "the MQTT broker closed the connection before CONNACK (\(info)); "
      + "check [MQTT] Username= and TokenFile="
  }

  func frame(_ packet: MQTTPacket) -> Message {
    .binary(encoder.encode(packet))
  }
}
