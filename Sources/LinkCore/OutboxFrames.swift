import JSON
import WebSocket

/// The frames of a run of outbox entries, in order: text frames a dialect wrote one after the
/// other into one buffer (`BackendProtocol.writesFramesInPlace`), or messages.
///
/// A streamed send's run is hundreds of frames: in one buffer they cost two allocations for
/// the lot, where messages cost one each (and one more to free it).
public enum OutboxFrames: Sendable {
  /// Text frames, in one buffer.
  case texts(PackedStrings)
  /// Messages, each with its own bytes.
  case messages([Message])

  /// How many frames there are.
  public var count: Int {
    switch self {
    case .texts(let texts): texts.count
    case .messages(let messages): messages.count
    }
  }

  /// Frame `index` as a message of its own (its bytes copied).
  public subscript(index: Int) -> Message {
    switch self {
    case .texts(let texts):
      var bytes: [UInt8] = []
      texts.withUTF8(at: index) { bytes = Array($0) }
      return .text(bytes)
    case .messages(let messages):
      return messages[index]
    }
  }
}

/// A sent frame as the store's "out" record keeps it (`BackendProtocol.storedForm`): a
/// message, or a text frame in its run's buffer, read there.
public enum StoredFrame: Sendable {
  /// A message.
  case message(Message)
  /// Text frame `index` of a run's buffer.
  case packed(PackedStrings, index: Int)

  /// Calls `body` with the frame's bytes, where they lie, and whether it is text.
  @inlinable
  public func withBytes(_ body: (UnsafeRawBufferPointer, _ isText: Bool) -> Void) {
    switch self {
    case .message(let message):
      let text = message.isText
      message.withUnsafeBytes { body($0, text) }
    case .packed(let texts, let index):
      texts.withUTF8(at: index) { body(UnsafeRawBufferPointer($0), true) }
    }
  }

  /// The frame as a message of its own (its bytes copied).
  public var message: Message {
    switch self {
    case .message(let message): message
    case .packed(let texts, let index): OutboxFrames.texts(texts)[index]
    }
  }
}
