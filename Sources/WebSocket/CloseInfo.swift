/// How a connection ended.
public struct CloseInfo: Sendable, Hashable, CustomStringConvertible {
  /// Who started the close.
  public enum Initiator: Sendable, Hashable {
    /// We called `close`.
    case local
    /// The server sent a close frame first.
    case peer
    /// We failed the connection because the peer broke the protocol.
    case failure(ProtocolViolation)
    /// The transport ended without a close handshake.
    case transport
  }

  /// The code that describes the close: the peer's for a peer close, ours otherwise, and
  /// 1006 when no close frame was exchanged (RFC 6455 §7.1.5).
  public var code: CloseCode
  /// The reason text that went with `code`.
  public var reason: String
  /// Who started it.
  public var initiator: Initiator
  /// Whether both close frames were exchanged (RFC 6455 §7.1.4).
  public var clean: Bool

  /// Creates close information.
  public init(code: CloseCode, reason: String, initiator: Initiator, clean: Bool) {
    self.code = code
    self.reason = reason
    self.initiator = initiator
    self.clean = clean
  }

  public var description: String {
    var text = "\(code)"
    if !reason.isEmpty { text += " \"\(reason)\"" }
    switch initiator {
    case .local: text += ", closed by us"
    case .peer: text += ", closed by the peer"
    case .failure(let violation): text += ", failed: \(violation)"
    case .transport: text += ", connection lost"
    }
    return clean ? text : text + " (unclean)"
  }
}
