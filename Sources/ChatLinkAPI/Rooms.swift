import JSON

/// Join's and Leave's parameters: `(room: string)`.
public struct RoomParameters: JSONRepresentable {
  /// The room, as the backend names it (e.g. "7" or "ops").
  public var room: String

  /// Creates the parameters.
  public init(room: String) {
    self.room = room
  }

  public init(json: JSONValue) throws(APIDecodingError) {
    let object = try ObjectReader(json)
    guard let room = try object.optionalRoom("room") else { throw object.missing("room") }
    self.room = room
  }

  public var json: JSONValue { .object([("room", .string(room))]) }
}

/// ListRooms's reply: `(rooms: []string)`.
public struct ListRoomsReply: JSONRepresentable {
  /// The rooms joined, in join order.
  public var rooms: [String]

  /// Creates the reply.
  public init(rooms: [String]) {
    self.rooms = rooms
  }

  public init(json: JSONValue) throws(APIDecodingError) {
    rooms = try ObjectReader(json).strings("rooms")
  }

  public var json: JSONValue { .object([("rooms", .array(rooms.map(JSONValue.string)))]) }
}

/// Ping's reply: `(rtt_ms: float)`.
public struct PingReply: JSONRepresentable {
  /// The round trip to the backend, in milliseconds.
  public var rttMs: Double

  /// Creates the reply.
  public init(rttMs: Double) {
    self.rttMs = rttMs
  }

  public init(json: JSONValue) throws(APIDecodingError) {
    rttMs = try ObjectReader(json).double("rtt_ms")
  }

  public var json: JSONValue { .object([("rtt_ms", .double(rttMs))]) }
}
