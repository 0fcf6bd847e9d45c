/// Where the backend connection is, as status and logs show it.
public enum ConnectionState: Sendable, Hashable, CustomStringConvertible {
  /// Not started, or stopped.
  case idle
  /// Resolving the host name and opening TCP.
  case connecting
  /// Negotiating TLS.
  case tls
  /// Sent the upgrade request; waiting for 101.
  case upgrading
  /// Messages flow.
  case open
  /// Closing handshake under way.
  case closing
  /// Waiting before the next attempt.
  case waiting(seconds: Double)

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
    if case .waiting(let seconds) = self {
      return "waiting \(Self.format(seconds)) s to reconnect"
    }
    return name
  }

  static func format(_ seconds: Double) -> String {
    let tenths = (seconds * 10).rounded() / 10
    return tenths == tenths.rounded() ? String(Int(tenths)) : String(tenths)
  }
}
