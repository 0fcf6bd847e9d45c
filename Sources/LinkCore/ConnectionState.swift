/// Where the backend connection is, as status and logs show it.
public enum ConnectionState: Sendable, Hashable, CustomStringConvertible {
  /// Not started, or stopped.
  case idle
  /// Resolving the host name and opening TCP.
  case connecting
  /// Negotiating TLS.
  case tls
  /// Sent the upgrade request; waiting for 101 (and for the backend protocol's own set-up).
  case upgrading
  /// Messages flow.
  case open
  /// Closing handshake under way.
  case closing
  /// Waiting this long before the next attempt.
  case waiting(Duration)

  /// The short name used in status and the journal's CHATLINK_STATE field.
  public var name: String {
    switch self {
    case .idle: "idle"
    case .connecting: "connecting"
    case .tls: "tls"
    case .upgrading: "upgrading"
    case .open: "open"
    case .closing: "closing"
    case .waiting: "waiting"
    }
  }

  public var description: String {
    if case .waiting(let delay) = self {
      return "waiting \(delay.secondsText) s to reconnect"
    }
    return name
  }
}
