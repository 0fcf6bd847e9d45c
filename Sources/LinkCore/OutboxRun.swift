import JSON
import WebSocket

/// The frames of consecutive outbox entries, gathered into one `.sendOutbox` action.
struct OutboxRun {
  /// The index (in the pending entries) of the first entry of the run.
  var start: Int
  /// Whether the dialect writes the frames into one buffer (`texts`), or makes messages
  /// (`messages`).
  let inPlace: Bool
  /// The frames written in place, in order.
  private var texts = PackedStrings()
  /// The frames made as messages, in order.
  private var messages: [Message] = []
  /// Whether any entry was written in this call.
  var wrote = false

  init(start: Int, inPlace: Bool) {
    self.start = start
    self.inPlace = inPlace
  }

  /// How many bytes of frames written in place make a run full: its buffer stays below the
  /// size at which the allocator maps fresh pages for it (and the next run faults them in
  /// again), and is freed once the backend confirmed its frames.
  static let maxBytes = 128 << 10

  /// Whether the next frame starts a new run.
  var isFull: Bool { inPlace && texts.utf8Count >= Self.maxBytes }

  /// Entries of the run not yet in the ledger: those written in place are recorded when the
  /// run ends, with the buffer they share.
  var unrecorded: Int { inPlace ? texts.count : 0 }

  /// Adds the frame that carries `entry`, the first of `remaining` entries left to send;
  /// returns its size.
  mutating func add(
    _ entry: OutboxEntry, remaining: Int, _ backend: inout some BackendProtocol
  ) -> Int {
    if inPlace {
      backend.encode(entry, appendingTo: &texts)
      let size = texts.utf8Count(at: texts.count - 1)
      if texts.count == 1 {
        // Room for the rest of the run, guessed from the first frame (a run's frames are much
        // alike), so the buffer is not copied as it grows.
        let expected = min(remaining, Self.maxBytes / max(size, 1) + 1)
        texts.reserveCapacity(expected, bytes: min(expected * (size + 16), Self.maxBytes + size))
      }
      return size
    }
    let frame = backend.encode(entry)
    let size = frame.bytes.count
    if messages.isEmpty { messages.reserveCapacity(512) }
    messages.append(frame)
    return size
  }

  /// Takes back the frame `add` just added.
  mutating func removeLast() {
    if inPlace { texts.removeLast() } else { messages.removeLast() }
  }

  /// The last frame added, which carries `entry`, as the store keeps it (messages only).
  func storedForm(_ backend: inout some BackendProtocol, for entry: OutboxEntry) -> StoredFrame {
    .message(backend.storedForm(of: messages[messages.count - 1], for: entry))
  }

  /// Appends the run (entries `start..<end`) as one action, and starts an empty one; frames
  /// written in place go into the ledger now, each with the buffer they share.
  mutating func end(
    _ pending: ArraySlice<OutboxEntry>, at end: Int, _ ledger: inout DeliveryLedger,
    _ actions: inout [LinkAction]
  ) {
    if inPlace {
      guard !texts.isEmpty else { return }
      let frames = texts
      texts = PackedStrings()
      for (offset, index) in (start..<end).enumerated() {
        ledger.recordSent(pending[index], frame: .packed(frames, index: offset))
      }
      actions.append(.sendOutbox(.texts(frames), entries: pending[start..<end]))
    } else {
      guard !messages.isEmpty else { return }
      actions.append(.sendOutbox(.messages(messages), entries: pending[start..<end]))
      messages = []
    }
    start = end
  }
}
