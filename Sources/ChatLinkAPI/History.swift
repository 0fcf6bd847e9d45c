import JSON

/// History's parameters: `(room: ?string, since_seq: ?int, since_time: ?string, limit: ?int)`.
public struct HistoryParameters: JSONRepresentable {
  /// The records a call returns when it names no limit.
  public static let defaultLimit = 100
  /// The limits a call may ask for.
  public static let limits = 1...10_000

  /// Only this room's records.
  public var room: String?
  /// Only records with a greater seq.
  public var sinceSeq: Int?
  /// Only records received later: an RFC 3339 time.
  public var sinceTime: String?
  /// At most this many records, the newest (`defaultLimit` when nil).
  public var limit: Int?

  /// Creates the parameters.
  public init(
    room: String? = nil, sinceSeq: Int? = nil, sinceTime: String? = nil, limit: Int? = nil
  ) {
    self.room = room
    self.sinceSeq = sinceSeq
    self.sinceTime = sinceTime
    self.limit = limit
  }

  public init(json: JSONValue) throws(APIDecodingError) {
    let object = try ObjectReader(json)
    room = try object.optionalRoom("room")
    if let since = object.optional("since_seq") {
      guard let value = since.intValue, value >= 0 else {
        throw APIDecodingError(field: "since_seq", reason: "must be a non-negative integer")
      }
      sinceSeq = Int(value)
    }
    sinceTime = try object.optionalString("since_time")
    if let limit = object.optional("limit") {
      guard let value = limit.intValue, Self.limits.contains(Int(value)) else {
        throw APIDecodingError(
          field: "limit",
          reason: "must be from \(Self.limits.lowerBound) to \(Self.limits.upperBound)")
      }
      self.limit = Int(value)
    }
  }

  public var json: JSONValue {
    .object([
      "room": room.map(JSONValue.string), "since_seq": sinceSeq.map { .int(Int64($0)) },
      "since_time": sinceTime.map(JSONValue.string), "limit": limit.map { .int(Int64($0)) },
    ])
  }
}

/// History's reply: `(records: []object)`, newest last.
public struct HistoryReply: JSONRepresentable {
  /// The records, oldest first.
  public var records: [StoredRecord]

  /// Creates the reply.
  public init(records: [StoredRecord]) {
    self.records = records
  }

  public init(json: JSONValue) throws(APIDecodingError) {
    records = try ObjectReader(json).decodeArray("records")
  }

  public var json: JSONValue { .object([("records", .array(records.map(\.json)))]) }
}

/// One record of the message store: the JSON object of one line of messages.jsonl, which
/// History returns and the Subscribe message event carries.
///
/// `data` stays a JSON value: it is the backend's payload, whatever it holds.
public struct StoredRecord: JSONRepresentable {
  /// Which way a message went: `in` from the backend, `out` sent by us and confirmed.
  public struct Direction: RawRepresentable, Sendable, Hashable, CustomStringConvertible {
    /// The name on the wire.
    public var rawValue: String

    /// A direction by its wire name.
    public init(rawValue: String) {
      self.rawValue = rawValue
    }

    /// From the backend.
    public static let inbound = Direction(rawValue: "in")
    /// Sent by us, and confirmed by the backend.
    public static let outbound = Direction(rawValue: "out")

    public var description: String { rawValue }
  }

  /// How `data` holds the payload: `json` (the backend's JSON as is), `text` (a JSON string:
  /// a frame that is not JSON) or `binary` (base64).
  public struct PayloadType: RawRepresentable, Sendable, Hashable, CustomStringConvertible {
    /// The name on the wire.
    public var rawValue: String

    /// A type by its wire name.
    public init(rawValue: String) {
      self.rawValue = rawValue
    }

    /// The backend's JSON, embedded.
    public static let json = PayloadType(rawValue: "json")
    /// A text frame that is not JSON, as a string.
    public static let text = PayloadType(rawValue: "text")
    /// A binary frame, base64.
    public static let binary = PayloadType(rawValue: "binary")

    public var description: String { rawValue }
  }

  /// Daemon-assigned, strictly increasing across restarts and rotations.
  public var seq: Int
  /// The receive time (the confirmation time for `out`), RFC 3339 UTC, as stored.
  public var time: String
  /// Which way the message went (`dir`).
  public var direction: Direction
  /// The room as the backend names it, a number or a string; nil (null) when the frame
  /// names none.
  public var room: JSONValue?
  /// How `data` holds the payload.
  public var type: PayloadType
  /// The client message id of an outgoing message.
  public var id: String?
  /// What the protocol keeps besides the payload (MQTT: QoS, retain, properties), an object.
  public var meta: JSONValue?
  /// The payload.
  public var data: JSONValue

  /// Creates a record.
  public init(
    seq: Int, time: String, direction: Direction, room: JSONValue?, type: PayloadType,
    id: String? = nil, meta: JSONValue? = nil, data: JSONValue
  ) {
    self.seq = seq
    self.time = time
    self.direction = direction
    self.room = room
    self.type = type
    self.id = id
    self.meta = meta
    self.data = data
  }

  public init(json: JSONValue) throws(APIDecodingError) {
    let object = try ObjectReader(json)
    seq = try object.int("seq")
    time = try object.string("time")
    direction = Direction(rawValue: try object.string("dir"))
    switch object.optional("room") {
    case nil: room = nil
    case .some(let value):
      guard value.stringValue != nil || value.doubleValue != nil else {
        throw object.wrong("room", "must be a number, a string or null")
      }
      room = value
    }
    type = PayloadType(rawValue: try object.string("type"))
    id = try object.optionalString("id")
    meta = object.optional("meta").flatMap { $0.isNull ? nil : $0 }
    if let meta, meta.objectValue == nil { throw object.wrong("meta", "must be an object") }
    data = try object.present("data")
  }

  /// The object as the store line holds it: `room` null when there is none, `id` only on
  /// outgoing messages, `meta` only when the protocol keeps some.
  public var json: JSONValue {
    var members: [(key: String, value: JSONValue)] = [
      ("seq", .int(Int64(seq))), ("time", .string(time)), ("dir", .string(direction.rawValue)),
      ("room", room ?? .null), ("type", .string(type.rawValue)),
    ]
    if let id { members.append(("id", .string(id))) }
    if let meta { members.append(("meta", meta)) }
    members.append(("data", data))
    return .object(members)
  }
}
