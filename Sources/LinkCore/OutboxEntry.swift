import JSON

/// One message waiting in the outbox until the backend confirms it.
public struct OutboxEntry: Sendable, Hashable {
  /// The client message id that travels with the message, so backends can de-duplicate.
  public var id: String
  /// The room (nil in raw mode).
  public var room: RoomID?
  /// The message text.
  public var text: String
  /// A counter, monotonic across restarts; sent as the envelope's `count`.
  public var count: UInt64
  /// When it was accepted.
  public var created: Timestamp

  /// Creates an entry.
  public init(id: String, room: RoomID?, text: String, count: UInt64, created: Timestamp) {
    self.id = id
    self.room = room
    self.text = text
    self.count = count
    self.created = created
  }

  /// Whether `id` may be used as a client id: 1–128 characters of A–Z a–z 0–9 . _ : -.
  public static func isValidID(_ id: String) -> Bool {
    !id.isEmpty && id.utf8.count <= 128
      && id.utf8.allSatisfy { b in
        b.isDigit || (b >= 0x41 && b <= 0x5A) || (b >= 0x61 && b <= 0x7A) || b == 0x2E || b == 0x5F
          || b == 0x3A || b == 0x2D
      }
  }
}
