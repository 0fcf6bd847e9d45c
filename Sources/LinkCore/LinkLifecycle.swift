import WebSocket

/// Where the link is in its life: one case per phase, each holding what exists only in it, so
/// no field outlives the phase it belongs to (a connection's handshake, a refusal that ends
/// it, the outbox held at the dialect's in-flight limit).
enum LinkLifecycle {
  /// Created; `.start` connects.
  case idle
  /// Between connections: the next attempt waits for the retry timer.
  case waiting
  /// Connecting: DNS, TCP, TLS, the upgrade. Reading may already be paused.
  case attempting(readingPaused: Bool)
  /// Upgraded; the dialect's session set-up is under way.
  case settingUp(LinkSession)
  /// The dialect's session is usable (since the instant): messages flow.
  case ready(LinkSession, since: MonotonicInstant)
  /// Our closing handshake is under way; the connection's end follows.
  case closing(LinkClosing)
  /// Stopped for good.
  case stopped

  /// The phase without its data, for cheap comparisons.
  enum Phase: Equatable {
    case idle, waiting, attempting, settingUp, ready, closing, stopped
  }

  /// The phase without its data.
  var phase: Phase {
    switch self {
    case .idle: .idle
    case .waiting: .waiting
    case .attempting: .attempting
    case .settingUp: .settingUp
    case .ready: .ready
    case .closing: .closing
    case .stopped: .stopped
    }
  }

  /// Whether a connection exists (an attempt, an open connection, or one closing).
  var hasConnection: Bool {
    switch self {
    case .attempting, .settingUp, .ready, .closing: true
    case .idle, .waiting, .stopped: false
    }
  }

  /// The upgraded connection, in any phase that has one.
  var session: LinkSession? {
    switch self {
    case .settingUp(let session), .ready(let session, _): session
    case .closing(let closing): closing.session
    case .idle, .waiting, .attempting, .stopped: nil
    }
  }

  /// Whether reading is paused because the store is behind.
  var readingPaused: Bool {
    switch self {
    case .attempting(let paused): paused
    case .settingUp(let session), .ready(let session, _): session.readingPaused
    case .closing(let closing): closing.session?.readingPaused ?? false
    case .idle, .waiting, .stopped: false
    }
  }

  /// Changes the upgraded connection's data, in whichever phase holds it.
  mutating func updateSession(_ change: (inout LinkSession) -> Void) {
    switch self {
    case .settingUp(var session):
      change(&session)
      self = .settingUp(session)
    case .ready(var session, let since):
      change(&session)
      self = .ready(session, since: since)
    case .closing(var closing):
      guard var session = closing.session else { return }
      change(&session)
      closing.session = session
      self = .closing(closing)
    case .idle, .waiting, .attempting, .stopped:
      break
    }
  }
}

/// One upgraded connection, as the core keeps it until the connection ends.
struct LinkSession {
  /// What the server agreed to.
  var negotiated: ClientHandshake.Result
  /// When the upgrade succeeded.
  var openedAt: MonotonicInstant
  /// The heartbeat interval the backend asked for on this connection (MQTT 5's server keep
  /// alive), instead of PingIntervalSec=.
  var askedInterval: Duration?
  /// The outbox stopped at the dialect's in-flight limit; a confirmation asks for it again.
  var outboxHeld = false
  /// Whether reading is paused because the store is behind.
  var readingPaused: Bool
}

/// A connection we are closing.
struct LinkClosing {
  /// The upgraded connection, if it got that far.
  var session: LinkSession?
  /// What the connection's end is reported as, when we end it for a reason of our own (a
  /// refused session is closed politely, and its close frame is not the reason); nil reports
  /// the end as it comes.
  var because: ConnectionOutcome?
  /// Whether the link stops once the connection is down (otherwise it reconnects).
  var stopping: Bool
}
