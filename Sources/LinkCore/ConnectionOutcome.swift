import JSON
import WebSocket

/// How a connection attempt or an open connection ended, as the link core sees it.
///
/// The driver translates what the transport and the WebSocket client report into these cases;
/// `ReconnectPolicy` decides from them how long to wait and what to tell the operator. Each
/// case keeps the text of the error it came from, so logs and status read as before.
public enum ConnectionOutcome: Sendable, Hashable, CustomStringConvertible {
  /// The server answered the upgrade request with another status than 101, at `receivedAt`
  /// (wall clock: a Retry-After HTTP-date is read against it).
  case upgradeRefused(HTTPResponseHead, receivedAt: Timestamp)
  /// The upgrade failed otherwise (a malformed answer, a wrong accept key, …).
  case handshakeFailed(HandshakeError)
  /// The host name did not resolve.
  case resolutionFailed(String)
  /// The server's certificate failed verification: the problem.
  case certificateRejected(String)
  /// TLS failed otherwise (protocol version, alert, an error after the handshake).
  case tlsFailed(String)
  /// TCP could not connect, the proxy refused, or the connection broke.
  case connectionFailed(String)
  /// A phase did not finish in time: connecting, upgrading, or waiting for a pong.
  case timedOut(phase: String, after: Duration)
  /// The WebSocket connection closed (cleanly or not).
  case closed(CloseInfo)
  /// The backend protocol refused the session after the upgrade (its own handshake).
  case sessionRefused(String)
  /// The backend closed normally soon after the session opened, before the connection counted
  /// as stable: a server that accepts and hangs up at once (e.g. a broker that drops a session
  /// whose subscription it refuses, without saying why) must not be reconnected to in a loop.
  case closedEarly(CloseInfo, after: Duration)
  /// The backend broke its protocol's rules (a malformed packet): nothing after it can be
  /// trusted, so the connection ended.
  case protocolViolation(String)
  /// The backend ended its session on purpose, with its reason.
  case sessionEnded(String)
  /// The backend sent us to another URL, where the next connection goes at once. (Boxed: the
  /// URL's layout, inline, would make every event that the core takes, an inbound frame's too,
  /// larger and slower to move.)
  indirect case redirected(WebSocketURL)
  /// We gave the attempt up ourselves (a reconnect or stop request).
  case cancelled

  public var description: String {
    switch self {
    case .upgradeRefused(let head, _): "\(HandshakeError.unexpectedStatus(head))"
    case .handshakeFailed(let error): "\(error)"
    case .resolutionFailed(let text), .tlsFailed(let text), .connectionFailed(let text):
      text
    case .certificateRejected(let problem): "TLS certificate rejected: \(problem)"
    case .timedOut(let phase, let after): "timed out after \(after.secondsText) s while \(phase)"
    case .closed(let info): "\(info)"
    case .sessionRefused(let reason): "the backend refused the session: \(reason)"
    case .closedEarly(let info, let after):
      "the backend closed the connection "
        + (after < .milliseconds(100) ? "as soon as" : "\(after.secondsText) s after")
        + " the session opened: \(info)"
    case .protocolViolation(let reason): "the backend broke its protocol: \(reason)"
    case .sessionEnded(let reason): "the backend ended the session: \(reason)"
    case .redirected(let url): "the backend moved the session to \(url)"
    case .cancelled: "cancelled"
    }
  }

  /// The close code, when the connection ended with a close frame.
  public var closeCode: Int? {
    if case .closed(let info) = self { return Int(info.code.rawValue) }
    if case .closedEarly(let info, _) = self { return Int(info.code.rawValue) }
    return nil
  }
}
