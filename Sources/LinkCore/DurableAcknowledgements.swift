import WebSocket

/// Acknowledgements that wait for their records to be durable before they go out: what makes
/// a dialect's inbound delivery end-to-end (the backend redelivers anything not acknowledged,
/// so nothing is acknowledged that a power cut could still take away).
///
/// They are released in the order the records were stored. An acknowledgement belongs to the
/// connection that read its frame: after a reconnect the backend redelivers instead, so the
/// waiting ones are dropped.
public struct DurableAcknowledgements: Sendable {
  private var waiting: [(seq: UInt64, frame: Message)] = []
  private var head = 0

  /// None waiting.
  public init() {}

  /// How many wait.
  public var count: Int { waiting.count - head }

  /// Holds `frame` until the record with `seq` is durable.
  public mutating func add(_ frame: Message, seq: UInt64) {
    waiting.append((seq, frame))
  }

  /// The frames whose records are durable now that everything through `seq` is, oldest
  /// first.
  public mutating func release(through seq: UInt64) -> ArraySlice<Message> {
    guard head < waiting.count, waiting[head].seq <= seq else { return [] }
    var end = head
    while end < waiting.count && waiting[end].seq <= seq { end += 1 }
    let frames = ArraySlice(waiting[head..<end].map(\.frame))
    head = end
    if head == waiting.count {
      waiting.removeAll(keepingCapacity: true)
      head = 0
    }
    return frames
  }

  /// The connection changed: the waiting acknowledgements are void.
  public mutating func connectionChanged() {
    waiting.removeAll()
    head = 0
  }
}
