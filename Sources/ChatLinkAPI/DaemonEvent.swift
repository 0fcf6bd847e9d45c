import JSON

/// Something that happened, as Subscribe streams it (the IDL's `Event`): one case per kind,
/// each with the event's time (RFC 3339 UTC, as sent) and the fields that kind carries.
public enum DaemonEvent: JSONRepresentable {
  /// A connection to the backend opened, with what the server agreed to.
  case connected(time: String, subprotocol: String?, extensions: String?)
  /// The connection ended: the close code, if one came, and the reason or transport error.
  case disconnected(time: String, reason: String, code: Int?)
  /// A message was stored: its record, its room when the protocol names one, and the
  /// backend's event name (Socket.IO).
  case message(time: String, record: StoredRecord, room: String?, name: String? = nil)
  /// A queued message was written to the backend.
  case sent(time: String, id: String, room: String?)
  /// The backend confirmed a message.
  case confirmed(time: String, id: String, room: String?)
  /// The backend refused a message, which left the outbox.
  case failed(time: String, id: String, room: String?, reason: String)
  /// Something went wrong (the store cannot write, say).
  case error(time: String, text: String)
  /// The status line changed; the stream starts with one.
  case status(time: String, text: String)
  /// A kind this version does not know (a newer daemon's), with its other fields.
  case unknown(name: String, time: String, fields: JSONValue)

  /// The kind's name on the wire: "connected", "message", ….
  public var name: String {
    switch self {
    case .connected: "connected"
    case .disconnected: "disconnected"
    case .message: "message"
    case .sent: "sent"
    case .confirmed: "confirmed"
    case .failed: "failed"
    case .error: "error"
    case .status: "status"
    case .unknown(let name, _, _): name
    }
  }

  /// When it happened, as sent.
  public var time: String {
    switch self {
    case .connected(let time, _, _), .disconnected(let time, _, _), .message(let time, _, _, _),
      .sent(let time, _, _), .confirmed(let time, _, _), .failed(let time, _, _, _),
      .error(let time, _),
      .status(let time, _), .unknown(_, let time, _):
      time
    }
  }

  public init(json: JSONValue) throws(APIDecodingError) {
    let object = try ObjectReader(json)
    let name = try object.string("event")
    let time = try object.string("time")
    switch name {
    case "connected":
      self = .connected(
        time: time, subprotocol: try object.optionalString("subprotocol"),
        extensions: try object.optionalString("extensions"))
    case "disconnected":
      self = .disconnected(
        time: time, reason: try object.string("reason"), code: try object.optionalInt("code"))
    case "message":
      self = .message(
        time: time, record: try object.decode("record"), room: try object.optionalString("room"),
        name: try object.optionalString("name"))
    case "sent":
      self = .sent(time: time, id: try object.string("id"), room: try object.optionalString("room"))
    case "confirmed":
      self = .confirmed(
        time: time, id: try object.string("id"), room: try object.optionalString("room"))
    case "failed":
      self = .failed(
        time: time, id: try object.string("id"), room: try object.optionalString("room"),
        reason: try object.string("reason"))
    case "error": self = .error(time: time, text: try object.string("text"))
    case "status": self = .status(time: time, text: try object.string("text"))
    default:
      let members = json.objectValue?.filter { $0.key != "event" && $0.key != "time" } ?? []
      self = .unknown(name: name, time: time, fields: .object(members))
    }
  }

  /// The object: `event` and `time` first, then the kind's fields in the order the daemon has
  /// always written them, unset ones left out.
  public var json: JSONValue {
    var members: [(key: String, value: JSONValue)] = [
      ("event", .string(name)), ("time", .string(time)),
    ]
    func add(_ key: String, _ value: JSONValue?) {
      if let value { members.append((key, value)) }
    }
    switch self {
    case .connected(_, let subprotocol, let extensions):
      add("subprotocol", subprotocol.map(JSONValue.string))
      add("extensions", extensions.map(JSONValue.string))
    case .disconnected(_, let reason, let code):
      add("reason", .string(reason))
      add("code", code.map { .int(Int64($0)) })
    case .message(_, let record, let room, let name):
      add("record", record.json)
      add("room", room.map(JSONValue.string))
      add("name", name.map(JSONValue.string))
    case .sent(_, let id, let room), .confirmed(_, let id, let room):
      add("id", .string(id))
      add("room", room.map(JSONValue.string))
    case .failed(_, let id, let room, let reason):
      add("id", .string(id))
      add("room", room.map(JSONValue.string))
      add("reason", .string(reason))
    case .error(_, let text), .status(_, let text):
      add("text", .string(text))
    case .unknown(_, _, let fields):
      members += fields.objectValue ?? []
    }
    return .object(members)
  }
}

/// Subscribe's parameters: `(room: ?string)`.
public struct SubscribeParameters: JSONRepresentable {
  /// Only this room's events (and those about no room: the connection's); nil for all.
  public var room: String?

  /// Creates the parameters.
  public init(room: String? = nil) {
    self.room = room
  }

  public init(json: JSONValue) throws(APIDecodingError) {
    room = try ObjectReader(json).optionalRoom("room")
  }

  public var json: JSONValue { .object(["room": room.map(JSONValue.string)]) }
}

/// One reply of the Subscribe stream: `(event: Event)`.
public struct SubscribeReply: JSONRepresentable {
  /// The event.
  public var event: DaemonEvent

  /// Creates the reply.
  public init(event: DaemonEvent) {
    self.event = event
  }

  public init(json: JSONValue) throws(APIDecodingError) {
    event = try ObjectReader(json).decode("event")
  }

  public var json: JSONValue { .object([("event", event.json)]) }
}
