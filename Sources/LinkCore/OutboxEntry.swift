import JSON

/// One message waiting in the outbox until the backend confirms it.
///
/// An entry is copied several times on its way (the outbox's queue, the send, the ledger of
/// what went out, the store's "out" record), so its fields live in one immutable object: a
/// copy is one reference count, not one per string.
public struct OutboxEntry: Sendable, Hashable {
  private final class Storage: Sendable {
    let id: String
    let room: RoomID?
    let text: String
    let count: UInt64
    let created: Timestamp
    let isPlain: Bool

    init(id: String, room: RoomID?, text: String, count: UInt64, created: Timestamp) {
      self.id = id
      self.room = room
      self.text = text
      self.count = count
      self.created = created
      var text = text
      var id = id
      isPlain = text.withUTF8(JSONString.isPlain) && id.withUTF8(JSONString.isPlain)
    }
  }

  private let storage: Storage

  /// The client message id that travels with the message, so backends can de-duplicate.
  public var id: String { storage.id }
  /// The room (nil in raw mode).
  public var room: RoomID? { storage.room }
  /// The message text.
  public var text: String { storage.text }
  /// A counter, monotonic across restarts; sent as the envelope's `count`.
  public var count: UInt64 { storage.count }
  /// When it was accepted.
  public var created: Timestamp { storage.created }
  /// Whether text and id go into a JSON string as they are (nothing to escape, as nearly
  /// always): checked once here, for the outbox line and the frame that each write them.
  public var isPlain: Bool { storage.isPlain }

  /// Creates an entry.
  public init(id: String, room: RoomID?, text: String, count: UInt64, created: Timestamp) {
    storage = Storage(id: id, room: room, text: text, count: count, created: created)
  }

  public static func == (a: OutboxEntry, b: OutboxEntry) -> Bool {
    a.storage === b.storage
      || (a.count == b.count && a.id == b.id && a.room == b.room && a.text == b.text
        && a.created == b.created)
  }

  public func hash(into hasher: inout Hasher) {
    hasher.combine(id)
    hasher.combine(room)
    hasher.combine(text)
    hasher.combine(count)
    hasher.combine(created)
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
