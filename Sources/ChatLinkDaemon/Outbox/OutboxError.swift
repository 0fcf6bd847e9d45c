import EventLoop

/// Why a send was not accepted.
public enum OutboxError: Error, Sendable, Hashable, CustomStringConvertible {
  /// MaxMessages unconfirmed messages are already waiting.
  case full(limit: Int)
  /// The client id is not acceptable.
  case invalidID(String)
  /// The room name is not acceptable.
  case invalidRoom(String)
  /// The outbox could not be made durable (e.g. the disk is full): nothing was accepted.
  case storageFailed(SystemError)

  public var description: String {
    switch self {
    case .full(let limit): "the outbox is full (\(limit) unconfirmed messages); try again later"
    case .invalidID(let id):
      "invalid client id '\(id.prefix(40))': use 1-128 of A-Z a-z 0-9 . _ : -"
    case .invalidRoom(let room): "invalid room '\(room.prefix(40))'"
    case .storageFailed(let error): "cannot store the message durably: \(error.message)"
    }
  }
}
