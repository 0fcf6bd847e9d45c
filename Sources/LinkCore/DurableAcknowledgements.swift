import WebSocket

/// Acknowledgements that wait for their records to be durable before they go out: what makes
/// a dialect's inbound delivery end-to-end (the backend redelivers anything not acknowledged,
/// so nothing is acknowledged that a power cut could still take away).
///
/// They are released in the order the records were stored. An acknowledgement belongs to the
/// connection that read its frame: after a reconnect the backend redelivers instead, so the
/// waiting ones are dropped.
public struct DurableAcknowledgements: Sendable {
  private var waiting = FIFOBuffer<(seq: UInt64, frame: Message)>()

  /// None waiting.
  public init() {}

  /// How many wait.
  public var count: Int { waiting.count }

  /// Holds `frame` until the record with `seq` is durable.
  public mutating func add(_ frame: Message, seq: UInt64) {
    waiting.append((seq, frame))
  }

  /// The frames whose records are durable now that everything through `seq` is, oldest
  /// first.
  public mutating func release(through seq: UInt64) -> [Message] {
    guard let first = waiting.elements.first, first.seq <= seq else { return [] }
    return waiting.takeFirst(while: { $0.seq <= seq }).map(\.frame)
  }

  /// The connection changed: the waiting acknowledgements are void.
  public mutating func connectionChanged() {
    waiting.removeAll()
  }
}
