import WebSocket

/// The inbound deliveries a backend makes in two steps (MQTT QoS 2: PUBLISH, then PUBREL),
/// as the core remembers them: which delivery ids are stored and not yet released, so that a
/// redelivery of one is answered without a second record, and a journal that keeps that
/// knowledge across crashes and power cuts.
///
/// The rules that make it exactly once, and never lose a message:
/// - A delivery is pending from the moment its record is stored: the record itself carries
///   its id (MQTT: `packet_id` in `meta`), so the two are durable together, and the journal
///   only has to say which records are released. Its acknowledgement (PUBREC) waits for the
///   record's durability in `DurableAcknowledgements`, as any other.
/// - A release becomes a journal entry, and its answer (PUBCOMP), after which the backend may
///   reuse the id, goes out only once that entry is durable: a stale pending id would swallow
///   the redelivery of the id's next message.
/// - A redelivery (MQTT's DUP) of a pending id is answered once the first record is durable,
///   with no record; a delivery not marked as one is always a new message.
/// - When the backend forgot every delivery (a new MQTT session), the forgetting is journaled
///   and the rooms are joined only once it is durable: nothing of the new session can arrive
///   before the old ids are void for good.
///
/// The journal also carries, now and then, the pending deliveries up to a watermark (every
/// `watermarkStride` records made durable): at start only the store's records after the
/// watermark need reading to learn the rest.
public struct InboundReceipts: Sendable {
  /// Delivery ids stored and not yet released, with the seq of their record.
  public private(set) var pending: [UInt16: UInt64]
  /// The highest seq known durable.
  public private(set) var durableThrough: UInt64
  /// Every delivery with a record at or below this seq is in the journal, or released.
  public private(set) var watermark: UInt64
  /// One per acknowledged record whose seq the store has yet to report, in store order: the
  /// delivery id of a two-step one, nil for any other.
  private var awaitingSeq = FIFOBuffer<UInt16?>()
  /// The highest seq of any two-step delivery's record: a forgetting covers up to it.
  private var highestSeq: UInt64
  /// Journal entries made so far (numbered from 1) and how many of them are durable.
  public private(set) var journaled: UInt64 = 0
  private var journalDurable: UInt64 = 0
  /// Frames that wait for the journal to be durable through an entry, oldest first.
  private var held = FIFOBuffer<(entry: UInt64, frame: Message)>()

  /// How many records made durable move the watermark on (and write the pending deliveries
  /// below it to the journal): at most this many records, and the deliveries still pending,
  /// are read from the store at start.
  public static let watermarkStride: UInt64 = 4096

  /// The state at start: the pending deliveries rebuilt from the journal and the store, every
  /// record through `durableThrough` in the store (the journal was just rewritten with them,
  /// its watermark there).
  public init(pending: [UInt16: UInt64] = [:], durableThrough: UInt64 = 0) {
    self.pending = pending
    self.durableThrough = durableThrough
    watermark = durableThrough
    highestSeq = pending.values.max() ?? 0
  }

  /// What to do with a two-step delivery.
  public enum Delivery: Sendable, Hashable {
    /// A new message: store it.
    case new
    /// A redelivery of the delivery stored as this seq: answer it, store nothing.
    case redelivery(ofSeq: UInt64)
  }

  /// A delivery arrived; a new one's record must then be stored (`willStore`). A new delivery
  /// with an id still pending means the backend reused it: the old one is released.
  public mutating func received(
    _ delivery: TwoStepDelivery, journal: inout [ReceiptJournalEntry]
  ) -> Delivery {
    if delivery.redelivered, let seq = pending[delivery.id] { return .redelivery(ofSeq: seq) }
    if !delivery.redelivered, let seq = pending.removeValue(forKey: delivery.id) {
      append(.released(id: delivery.id, seq: seq), to: &journal)
    }
    return .new
  }

  /// An acknowledged record is about to be stored: the delivery's id, or nil for a record
  /// that is not a two-step delivery, so the seq reported next is paired with it.
  public mutating func willStore(_ id: UInt16?) {
    awaitingSeq.append(id)
  }

  /// The store appended the oldest acknowledged record whose seq was still to come.
  public mutating func stored(seq: UInt64) {
    guard let first = awaitingSeq.elements.first else { return }
    awaitingSeq.remove(at: awaitingSeq.elements.startIndex)
    guard let id = first else { return }
    pending[id] = seq
    highestSeq = max(highestSeq, seq)
  }

  /// Records through `seq` are durable; every `watermarkStride` records, the pending
  /// deliveries up to it go to the journal with the new watermark.
  public mutating func durable(through seq: UInt64, journal: inout [ReceiptJournalEntry]) {
    durableThrough = max(durableThrough, seq)
    guard durableThrough >= watermark + Self.watermarkStride else { return }
    let newly = pending.filter { $0.value > watermark && $0.value <= durableThrough }
    for (id, seq) in newly.sorted(by: { $0.value < $1.value }) {
      append(.received(id: id, seq: seq), to: &journal)
    }
    watermark = durableThrough
    append(.watermark(durableThrough), to: &journal)
  }

  /// The backend released a delivery: forget it, durably; `answer` goes out once that is
  /// durable (at once when nothing it depends on waits). Returns the answer when it may go
  /// now.
  public mutating func released(
    _ id: UInt16, answer: Message, journal: inout [ReceiptJournalEntry]
  ) -> Message? {
    // An id whose record's seq is still to come was never acknowledged: a broker that
    // releases it anyway gets its answer, and the delivery stays pending (a duplicate at
    // worst, never a loss).
    if let seq = pending.removeValue(forKey: id) {
      append(.released(id: id, seq: seq), to: &journal)
    }
    return hold(answer)
  }

  /// The backend forgot every delivery it had not released (a new session): they are void.
  /// Joins must then wait for `hold` (nothing of the new session may arrive before this is
  /// durable).
  public mutating func forgotten(journal: inout [ReceiptJournalEntry]) {
    guard !pending.isEmpty else { return }
    pending = [:]
    append(.forgotten(through: highestSeq), to: &journal)
  }

  /// Holds `frame` until every journal entry made so far is durable; returns it when it may
  /// go at once.
  public mutating func hold(_ frame: Message) -> Message? {
    guard journalDurable < journaled else { return frame }
    held.append((journaled, frame))
    return nil
  }

  /// The journal is durable through entry `entry`: the frames that waited for it, oldest
  /// first.
  public mutating func journalDurable(through entry: UInt64) -> [Message] {
    journalDurable = max(journalDurable, entry)
    guard let first = held.elements.first, first.entry <= journalDurable else { return [] }
    let limit = journalDurable
    return held.takeFirst(while: { $0.entry <= limit }).map(\.frame)
  }

  /// The connection ended: frames held for it are void (the backend asks again).
  public mutating func connectionEnded() {
    held.removeAll()
  }

  private mutating func append(
    _ entry: ReceiptJournalEntry, to journal: inout [ReceiptJournalEntry]
  ) {
    journaled += 1
    journal.append(entry)
  }
}

/// Marks an inbound record as a delivery in two steps (MQTT QoS 2), with the backend's id for
/// it.
public struct TwoStepDelivery: Sendable, Hashable {
  /// The backend's id of the delivery (MQTT's packet id), unique among those not released.
  public var id: UInt16
  /// Whether the backend marked it as sent before (MQTT's DUP).
  public var redelivered: Bool

  /// Creates a mark.
  public init(id: UInt16, redelivered: Bool) {
    self.id = id
    self.redelivered = redelivered
  }
}

/// One entry of the inbound receipts' journal (`LinkAction.journal`).
public enum ReceiptJournalEntry: Sendable, Hashable {
  /// The delivery `id` is pending, its record stored as `seq` (written below a watermark).
  case received(id: UInt16, seq: UInt64)
  /// The delivery `id` whose record is `seq`, and any earlier record of it, is released.
  case released(id: UInt16, seq: UInt64)
  /// Every delivery with a record up to `through` is void.
  case forgotten(through: UInt64)
  /// Every pending delivery with a record up to this seq is in the journal.
  case watermark(UInt64)
}
