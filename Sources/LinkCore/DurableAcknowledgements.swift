import WebSocket

/// Acknowledgements that wait for their records to be durable before they go out: what makes
/// a dialect's inbound delivery end-to-end (the backend redelivers anything not acknowledged,
/// so nothing is acknowledged that a power cut could still take away).
///
/// An acknowledgement is held when the core asks to store its record, learns the record's seq
/// once the store has appended it (`stored`), and is released once everything through that
/// seq is durable, in the order the records were stored. It belongs to the connection that
/// read its frame: after a reconnect the backend redelivers instead, so the waiting ones are
/// void, including those whose records the store has yet to append.
///
/// An acknowledgement may also answer a record stored before (a redelivery the backend marked
/// as such, of a message already stored): it then waits for that record's seq, in its place
/// in the order. So does one whose message the store dropped as a duplicate by id: its seq is
/// the last one stored, which may be durable already, and then no later fsync need come to
/// let it go (`durableThrough`).
public struct DurableAcknowledgements: Sendable {
  /// The seq of an acknowledgement whose record is still to be appended: never durable.
  private static let unassignedSeq = UInt64.max
  /// The seq of a frame that goes out right after the one before it (`holdBehind`).
  private static let followerSeq = UInt64.max - 1
  /// The acknowledgements, oldest first; those near the back may wait for their seq.
  private var waiting = FIFOBuffer<(seq: UInt64, frame: Message)>()
  /// How many have no seq yet (their records are still to be appended).
  private var unassigned = 0
  /// How many `stored` reports still to come belong to a connection that has ended.
  private var voided = 0
  /// Every record through this seq is known durable.
  public private(set) var durableThrough: UInt64 = 0

  /// None waiting.
  public init() {}

  /// How many wait.
  public var count: Int { waiting.count }
  /// Whether none wait.
  public var isEmpty: Bool { waiting.isEmpty }

  /// Holds `frame` until its record, the next one the store appends, is durable.
  public mutating func hold(_ frame: Message) {
    waiting.append((Self.unassignedSeq, frame))
    unassigned += 1
  }

  /// Holds `frame`, which answers the record already stored as `seq`, until that record is
  /// durable and every acknowledgement held before it has gone.
  public mutating func hold(_ frame: Message, afterDurable seq: UInt64) {
    waiting.append((seq, frame))
  }

  /// Holds `frame` until every acknowledgement held before it has gone, and returns nil; or,
  /// when none waits (every record acknowledged so far is durable), returns it to go now.
  public mutating func holdBehind(_ frame: Message) -> Message? {
    guard !waiting.isEmpty else { return frame }
    waiting.append((Self.followerSeq, frame))
    return nil
  }

  /// The store appended the record of the oldest held acknowledgement that had no seq yet.
  public mutating func stored(seq: UInt64) {
    if voided > 0 {
      voided -= 1
      return
    }
    guard unassigned > 0 else { return }
    waiting.assignOldest(of: unassigned, without: Self.unassignedSeq, seq: seq)
    unassigned -= 1
  }

  /// The frames whose records are durable now that everything through `seq` is, oldest
  /// first.
  public mutating func release(through seq: UInt64) -> [Message] {
    durableThrough = max(durableThrough, seq)
    guard let first = waiting.elements.first, first.seq <= seq else { return [] }
    // A follower is never first here (it is held only behind another), so it goes only with
    // the one before it.
    return waiting.takeFirst(while: { $0.seq <= seq || $0.seq == Self.followerSeq }).map(\.frame)
  }

  /// The connection ended: the waiting acknowledgements are void, and so are the seqs still
  /// to be reported for them.
  public mutating func connectionEnded() {
    waiting.removeAll()
    voided += unassigned
    unassigned = 0
  }
}

extension FIFOBuffer where Element == (seq: UInt64, frame: Message) {
  /// Sets the seq of the oldest of the last `count` elements whose seq is `marker`. They are
  /// the last held, but for answers to earlier records held after them: counted back from the
  /// end, in the storage itself (a slice of it held meanwhile would make the write copy it).
  fileprivate mutating func assignOldest(of count: Int, without marker: UInt64, seq: UInt64) {
    var index = storage.endIndex
    var seen = 0
    while seen < count {
      index -= 1
      if storage[index].seq == marker { seen += 1 }
    }
    storage[index].seq = seq
  }
}
