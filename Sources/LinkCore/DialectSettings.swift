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

  /// A fresh dialect for a new connection.
  public func makeDialect() -> any BackendProtocol {
    switch self {
    case .envelope(let names, let sender): EnvelopeProtocol(names: names, sender: sender)
    case .raw: RawProtocol()
    case .socketIO(let settings): SocketIOProtocol(settings)
    case .mqtt(let settings): MQTTProtocol(settings)
    case .stomp(let settings): STOMPProtocol(settings)
    }
  }

  /// Whether the dialect has a session of its own on each connection (ack ids, packet ids,
  /// subscriptions, a handshake that carries its settings): it is replaced only together with
  /// its connection, and a change of its settings needs a new connection.
  public var hasSession: Bool {
    switch self {
    case .envelope, .raw: false
    case .socketIO, .mqtt, .stomp: true
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

  /// The Socket.IO settings, when the dialect is Socket.IO.
  public var socketIO: SocketIOProtocol.Settings? {
    if case .socketIO(let settings) = self { settings } else { nil }
  }
}
