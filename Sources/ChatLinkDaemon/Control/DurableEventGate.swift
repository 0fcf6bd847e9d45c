/// Holds events about store records until the records are durable, in seq order.
///
/// Under `Sync=always` a Subscribe `message` event promises what the README promises of a
/// stored message: it survives a power cut. The store appends a record at once and fsyncs it
/// on the disk thread, so the event waits here for `MessageStore.onDurable` to pass its seq.
/// Records are appended in seq order, so the waiting events are too: releasing is a prefix.
struct DurableEventGate<Event> {
  private var waiting: [(seq: UInt64, event: Event)] = []
  /// Index of the first event still waiting (released ones are dropped in batches).
  private var head = 0

  /// Events waiting for their record to become durable.
  var count: Int { waiting.count - head }

  /// The event itself when its record is durable already (`seq <= durable`) and nothing
  /// waits before it; otherwise nil, and it waits for `release(through:)`.
  mutating func admit(_ event: Event, seq: UInt64, durable: UInt64) -> Event? {
    if seq <= durable && count == 0 { return event }
    waiting.append((seq, event))
    return nil
  }

  /// The waiting events whose records are durable now (seq up to `durable`), oldest first.
  mutating func release(through durable: UInt64) -> [Event] {
    var released: [Event] = []
    while head < waiting.count && waiting[head].seq <= durable {
      released.append(waiting[head].event)
      head += 1
    }
    if head == waiting.count {
      waiting.removeAll(keepingCapacity: true)
      head = 0
    } else if head >= 1024 && head * 2 >= waiting.count {
      waiting.removeFirst(head)
      head = 0
    }
    return released
  }

  /// Drops every waiting event (nobody listens any more).
  mutating func removeAll() {
    guard !waiting.isEmpty else { return }
    waiting.removeAll()
    head = 0
  }
}
