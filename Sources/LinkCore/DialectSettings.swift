/// Which dialect the link speaks over its connection, with that dialect's settings: the core
/// makes the dialect from it, at start and when a reload changes it.
public enum DialectSettings: Sendable, Hashable {
  /// The seeds' JSON event envelopes, with their field and event names and our sender name.
  case envelope(EnvelopeNames, sender: String)
  /// Frames as they are, no rooms.
  case raw
  /// Socket.IO 5 over Engine.IO 4.
  case socketIO(SocketIOProtocol.Settings)
  /// MQTT 3.1.1 or 5 over WebSocket.
  case mqtt(MQTTProtocol.Settings)
  /// STOMP 1.2/1.1 over WebSocket.
  case stomp(STOMPProtocol.Settings)
  /// XMPP over WebSocket (RFC 7395).
  case xmpp(XMPPProtocol.Settings)

  /// A fresh dialect, given what it needs from outside the core.
  public func makeDialect(_ services: DialectServices = DialectServices()) -> any BackendProtocol {
    switch self {
    case .envelope(let names, let sender): EnvelopeProtocol(names: names, sender: sender)
    case .raw: RawProtocol()
    case .socketIO(let settings): SocketIOProtocol(settings)
    case .mqtt(let settings): MQTTProtocol(settings)
    case .stomp(let settings): STOMPProtocol(settings)
    case .xmpp(let settings): XMPPProtocol(settings, services: services)
    }
  }

  /// Whether the dialect has a session of its own on each connection (ack ids, packet ids,
  /// subscriptions, a handshake that carries its settings): it is replaced only together with
  /// its connection, and a change of its settings needs a new connection.
  public var hasSession: Bool {
    switch self {
    case .envelope, .raw: false
    case .socketIO, .mqtt, .stomp, .xmpp: true
    }
  }

  /// What the link promises of inbound messages with these settings, in words, for status:
  /// whether what is sent while chatlinkd is away reaches the store, and whether what arrives
  /// twice is stored twice (`dedupeWindow` ids a room are kept to drop it).
  public func inboundPromise(dedupeWindow: Int) -> String {
    let dedupes = dedupeWindow > 0
    switch self {
    case .envelope(let names, _):
      return Self.catchUpPromise(
        ids: !names.idField.isEmpty, since: !names.sinceField.isEmpty, dedupes: dedupes)
    case .socketIO(let settings):
      return Self.catchUpPromise(
        ids: !settings.names.idField.isEmpty, since: !settings.names.sinceField.isEmpty,
        dedupes: dedupes)
    case .raw:
      return "what arrives while connected; duplicates kept"
    case .mqtt(let settings):
      return Self.mqttPromise(settings, dedupes: dedupes)
    case .stomp(let settings):
      return settings.idHeader.isEmpty || !dedupes
        ? "at least once: ACK once durable; a redelivery is stored again"
        : "exactly once within the dedupe window: ACK once durable, duplicates dropped by "
          + settings.idHeader
    case .xmpp:
      return dedupes
        ? "exactly once within the dedupe window: rooms caught up from their archives after "
          + "the newest stored stanza-id, XEP-0198 acknowledged once durable, duplicates "
          + "dropped by stanza-id"
        : "rooms caught up from their archives after the newest stored stanza-id, XEP-0198 "
          + "acknowledged once durable; a redelivery is stored again"
    }
  }

  private static func mqttPromise(_ settings: MQTTProtocol.Settings, dedupes: Bool) -> String {
    let ids = !settings.idProperty.isEmpty && dedupes
    let byID =
      settings.idProperty == MQTTProtocol.correlationDataID
      ? "duplicates dropped by correlation data"
      : "duplicates dropped by user property " + settings.idProperty
    switch (settings.qos, ids) {
    case (0, false): return "at most once: QoS 0"
    case (0, true): return "at most once: QoS 0; " + byID
    case (2, false): return "exactly once: QoS 2, where the broker grants it"
    case (2, true): return "exactly once: QoS 2, where the broker grants it; " + byID
    case (_, false):
      return "at least once: QoS \(settings.qos), acknowledged once durable; a redelivery is "
        + "stored again"
    case (_, true):
      return "exactly once within the dedupe window: QoS \(settings.qos), acknowledged once "
        + "durable; " + byID
    }
  }

  private static func catchUpPromise(ids: Bool, since: Bool, dedupes: Bool) -> String {
    switch (ids && dedupes, since) {
    case (true, true): "exactly once: ids and catch-up from the newest stored id"
    case (true, false): "duplicates dropped by id; what is sent while away is missed"
    case (false, true): "catch-up from the newest stored id; duplicates kept"
    case (false, false): "what arrives while connected; duplicates kept"
    }
  }

  /// The MQTT settings, when the dialect is MQTT.
  public var mqtt: MQTTProtocol.Settings? {
    if case .mqtt(let settings) = self { settings } else { nil }
  }

  /// The STOMP settings, when the dialect is STOMP.
  public var stomp: STOMPProtocol.Settings? {
    if case .stomp(let settings) = self { settings } else { nil }
  }

  /// The XMPP settings, when the dialect is XMPP.
  public var xmpp: XMPPProtocol.Settings? {
    if case .xmpp(let settings) = self { settings } else { nil }
  }

  /// The Socket.IO settings, when the dialect is Socket.IO.
  public var socketIO: SocketIOProtocol.Settings? {
    if case .socketIO(let settings) = self { settings } else { nil }
  }
}
