import WebSocket

/// What was sent on the current connection and not yet confirmed: the bookkeeping that turns
/// an echo, a pong or a protocol acknowledgement into "this outbox entry was delivered".
///
/// The outbox keeps its entries in `count` order and they go out in that order, so the
/// entries sent on this connection are exactly the pending ones with `count <=
/// lastSentCount`. A pong answers a ping sent after them, so it confirms every entry the
/// ping covered (one pong confirms a whole burst); an echo or an acknowledgement confirms one.
/// After a reconnect nothing is known to have arrived: `reset()` and everything unconfirmed
/// goes out again, in order (at least once).
public struct DeliveryLedger: Sendable {
  /// An entry written to the backend with the frame that carried it: the store's "out" record
  /// keeps the same bytes, so each message is encoded once.
  public struct Sent: Sendable {
    /// The outbox entry.
    public var entry: OutboxEntry
    /// The frame that went out, as the store keeps it (`BackendProtocol.storedForm`).
    public var frame: StoredFrame
  }

  /// The highest outbox count written on this connection (0: none yet).
  public private(set) var lastSentCount: UInt64 = 0
  /// Sent entries not yet confirmed, oldest first.
  private var sent = FIFOBuffer<Sent>()
  /// Hashes of the client ids of the unconfirmed entries with a count up to `indexedCount`:
  /// an echo of another client's message costs one hash, not a search. A collision is
  /// harmless: the search compares the ids themselves.
  ///
  /// Built only when an echo is not the oldest entry's: with a backend that confirms by pong
  /// or by acknowledgement, or echoes only what it gets in order, no id is ever hashed.
  private var sentIDs: Set<Int> = []
  /// The highest count whose entry's id is in `sentIDs` (or was, before its confirmation).
  private var indexedCount: UInt64 = 0

  /// An empty ledger.
  public init() {}

  /// Entries sent and not yet confirmed.
  public var unconfirmedCount: Int { sent.count }

  /// Notes that `entry` went out in `frame`.
  public mutating func recordSent(_ entry: consuming OutboxEntry, frame: consuming StoredFrame) {
    lastSentCount = entry.count
    // Both taken as they are: every message sent passes here.
    sent.append(Sent(entry: consume entry, frame: consume frame))
  }

  /// Notes that `entry` was passed over on this connection (it failed without going out).
  public mutating func skip(_ entry: OutboxEntry) {
    lastSentCount = entry.count
  }

  /// Confirms the entry with this client id (its echo arrived), if it was sent on this
  /// connection and is unconfirmed.
  ///
  /// Echoes arrive in the order the messages went out, so the entry is almost always the
  /// oldest one and the search stops at once.
  public mutating func confirm(id: String) -> Sent? {
    guard let oldest = sent.elements.first else { return nil }
    if oldest.entry.clientID.matches(id) { return remove(at: sent.elements.startIndex) }
    indexUnindexedIDs()
    guard sentIDs.contains(idHash(id)),
      let index = sent.elements.firstIndex(where: { $0.entry.clientID.matches(id) })
    else { return nil }
    return remove(at: index)
  }

  /// How many ids `sentIDs` holds (for tests).
  var indexedIDCount: Int { sentIDs.count }

  /// Adds the ids sent since the last call to `sentIDs`, so each sent id is hashed at most once.
  private mutating func indexUnindexedIDs() {
    guard indexedCount < lastSentCount else { return }
    let unconfirmed = sent.elements
    var first = unconfirmed.endIndex
    while first > unconfirmed.startIndex && unconfirmed[first - 1].entry.count > indexedCount {
      first -= 1
    }
    for item in unconfirmed[first...] { sentIDs.insert(idHash(item.entry.clientID)) }
    indexedCount = lastSentCount
  }

  /// Confirms the entry with this outbox count (the dialect acknowledged it).
  public mutating func confirm(count: UInt64) -> Sent? {
    guard let index = sent.elements.firstIndex(where: { $0.entry.count == count }) else {
      return nil
    }
    return remove(at: index)
  }

  /// The entry with this outbox count, if it was sent on this connection and is unconfirmed
  /// (it stays so).
  public func unconfirmed(count: UInt64) -> OutboxEntry? {
    sent.elements.first(where: { $0.entry.count == count })?.entry
  }

  /// Confirms every unconfirmed entry with a count up to `count`, oldest first: what a pong
  /// proves for a ping sent after them.
  public mutating func confirm(through count: UInt64) -> ArraySlice<Sent> {
    let confirmed = sent.takeFirst(while: { $0.entry.count <= count })
    if !sentIDs.isEmpty {
      for item in confirmed where item.entry.count <= indexedCount {
        sentIDs.remove(idHash(item.entry.clientID))
      }
    }
    return confirmed
  }

  /// Forgets the connection: nothing unconfirmed is known to have arrived, so all of it is
  /// sent again from the oldest.
  public mutating func reset() {
    lastSentCount = 0
    indexedCount = 0
    sent.removeAll()
    sentIDs.removeAll(keepingCapacity: sentIDs.capacity <= 4096)
  }

  /// The index of the first of `entries` (in count order) not yet sent on this connection.
  public func firstUnsent(in entries: ArraySlice<OutboxEntry>) -> Int {
    var low = entries.startIndex
    var high = entries.endIndex
    while low < high {
      let mid = (low + high) / 2
      if entries[mid].count <= lastSentCount { low = mid + 1 } else { high = mid }
    }
    return low
  }

  private mutating func remove(at index: Int) -> Sent {
    let item = sent.remove(at: index)
    if item.entry.count <= indexedCount { sentIDs.remove(idHash(item.entry.clientID)) }
    return item
  }

  /// Where this ledger's id hashes start: drawn once, so that ids chosen to collide with ours
  /// cannot be worked out in advance (a collision only costs a search, never a wrong match).
  private let hashSeed = UInt64.random(in: .min ... .max)

  /// The hash `sentIDs` holds for a client id: FNV-1a over its bytes from the ledger's seed.
  /// Not the standard library's `hashValue`: SipHash over a String costs several times as much
  /// for a 16-byte id.
  func idHash(_ id: String) -> Int {
    // Read in place where the string allows it: `withUTF8` would copy a bridged or small one.
    let hashed: Int? = id.utf8.withContiguousStorageIfAvailable(idHash(bytes:))
    return hashed ?? idHash(bytes: id.utf8)
  }

  /// The hash of an entry's client id: the same as for its text.
  func idHash(_ id: ClientID) -> Int {
    id.withUTF8(idHash(bytes:))
  }

  private func idHash(bytes: some Collection<UInt8>) -> Int {
    Int(truncatingIfNeeded: FNV1a.hash64(bytes, basis: hashSeed))
  }
}
