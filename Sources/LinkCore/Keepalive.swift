/// Keeping the connection alive and telling a dead peer from a quiet one, in one place.
///
/// A probe (a WebSocket ping, or the dialect's own heartbeat frame) goes out every interval
/// unless one is already outstanding. Any frame from the peer proves it alive; without one for
/// `timeout` after the probe, the peer is declared dead. A pong also tells which of our sends
/// the peer has read (everything sent before its ping), so pings double as delivery proof:
/// `confirmationPing` asks for one after a burst of sends. Operator pings (`chatlinkctl ping`)
/// ride on the same counter and are answered by their own pong.
///
/// Some backends send heartbeats of their own (Engine.IO pings): then no probes go out, and
/// the peer is dead when its next heartbeat is later than it promised (`peerHeartbeat`).
public struct Keepalive: Sendable {
  /// A probe that went out and is not yet answered.
  public struct Probe: Sendable, Hashable {
    /// Its counter (the ping payload), or 0 for a dialect's heartbeat frame.
    public var counter: UInt64
    /// When it left.
    public var sentAt: MonotonicInstant
    /// The highest outbox count written before it: what its answer confirms.
    public var covers: UInt64
  }

  /// What the deadline's expiry means.
  public enum Expiry: Sendable, Hashable {
    /// Nothing is outstanding.
    case idle
    /// The peer still has time: arm the deadline again after this.
    case extend(Duration)
    /// The peer is dead; these operator pings failed with it.
    case dead(failedPings: [UInt64])
  }

  /// An operator ping's answer.
  public struct AnsweredPing: Sendable, Hashable {
    /// The request's id.
    public var id: UInt64
    /// The round trip.
    public var rtt: Duration

    /// Creates an answer.
    public init(id: UInt64, rtt: Duration) {
      self.id = id
      self.rtt = rtt
    }
  }

  /// What a pong meant.
  public struct Answer: Sendable, Hashable {
    /// The highest outbox count it confirms, if it answered the outstanding probe.
    public var confirmedThrough: UInt64?
    /// Operator pings it answered.
    public var answeredPings: [AnsweredPing]
    /// The round trip of the outstanding probe, if it answered one.
    public var roundTrip: Duration? = nil
  }

  /// Time between probes.
  public var interval: Duration
  /// Time allowed for an answer (or any frame) after a probe.
  public var timeout: Duration
  /// The outstanding probe.
  public private(set) var outstanding: Probe?
  /// Operator pings waiting for their pong: id, ping counter, when it left, what it covers.
  private var waiters: [(id: UInt64, probe: Probe)] = []
  private var counter: UInt64 = 0
  /// A confirmation was asked for while a probe was outstanding: send one after its answer.
  private var confirmationWanted = false
  /// The last frame from the peer, while a probe is outstanding.
  private var lastFrame: MonotonicInstant?
  /// The peer's last heartbeat and the span it promised the next within.
  private var peerBeat: (at: MonotonicInstant, within: Duration)?

  /// Creates the keepalive.
  public init(interval: Duration, timeout: Duration) {
    self.interval = interval
    self.timeout = timeout
  }

  /// The payload of the ping with `counter`: 8 bytes, big-endian.
  public static func payload(_ counter: UInt64) -> [UInt8] {
    (0..<8).map { UInt8(truncatingIfNeeded: counter >> (56 - 8 * UInt64($0))) }
  }

  /// The counter a pong's payload carries, if it is one of ours.
  public static func counter(_ payload: [UInt8]) -> UInt64? {
    guard payload.count == 8 else { return nil }
    return payload.reduce(0) { $0 << 8 | UInt64($1) }
  }

  /// Whether the peer sends the heartbeats: no probes go out.
  public var isPeerDriven: Bool { peerBeat != nil }

  /// The peer's own heartbeat arrived at `now`; the next is due within `within`.
  public mutating func peerHeartbeat(now: MonotonicInstant, within: Duration) {
    peerBeat = (now, within)
  }

  /// The interval's probe: a new probe's counter, or nil while one is outstanding or while
  /// the peer sends the heartbeats.
  public mutating func tick(now: MonotonicInstant, covers: UInt64) -> UInt64? {
    guard outstanding == nil, peerBeat == nil else { return nil }
    return startProbe(now: now, covers: covers)
  }

  /// A probe that confirms what was just sent: a new probe's counter, or nil when one is
  /// outstanding (another follows its answer).
  public mutating func confirmationPing(now: MonotonicInstant, covers: UInt64) -> UInt64? {
    guard outstanding == nil else {
      confirmationWanted = true
      return nil
    }
    return startProbe(now: now, covers: covers)
  }

  /// An operator ping: the counter to send. It becomes the outstanding probe if there is
  /// none, so a silent peer fails it after `timeout`.
  public mutating func operatorPing(id: UInt64, now: MonotonicInstant, covers: UInt64) -> UInt64 {
    counter += 1
    let probe = Probe(counter: counter, sentAt: now, covers: covers)
    waiters.append((id, probe))
    if outstanding == nil {
      outstanding = probe
      lastFrame = nil
    }
    return counter
  }

  /// Any frame from the peer: it is alive.
  public mutating func frameArrived(now: MonotonicInstant) {
    if outstanding != nil { lastFrame = now }
    // A peer whose heartbeats are late because it is busy sending proves itself alive with
    // every frame: a flood that delays Socket.IO's pings is not a dead server.
    if peerBeat != nil { peerBeat?.at = now }
  }

  /// A pong with `payload` arrived at `now`.
  public mutating func pong(_ payload: [UInt8], now: MonotonicInstant) -> Answer {
    frameArrived(now: now)
    guard let answered = Self.counter(payload) else {
      return Answer(confirmedThrough: nil, answeredPings: [])
    }
    let pings = waiters.filter { $0.probe.counter <= answered }.map {
      AnsweredPing(id: $0.id, rtt: now - $0.probe.sentAt)
    }
    waiters.removeAll { $0.probe.counter <= answered }
    var confirmed: UInt64?
    var roundTrip: Duration?
    if let probe = outstanding, answered >= probe.counter {
      confirmed = probe.covers
      roundTrip = now - probe.sentAt
      outstanding = nil
      lastFrame = nil
      // An operator ping sent while another probe was out still needs its deadline.
      if let next = waiters.first { outstanding = next.probe }
    }
    return Answer(confirmedThrough: confirmed, answeredPings: pings, roundTrip: roundTrip)
  }

  /// The dialect's heartbeat was answered: like a pong for the outstanding probe, which
  /// confirms nothing (such dialects acknowledge sends themselves).
  public mutating func heartbeatAnswered() {
    guard let probe = outstanding, probe.counter == 0 else { return }
    outstanding = nil
    lastFrame = nil
  }

  /// Whether a confirmation ping should follow the answer just handled: one was asked for
  /// meanwhile, or more was sent since the answered probe left.
  public mutating func takeConfirmationWanted(answeredThrough covered: UInt64, lastSent: UInt64)
    -> Bool
  {
    defer { confirmationWanted = false }
    return confirmationWanted || lastSent > covered
  }

  /// When the outstanding probe's deadline falls: its start plus `timeout`, later if frames
  /// arrived meanwhile (unless an operator ping waits: it fails on its own deadline).
  /// With peer heartbeats, the next one's due time when that is earlier.
  public var deadline: MonotonicInstant? {
    let beatDue = peerBeat.map { $0.at + $0.within }
    guard let probe = outstanding else { return beatDue }
    let start = waiters.isEmpty ? max(probe.sentAt, lastFrame ?? probe.sentAt) : probe.sentAt
    guard let beatDue else { return start + timeout }
    return min(start + timeout, beatDue)
  }

  /// The deadline timer fired at `now`. While reading is paused a pong could not be seen,
  /// which says nothing about the peer: the deadline is extended.
  public mutating func deadlineExpired(now: MonotonicInstant, readingPaused: Bool) -> Expiry {
    guard let deadline else { return .idle }
    if readingPaused {
      // The peer's heartbeats wait unread too: its silence starts over from here.
      peerBeat?.at = now
      return .extend(timeout)
    }
    if deadline > now { return .extend(deadline - now) }
    let failed = waiters.map(\.id)
    reset()
    return .dead(failedPings: failed)
  }

  /// Forgets the connection; returns the operator pings that were waiting.
  @discardableResult
  public mutating func reset() -> [UInt64] {
    let failed = waiters.map(\.id)
    waiters = []
    outstanding = nil
    confirmationWanted = false
    lastFrame = nil
    peerBeat = nil
    return failed
  }

  /// The dialect's heartbeat frame went out (instead of a ping): it is the outstanding probe.
  public mutating func heartbeatSent(now: MonotonicInstant) {
    outstanding = Probe(counter: 0, sentAt: now, covers: 0)
    lastFrame = nil
  }

  private mutating func startProbe(now: MonotonicInstant, covers: UInt64) -> UInt64 {
    counter += 1
    outstanding = Probe(counter: counter, sentAt: now, covers: covers)
    lastFrame = nil
    confirmationWanted = false
    return counter
  }
}
