import WebSocket

/// The link core's settings: what status shows and what the keepalive and backoff use.
/// (How to connect, headers, TLS and the proxy, is the driver's business.)
public struct LinkSettings: Sendable, Hashable {
  /// The backend, for status and log texts.
  public var url: WebSocketURL
  /// Time between keepalive probes.
  public var pingInterval: Duration
  /// Time allowed for an answer (or any frame) after a probe.
  public var pongTimeout: Duration
  /// The shortest reconnect delay.
  public var reconnectMin: Duration
  /// The longest reconnect delay.
  public var reconnectMax: Duration
  /// How long a connection must stay up before past failures are forgotten.
  public var stableAfter: Duration = .seconds(30)
  /// Bytes the socket may hold unsent before the outbox waits for it to drain.
  public var sendBufferLimit = 1 << 20
  /// How soon the outbox tries again once the socket held too much.
  public var sendRetryDelay: Duration = .milliseconds(5)

  /// Creates settings.
  public init(
    url: WebSocketURL, pingInterval: Duration, pongTimeout: Duration, reconnectMin: Duration,
    reconnectMax: Duration
  ) {
    self.url = url
    self.pingInterval = pingInterval
    self.pongTimeout = pongTimeout
    self.reconnectMin = reconnectMin
    self.reconnectMax = reconnectMax
  }
}

/// The timers the core arms; the driver keeps one per case.
public enum LinkTimer: Int, Sendable, Hashable, CaseIterable {
  /// The wait before the next connection attempt.
  case retry
  /// The next keepalive probe.
  case keepalive
  /// The deadline for an answer to the outstanding probe.
  case pongDeadline
  /// The next try to send the outbox, once the socket drained.
  case sendRetry
}

/// How far a connection attempt got before the upgrade answer.
public enum ConnectProgress: Sendable, Hashable {
  /// TCP is up; TLS is being negotiated.
  case tlsHandshake
  /// The upgrade request went out.
  case upgrading
}

/// Why an operator ping failed.
public enum PingError: Error, Sendable, Hashable, CustomStringConvertible {
  /// There is no open connection.
  case notConnected
  /// No pong came within PongTimeoutSec.
  case timedOut

  public var description: String {
    switch self {
    case .notConnected: "not connected to the backend"
    case .timedOut: "no pong within the timeout"
    }
  }
}

/// Everything that happens to the link, as the driver reports it to the core.
public enum LinkEvent {
  /// Connect for the first time.
  case start
  /// The attempt got further.
  case progress(ConnectProgress)
  /// The WebSocket upgrade succeeded. (Indirect: rare and large.)
  indirect case upgraded(ClientHandshake.Result)
  /// A complete message arrived.
  case message(Message)
  /// A ping arrived (the WebSocket layer already answered it).
  case pingReceived
  /// A pong arrived.
  case pongReceived([UInt8])
  /// The attempt or the connection ended.
  case ended(ConnectionOutcome)
  /// A timer the core armed fired.
  case timerFired(LinkTimer)
  /// The store fell behind (true) or caught up (false).
  case storeBehind(Bool)
  /// The store appended the record of a `.store` action that holds an acknowledgement, as
  /// `seq`: reported at once, before anything else is stored.
  case stored(seq: UInt64)
  /// Every record through `seq` is durable: the acknowledgements of those records go out.
  case durable(through: UInt64)
  /// The outbox's pending entries (oldest first) and the bytes the socket holds unsent, as
  /// asked for with `LinkAction.requestOutbox` or because new entries became durable.
  case outbox(ArraySlice<OutboxEntry>, buffered: Int)
  /// An operator asked for a round trip; answered with `pingAnswered` or `pingFailed`.
  case pingRequested(id: UInt64)
  /// Join a room now and after every reconnect.
  case join(RoomID)
  /// Leave a room now and stop joining it.
  case leave(RoomID)
  /// Drop the connection and connect again at once.
  case reconnect(reason: String)
  /// New settings, the configured rooms and the dialect (a reload; nil keeps the current
  /// one). Indirect: rare and large, it would otherwise make every event as large as itself.
  indirect case reload(LinkSettings, rooms: [RoomID], backend: (any BackendProtocol)?)
  /// Close with 1001 and stop.
  case stop
}

/// What the core asks the driver to do, in order.
public enum LinkAction {
  /// Start a connection attempt; report `.progress`, `.upgraded` and `.ended`.
  case connect
  /// Send a message on the open connection.
  case send(Message)
  /// Send outbox entries on the open connection: `frames[i]` carries `entries[i]`. One action
  /// for a run of them, so a stream of sends costs one action, not two per message.
  case sendOutbox(OutboxFrames, entries: ArraySlice<OutboxEntry>)
  /// Send a ping with this payload.
  case sendPing([UInt8])
  /// Start the closing handshake; `.ended` follows.
  case close(CloseCode, reason: String)
  /// Let go of the current connection (closing it with this code); report nothing more of it:
  /// the core has already counted it as ended.
  case drop(CloseCode, reason: String)
  /// Arm a timer (replacing its previous deadline).
  case arm(LinkTimer, after: Duration)
  /// Disarm a timer.
  case disarm(LinkTimer)
  /// Append an inbound record to the store. When `acknowledged`, the core holds an
  /// acknowledgement for it: report the record's seq with `.stored` at once, and the
  /// acknowledgement goes out (as a `.send`) once `.durable` covers that seq.
  case store(InboundMessage, acknowledged: Bool)
  /// Acknowledgements wait for their records to be durable (true), or none wait any more
  /// (false): while some do, the store should sync as soon as the disk is free rather than at
  /// its interval, since a broker sends only a window of unacknowledged messages.
  case awaitDurability(Bool)
  /// The backend confirmed one entry: remove it from the outbox and store its "out" record.
  case confirmed(DeliveryLedger.Sent)
  /// A pong confirmed every pending entry through this count: remove them from the outbox and
  /// store their "out" records (`entries`, oldest first).
  case confirmedThrough(UInt64, entries: ArraySlice<DeliveryLedger.Sent>)
  /// The backend refused one entry (or it cannot be sent to it): remove it from the outbox
  /// and tell whoever waits for it.
  case failed(OutboxEntry, reason: String)
  /// Report `.outbox` with the pending entries.
  case requestOutbox
  /// Stop reading from the socket (the store is behind).
  case pauseReading
  /// Read again.
  case resumeReading
  /// The state changed, with the reason.
  case stateChanged(ConnectionState, reason: String)
  /// An operator ping came back.
  case pingAnswered(id: UInt64, rtt: Duration)
  /// An operator ping failed.
  case pingFailed(id: UInt64, PingError)
  /// Something for the log.
  case report(LinkReport)
  /// The stop is complete.
  case stopped
}

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
}

/// Counters for status and metrics; they only grow, across reconnects and reloads.
public struct LinkCounters: Sendable, Hashable {
  /// Inbound records stored.
  public var received = 0
  /// Outbox entries written to the socket (again after a reconnect).
  public var sent = 0
  /// Outbox entries the backend confirmed.
  public var confirmed = 0
  /// Outbox entries the backend refused.
  public var failed = 0
  /// Successful connections.
  public var connects = 0
  /// Connection attempts.
  public var attempts = 0
  /// Connection attempts and connections that ended, by how (`ConnectionOutcome.kind`).
  public var endings: [String: Int] = [:]
  /// Round trips of answered probes (keepalive and operator pings), in seconds.
  public var roundTrips = Histogram(bounds: Histogram.latencyBounds)

  /// All zero.
  public init() {}
}

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
