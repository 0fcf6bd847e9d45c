import JSON

/// Where a room's stored history ends: the newest id stored for it and when that record was
/// stored. A dialect that joins after a stored id (`BackendProtocol.join(_:after:)`) names the
/// id; the time is where it falls back to when the backend no longer has the id (an XMPP
/// archive that dropped it answers `item-not-found`).
public struct RoomPosition: Sendable, Hashable {
  /// The id, as the record holds it (unescaped).
  public var id: [UInt8]
  /// When the record was stored, if the store knows.
  public var time: Timestamp?

  /// A position.
  public init(id: [UInt8], time: Timestamp? = nil) {
    self.id = id
    self.time = time
  }
}
