import WebSocket

/// What the core tells the log.
public enum LinkReport: Sendable {
  /// The upgrade succeeded. (Indirect: rare and large.)
  indirect case connected(ClientHandshake.Result)
  /// A problem the operator should see (also kept as `lastError`).
  case failed(problem: String)
  /// The connection ended; the next attempt follows after `retryIn`.
  case disconnected(text: String, closeCode: Int?, retryIn: Duration, failures: Int)
  /// No answer to a probe within the timeout.
  case peerSilent(timeout: Duration)
  /// Reading paused because the store is behind.
  case readingPaused
  /// An operator or a reload asked for a new connection.
  case reconnectRequested(reason: String)
  /// The backend sent something its dialect does not expect (kept, and the link goes on).
  case protocolProblem(String)
  /// The backend's history no longer reaches back to the newest id stored for this room:
  /// messages in between may be missing.
  case historyGap(room: String)
  /// Something about the backend worth knowing that is not a fault.
  case protocolNotice(ProtocolNotice)
}
