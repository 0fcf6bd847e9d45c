import WebSocket

/// What a dialect sends first on a new connection.
public struct ProtocolOpening: Sendable {
  /// Frames to send right after the upgrade, before anything else.
  public var frames: [Message]
  /// Whether the session is usable at once (rooms joined, the outbox sent).
  public var ready: Bool

  /// Creates an opening.
  public init(frames: [Message], ready: Bool) {
    self.frames = frames
    self.ready = ready
  }
}
