/// How the last connection ended, for status and the disconnected event.
public struct Disconnection: Sendable, Hashable {
  /// What happened, as text.
  public var reason: String
  /// The close code, for a close frame.
  public var code: Int?

  /// Creates a record of how a connection ended.
  public init(reason: String, code: Int? = nil) {
    self.reason = reason
    self.code = code
  }
}
