extension ConnectionOutcome {
  /// A short, bounded name of the outcome for metrics: one label value per kind, never the
  /// error's text (which would make a new series per message). HTTP statuses count by class
  /// and close codes by their number (a 16-bit value: bounded too).
  public var kind: String {
    switch self {
    case .upgradeRefused(let head, _): "http_\(head.status / 100)xx"
    case .handshakeFailed: "handshake"
    case .resolutionFailed: "dns"
    case .certificateRejected: "tls_certificate"
    case .tlsFailed: "tls"
    case .connectionFailed: "connect"
    case .timedOut: "timeout"
    case .closed(let info): "close_\(info.code.rawValue)"
    case .sessionRefused: "session_refused"
    case .closedEarly: "closed_early"
    case .protocolViolation: "protocol_violation"
    case .sessionEnded: "session_ended"
    case .redirected: "redirected"
    case .cancelled: "cancelled"
    }
  }
}
