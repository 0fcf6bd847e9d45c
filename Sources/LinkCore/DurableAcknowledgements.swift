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
public struct DurableAcknowledgements: Sendable {
  /// The acknowledgements, oldest first; those at the back may wait for their seq.
  private var waiting = FIFOBuffer<(seq: UInt64, frame: Message)>()
  /// How many at the back have no seq yet (their records are still to be appended).
  private var unassigned = 0
  /// How many `stored` reports still to come belong to a connection that has ended.
  private var voided = 0

  /// None waiting.
  public init() {}

  /// How many wait.
  public var count: Int { waiting.count }
  /// Whether none wait.
  public var isEmpty: Bool { waiting.isEmpty }

  /// Holds `frame` until its record, the next one the store appends, is durable.
  public mutating func hold(_ frame: Message) {
    waiting.append((0, frame))
    unassigned += 1
  }

  /// The store appended the record of the oldest held acknowledgement that had no seq yet.
  public mutating func stored(seq: UInt64) {
    if voided > 0 {
      voided -= 1
      return
    }
    guard unassigned > 0 else { return }
    let index = waiting.elements.endIndex - unassigned
    waiting.assign(seq: seq, at: index)
    unassigned -= 1
  }

  /// The frames whose records are durable now that everything through `seq` is, oldest
  /// first.
  public mutating func release(through seq: UInt64) -> [Message] {
    var left = waiting.count - unassigned
    guard left > 0, let first = waiting.elements.first, first.seq <= seq else { return [] }
    return waiting.takeFirst(while: { element in
      guard left > 0, element.seq <= seq else { return false }
      left -= 1
      return true
    }).map(\.frame)
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
  /// Sets the seq of the element at `index` (an index of `elements`).
  fileprivate mutating func assign(seq: UInt64, at index: Int) {
    storage[index].seq = seq
  }
}
