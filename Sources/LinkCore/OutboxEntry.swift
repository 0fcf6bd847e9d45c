import JSON

/// One message waiting in the outbox until the backend confirms it.
///
/// An entry is copied several times on its way (the outbox's queue, the send, the ledger of
/// what went out, the store's "out" record), and the messages accepted together (a
/// `SendBatch`) share their room, time and counts: so the entry is a reference to one
/// immutable object for the lot and its place in it. A copy is one reference count, and a
/// batch of messages is one allocation, not one (or three, with its strings) per message.
public struct OutboxEntry: Sendable, Hashable {
  private final class Batch: Sendable {
    let room: RoomID?
    let created: Timestamp
    let firstCount: UInt64
    let texts: PackedStrings
    let ids: [ClientID]
    let plain: [Bool]

    init(
      room: RoomID?, created: Timestamp, firstCount: UInt64, texts: PackedStrings, ids: [ClientID]
    ) {
      self.room = room
      self.created = created
      self.firstCount = firstCount
      self.texts = texts
      self.ids = ids
      var plain: [Bool] = []
      plain.reserveCapacity(texts.count)
      for i in texts.indices {
        var text = false
        texts.withUTF8(at: i) { text = JSONString.isPlain($0) }
        plain.append(text && (i >= ids.count || ids[i].isPlain))
      }
      self.plain = plain
    }
  }

  private let batch: Batch
  /// The entry's place in the batch, with `released` in the sign bit: an entry is two whole
  /// words, so the enums that carry one (the link's actions) move it without a byte of padding
  /// to step around.
  private var slot: Int

  /// The entry's place in the batch.
  private var index: Int { slot & Int.max }

  /// The backend holds the message and we released it (MQTT QoS 2: its PUBREC came and our
  /// PUBREL is durable in the outbox): it must never be sent again, only its release, until the
  /// backend confirms it. State, not identity: equality and hashing leave it out.
  public var released: Bool {
    get { slot < 0 }
    set { slot = newValue ? slot | Int.min : slot & Int.max }
  }

  /// The client id that travels with the message, so backends can de-duplicate. A drawn id's
  /// text is made on each call: the paths every message takes use `clientID`.
  public var id: String { clientID.description }
  /// The client id, as the outbox keeps it.
  public var clientID: ClientID { batch.ids[index] }
  /// The room (nil in raw mode).
  public var room: RoomID? { batch.room }
  /// Whether both were accepted together (and so share their room and time).
  public func isInBatch(of other: OutboxEntry) -> Bool { batch === other.batch }
  /// The message text, made on each call: the paths every message takes read its bytes with
  /// `withTextUTF8`.
  public var text: String { batch.texts[index] }
  /// The message text's UTF-8 bytes, copied out.
  public var textBytes: [UInt8] {
    var bytes: [UInt8] = []
    withTextUTF8 { bytes = Array($0) }
    return bytes
  }
  /// The message text's length in UTF-8 bytes.
  public var textUTF8Count: Int { batch.texts.utf8Count(at: index) }
  /// Calls `body` with the text's UTF-8 bytes, read where the batch keeps them (no copy of
  /// the string, so no reference count). Not generic: across modules, a generic result would
  /// look up its type's metadata on every call.
  public func withTextUTF8(_ body: (UnsafeBufferPointer<UInt8>) -> Void) {
    batch.texts.withUTF8(at: index, body)
  }

  /// A counter, monotonic across restarts; sent as the envelope's `count`.
  public var count: UInt64 { batch.firstCount + UInt64(index) }
  /// When it was accepted.
  public var created: Timestamp { batch.created }
  /// Whether text and id go into a JSON string as they are (nothing to escape, as nearly
  /// always): checked once here, for the outbox line and the frame that each write them.
  public var isPlain: Bool { batch.plain[index] }

  /// Creates an entry.
  public init(id: String, room: RoomID?, text: String, count: UInt64, created: Timestamp) {
    self.init(
      Batch(
        room: room, created: created, firstCount: count, texts: PackedStrings([text]),
        ids: [.given(id)]),
      0)
  }

  private init(_ batch: Batch, _ index: Int) {
    self.batch = batch
    slot = index
  }

  /// The entries of messages accepted together, in order: `texts[i]` with `ids[i]` and count
  /// `firstCount + i` (as many as there are both texts and ids).
  public static func batch(
    room: RoomID?, texts: PackedStrings, ids: [ClientID], firstCount: UInt64, created: Timestamp
  ) -> [OutboxEntry] {
    let batch = Batch(room: room, created: created, firstCount: firstCount, texts: texts, ids: ids)
    return (0..<min(texts.count, ids.count)).map { OutboxEntry(batch, $0) }
  }

  public static func == (a: OutboxEntry, b: OutboxEntry) -> Bool {
    (a.batch === b.batch && a.index == b.index)
      || (a.count == b.count && a.clientID == b.clientID && a.room == b.room && a.text == b.text
        && a.created == b.created)
  }

  public func hash(into hasher: inout Hasher) {
    hasher.combine(clientID)
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
