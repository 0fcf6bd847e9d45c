import JSON
import WebSocket

/// The backend link as a pure state machine: events in, actions out, no I/O, no clocks, no
/// threads.
///
/// It decides when to connect and reconnect (with `ReconnectPolicy` and `Backoff`), what to
/// send after the upgrade (the dialect's set-up, the rooms, the outbox in order), keeps the
/// connection alive and detects a dead peer (`Keepalive`), turns echoes, pongs and
/// acknowledgements into confirmed deliveries (`DeliveryLedger`), stores every inbound frame,
/// and pauses reading while the store is behind. A driver on the event loop feeds it what
/// happened, with the time, and performs the actions it returns, in order.
public struct LinkCore {
  /// Where the connection is, as status shows it.
  public private(set) var state = ConnectionState.idle
  /// Counters for status.
  public internal(set) var counters = LinkCounters()
  /// A problem worth showing in status until the next successful connection.
  public private(set) var lastError: String?
  /// How the last connection ended.
  public private(set) var lastDisconnect: Disconnection?
  /// What the server agreed to on the current connection.
  public var negotiated: ClientHandshake.Result? { lifecycle.session?.negotiated }
  /// The rooms joined after every connect: configured plus runtime joins.
  public internal(set) var rooms: [RoomID]
  /// The settings in force.
  public private(set) var settings: LinkSettings
  /// Whether reading is paused because the store is behind (`lifecycle`'s, kept at hand: the
  /// driver asks after every inbound record).
  public private(set) var readingPaused = false
  /// Consecutive failures counted by the backoff.
  public var failures: Int { backoff.failures }
  /// Whether the dialect has rooms (Protocol=raw has none).
  public var hasRooms: Bool { backend.hasRooms }
  /// Whether the dialect's own frames are JSON objects on one line (the store need not scan
  /// them).
  public var framesAreSingleLineJSON: Bool { backend.framesAreSingleLineJSON }
  /// The dialect's subprotocols to offer.
  public var offeredSubprotocols: [String] { backend.offeredSubprotocols }
  /// Why the dialect cannot send `entry` at all, or nil.
  public func refusal(of entry: OutboxEntry) -> String? { backend.refusal(of: entry) }
  /// The dialect's own session on the current connection.
  public var session: ProtocolSession? { lifecycle.hasConnection ? backend.session : nil }

  /// Where the link is in its life, with what each phase holds.
  var lifecycle = LinkLifecycle.idle {
    didSet {
      phase = lifecycle.phase
      readingPaused = lifecycle.readingPaused
    }
  }
  /// `lifecycle`'s phase without its data, kept at hand: every inbound frame checks it, and
  /// reading it from the enum would copy the connection's data each time.
  private(set) var phase = LinkLifecycle.Phase.idle
  var backend: any BackendProtocol
  var backoff: Backoff
  var ledger = DeliveryLedger()
  /// Inbound acknowledgements waiting for their records to be durable.
  var acknowledgements = DurableAcknowledgements()
  /// Rooms to join once the store has said their newest ids (`.requestPositions`).
  var awaitingPositions: [RoomID] = []
  /// Whether the session's own catch-up (`BackendProtocol.catchUp`) waits for that answer.
  var awaitingSessionCatchUp = false
  /// Where the backend sent us (`LinkCore+Redirect.swift`), while connections go there.
  var redirect: Redirect?
  /// Two-step deliveries stored and not yet released, and their journal.
  public internal(set) var receipts: InboundReceipts
  /// Whether the dialect delivers in two steps (`backend.keepsReceipts`, kept at hand: every
  /// acknowledged record asks).
  var tracksReceipts: Bool
  /// Whether the dialect's acknowledgements are cumulative (`backend`'s, kept at hand).
  var cumulativeAcknowledgements: Bool
  /// What the dialects get from outside the core (SCRAM's crypto and nonces).
  let services: DialectServices
  var keepalive: Keepalive
  /// The rooms from Rooms=, as distinct from rooms joined at run time.
  var configuredRooms: [RoomID]
  /// Time between keepalive probes on this connection.
  var probeInterval: Duration { lifecycle.session?.askedInterval ?? settings.pingInterval }

  /// Creates the core; `.start` connects. The dialect is the one `settings.dialect` describes,
  /// unless `backend` gives another (a test's). `random` drives the backoff's jitter;
  /// `receipts` are the two-step deliveries pending at start (rebuilt from their journal);
  /// `services` what a dialect needs from outside the core.
  public init(
    settings: LinkSettings, rooms: [RoomID], backend: (any BackendProtocol)? = nil,
    receipts: InboundReceipts = InboundReceipts(), services: DialectServices = DialectServices(),
    random: any RandomNumberGenerator & Sendable = SystemRandomNumberGenerator()
  ) {
    self.settings = settings
    let backend = backend ?? settings.dialect.makeDialect(services)
    self.backend = backend
    self.services = services
    self.receipts = receipts
    tracksReceipts = backend.keepsReceipts
    cumulativeAcknowledgements = backend.acknowledgementsAreCumulative
    self.rooms = backend.hasRooms ? rooms : []
    configuredRooms = self.rooms
    backoff = Backoff(
      minimum: settings.reconnectMin, maximum: settings.reconnectMax, random: random)
    keepalive = Keepalive(interval: settings.pingInterval, timeout: settings.pongTimeout)
  }

  /// Handles one event at `now`, appending the actions to perform to `actions`.
  public mutating func handle(
    _ event: consuming LinkEvent, now: MonotonicInstant, into actions: inout [LinkAction]
  ) {
    // Consumed: an inbound frame moves on into its record without a reference count.
    switch consume event {
    case .start:
      guard phase == .idle else { return }
      connect(&actions)
    case .progress(let progress): advance(progress, &actions)
    case .upgraded(let result): upgraded(result, now: now, &actions)
    case .message(let message): received(consume message, now: now, &actions)
    case .pingReceived: keepalive.frameArrived(now: now)
    case .pongReceived(let payload): pong(payload, now: now, &actions)
    case .ended(let outcome): ended(outcome, now: now, &actions)
    case .timerFired(let timer): fired(timer, now: now, &actions)
    case .storeBehind(let behind): storeBehind(behind, &actions)
    case .stored(let seq): stored(seq: seq, &actions)
    case .durable(let seq): durable(through: seq, &actions)
    case .positions(let positions, let newest): joinAwaited(positions, newest: newest, &actions)
    case .journalDurable(let entry): journalDurable(through: entry, &actions)
    case .released(let entries): released(entries, &actions)
    case .outbox(let pending, let buffered): sendOutbox(pending, buffered, now: now, &actions)
    case .pingRequested(let id): operatorPing(id, now: now, &actions)
    case .join(let room): join(room, &actions)
    case .leave(let room): leave(room, &actions)
    case .reconnect(let reason): reconnect(reason, now: now, &actions)
    case .reload(let settings, let rooms): reload(settings, rooms: rooms, now: now, &actions)
    case .stop: stop(&actions)
    }
  }

  // MARK: Connecting

  mutating func connect(_ actions: inout [LinkAction]) {
    guard phase == .idle || phase == .waiting else { return }
    counters.attempts += 1
    lifecycle = .attempting(readingPaused: false)
    redirect?.reached = false
    actions.append(.connect)
    setState(.connecting, "connecting to \(connectURL)", &actions)
  }

  private mutating func advance(_ progress: ConnectProgress, _ actions: inout [LinkAction]) {
    guard phase == .attempting else { return }
    switch progress {
    case .tlsHandshake:
      if state == .connecting {
        setState(.tls, "TLS handshake with \(connectURL.host)", &actions)
      }
    case .upgrading:
      setState(.upgrading, "sent the upgrade request", &actions)
    }
  }

  private mutating func upgraded(
    _ result: ClientHandshake.Result, now: MonotonicInstant, _ actions: inout [LinkAction]
  ) {
    guard case .attempting(let readingPaused) = lifecycle else { return }
    lifecycle = .settingUp(
      LinkSession(negotiated: result, openedAt: now, readingPaused: readingPaused))
    actions.append(.report(.connected(result)))
    let opening = backend.open(result)
    for frame in opening.frames { actions.append(.send(frame)) }
    if opening.ready {
      sessionReady(now: now, &actions)
    } else {
      // The set-up must make progress: it is the outstanding probe until the session is ready.
      keepalive.heartbeatSent(now: now)
      actions.append(.arm(.pongDeadline, after: settings.pongTimeout))
      setState(.upgrading, "setting up the backend session", &actions)
    }
  }

  /// The dialect's session is usable: rooms first, then the outbox in order (the backend must
  /// know the rooms before messages for them arrive), then the keepalive.
  mutating func sessionReady(now: MonotonicInstant, _ actions: inout [LinkAction]) {
    guard case .settingUp(let session) = lifecycle else { return }
    lifecycle = .ready(session, since: now)
    // A connection counts once its session is usable: a refused set-up is not one.
    counters.connects += 1
    redirect?.reached = true
    redirect?.hops = 0
    // The last error stays visible through a set-up that the backend may still refuse.
    lastError = nil
    if keepalive.outstanding != nil {
      // The set-up's deadline is over; the backend's heartbeat (if it sends one) goes on.
      keepalive.heartbeatAnswered()
      armDeadline(now: now, &actions)
    }
    setState(.open, "connected", &actions)
    if backend.joinsAfterStoredID { awaitingSessionCatchUp = true }
    join(rooms, &actions)
    ledger.reset()
    actions.append(.requestOutbox)
    actions.append(.arm(.keepalive, after: probeInterval))
  }

  mutating func ended(
    _ reported: ConnectionOutcome, now: MonotonicInstant, _ actions: inout [LinkAction]
  ) {
    guard lifecycle.hasConnection else { return }
    var outcome = inPhase(reported, now: now)
    var stopping = false
    if case .closing(let closing) = lifecycle {
      outcome = closing.because ?? outcome
      stopping = closing.stopping
    }
    counters.endings[outcome.kind, default: 0] += 1
    redirectEnded(outcome)
    connectionEnded(now: now, &actions)
    if stopping {
      finishStop(&actions)
      return
    }
    scheduleReconnect(after: outcome, &actions)
  }

  /// A close by the backend read with where the connection was: during the dialect's set-up
  /// it is a refusal (unless the server said it is restarting or failing), and a normal close
  /// soon after the session opened is a failure, not a polite goodbye.
  private func inPhase(_ outcome: ConnectionOutcome, now: MonotonicInstant) -> ConnectionOutcome {
    guard case .closed(let info) = outcome, case .peer = info.initiator else { return outcome }
    switch lifecycle {
    case .settingUp:
      switch info.code {
      case .goingAway, .serviceRestart, .tryAgainLater, .internalServerError, .badGateway:
        return outcome
      default:
        return .sessionRefused(backend.refusal(closedDuringSetUp: info))
      }
    case .ready(_, let readyAt):
      guard info.code == .normalClosure, now - readyAt < settings.stableAfter else {
        return outcome
      }
      return .closedEarly(info, after: now - readyAt)
    default:
      return outcome
    }
  }

  /// Everything of the connection that must not outlive it.
  mutating func connectionEnded(now: MonotonicInstant, _ actions: inout [LinkAction]) {
    let openedAt = lifecycle.session?.openedAt
    lifecycle = .waiting
    for timer in [LinkTimer.keepalive, .pongDeadline, .sendRetry] {
      actions.append(.disarm(timer))
    }
    for id in keepalive.reset() { actions.append(.pingFailed(id: id, .notConnected)) }
    // Unconfirmed messages stay in the outbox and go out again after the reconnect.
    ledger.reset()
    awaitingPositions = []
    awaitingSessionCatchUp = false
    // The backend redelivers what this connection did not acknowledge.
    if !acknowledgements.isEmpty { actions.append(.awaitDurability(false)) }
    acknowledgements.connectionEnded()
    receipts.connectionEnded()
    if let openedAt, now - openedAt >= settings.stableAfter { backoff.reset() }
  }

  /// Chooses the delay before the next attempt from how the connection ended.
  private mutating func scheduleReconnect(
    after outcome: ConnectionOutcome, _ actions: inout [LinkAction]
  ) {
    let decision = ReconnectPolicy.decide(outcome, backoff: &backoff)
    if let problem = decision.rule.problem {
      lastError = problem
      actions.append(.report(.failed(problem: problem)))
    }
    lastDisconnect = Disconnection(reason: decision.text, code: outcome.closeCode)
    actions.append(
      .report(
        .disconnected(
          text: decision.text, closeCode: outcome.closeCode, retryIn: decision.delay,
          failures: backoff.failures)))
    setState(.waiting(decision.delay), decision.text, &actions)
    actions.append(.arm(.retry, after: decision.delay))
  }

  // MARK: Commands

  private mutating func reconnect(
    _ reason: String, now: MonotonicInstant, _ actions: inout [LinkAction]
  ) {
    switch lifecycle {
    case .stopped: return
    case .closing(let closing) where closing.stopping: return
    default: break
    }
    actions.append(.report(.reconnectRequested(reason: reason)))
    actions.append(.disarm(.retry))
    if lifecycle.hasConnection {
      actions.append(.drop(.goingAway, reason: "reconnecting"))
      // Dropped here, so no `ended` follows: count it as what it is, given up by us.
      counters.endings[ConnectionOutcome.cancelled.kind, default: 0] += 1
      connectionEnded(now: now, &actions)
    }
    connect(&actions)
  }

  /// Applies new settings: keepalive, backoff and rooms live (rooms removed from Rooms= are
  /// left and new ones joined; rooms joined at run time stay). A new dialect of the same kind
  /// without a session takes its new names at once; what the upgrade carries, or a dialect with
  /// a session of its own, needs a new connection, made at once.
  private mutating func reload(
    _ new: LinkSettings, rooms newRooms: [RoomID], now: MonotonicInstant,
    _ actions: inout [LinkAction]
  ) {
    let reconnecting = new.needsNewConnection(from: settings)
    // A dialect with a session is replaced here only because a new connection follows.
    if new.dialect != settings.dialect {
      backend = new.dialect.makeDialect(services)
      tracksReceipts = backend.keepsReceipts
      cumulativeAcknowledgements = backend.acknowledgementsAreCumulative
    }
    if new.url != settings.url { redirect = nil }
    settings = new
    backoff.minimum = new.reconnectMin
    backoff.maximum = new.reconnectMax
    keepalive.interval = new.pingInterval
    keepalive.timeout = new.pongTimeout
    // A new connection joins every room anyway: the rooms then change without frames.
    if reconnecting { reconnect("configuration changed", now: now, &actions) }
    let wanted = backend.hasRooms ? newRooms : []
    for room in configuredRooms where !wanted.contains(room) { leave(room, &actions) }
    for room in wanted where !rooms.contains(room) { join(room, &actions) }
    configuredRooms = wanted
    // Restart the keepalive with the new interval.
    if phase == .ready { actions.append(.arm(.keepalive, after: probeInterval)) }
  }

  /// Closes with 1001; `.stopped` follows once the connection is down.
  private mutating func stop(_ actions: inout [LinkAction]) {
    for timer in [LinkTimer.retry, .keepalive, .pongDeadline] { actions.append(.disarm(timer)) }
    switch lifecycle {
    case .idle, .waiting:
      finishStop(&actions)
    case .attempting, .settingUp, .ready:
      if phase == .ready, let frame = backend.farewell() { actions.append(.send(frame)) }
      lifecycle = .closing(LinkClosing(session: lifecycle.session, because: nil, stopping: true))
      setState(.closing, "shutting down", &actions)
      actions.append(.close(.goingAway, reason: "shutting down"))
    case .closing(var closing):
      // The close under way ends the connection; the link stops once it has.
      closing.stopping = true
      lifecycle = .closing(closing)
    case .stopped:
      break
    }
  }

  private mutating func finishStop(_ actions: inout [LinkAction]) {
    lifecycle = .stopped
    setState(.idle, "stopped", &actions)
    actions.append(.stopped)
  }

  mutating func setState(
    _ new: ConnectionState, _ reason: String, _ actions: inout [LinkAction]
  ) {
    guard new != state else { return }
    state = new
    actions.append(.stateChanged(new, reason: reason))
  }
}
