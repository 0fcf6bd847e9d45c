import LinkCore

/// The one-line human status shown by `systemctl status` (STATUS=) and `chatlinkctl status`.
public struct StatusLine: Sendable, Hashable {
  public var state: ConnectionState
  public var url: String
  public var rooms: Int
  public var received: Int
  public var confirmed: Int
  public var outbox: Int
  public var lastError: String?
  public var storeError: String?

  /// Creates a status.
  public init(
    state: ConnectionState, url: String, rooms: Int, received: Int, confirmed: Int, outbox: Int,
    lastError: String?, storeError: String?
  ) {
    self.state = state
    self.url = url
    self.rooms = rooms
    self.received = received
    self.confirmed = confirmed
    self.outbox = outbox
    self.lastError = lastError
    self.storeError = storeError
  }

  /// Renders e.g. "Connected to wss://chat.example/ws (3 rooms) · 120 in, 4 out · outbox 0".
  public var text: String {
    var head: String
    switch state {
    case .open: head = "Connected to \(url)"
    case .connecting: head = "Connecting to \(url)"
    case .tls: head = "TLS handshake with \(url)"
    case .upgrading: head = "Upgrading to WebSocket at \(url)"
    case .closing: head = "Closing the connection to \(url)"
    case .idle: head = "Idle"
    case .waiting(let delay):
      head = "Reconnecting to \(url) in \(delay.secondsText) s"
    }
    if rooms > 0 { head += " (\(rooms) room\(rooms == 1 ? "" : "s"))" }
    var text = "\(head) · \(received) in, \(confirmed) out · outbox \(outbox)"
    if let storeError { text += " · STORE DEGRADED: \(storeError)" }
    if let lastError, state != .open { text += " · last error: \(lastError)" }
    return text
  }
}
