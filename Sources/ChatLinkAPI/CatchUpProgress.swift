import JSON

/// One room catching up from the backend's history (XMPP: its archive), as GetStatus's
/// `catching_up` lists it (the IDL's `CatchUp`).
public struct CatchUpProgress: JSONRepresentable, Hashable {
  /// The room.
  public var room: String
  /// Messages its history has brought so far on this connection.
  public var caughtUp: Int

  /// Creates the progress of one room.
  public init(room: String, caughtUp: Int) {
    self.room = room
    self.caughtUp = caughtUp
  }

  public init(json: JSONValue) throws(APIDecodingError) {
    let object = try ObjectReader(json)
    room = try object.string("room")
    caughtUp = try object.int("caught_up")
  }

  public var json: JSONValue {
    .object([("room", .string(room)), ("caught_up", .int(Int64(caughtUp)))])
  }
}
