import JSON
import WebSocket

/// Frames, the outbox and the keepalive on an open connection.
extension LinkCore {
  mutating func received(
    _ message: consuming Message, now: MonotonicInstant, _ actions: inout [LinkAction]
  ) {
    let current = phase
    guard current == .settingUp || current == .ready || current == .closing else { return }
    keepalive.frameArrived(now: now)
    var reading = ProtocolReading()
    backend.read(consume message, into: &reading)
    // Taken, not copied: every inbound frame's record passes here.
    if let record = reading.record.take() {
      if let acknowledgement = reading.acknowledgement.take() {
        store(record, acknowledgement: acknowledgement, &actions)
      } else {
        // Most records: nothing waits for them to be durable, and no acknowledgement is left
        // to destroy.
        counters.received += 1
        actions.append(.store(consume record, acknowledged: false))
      }
    }
    let control = reading.hasControlFields
    if control { storeAndAnswer(reading, current: current, now: now, &actions) }
    if let id = reading.echoedClientID, let sent = ledger.confirm(id: id) {
      confirm(sent, &actions)
    }
    if control { settle(reading, current: current, now: now, &actions) }
  }

  /// Asks to store an inbound record; its acknowledgement, if the dialect made one, waits in
  /// the core until the record is durable.
  @inline(__always)
  private mutating func store(
    _ record: consuming InboundMessage, acknowledgement: Message?, _ actions: inout [LinkAction]
  ) {
    // Only a dialect that delivers in two steps marks records: every other record passes
    // without its fields being read here (reading one would copy the record).
    var twoStep: TwoStepDelivery?
    if tracksReceipts {
      twoStep = record.twoStep
      if let twoStep, let acknowledgement, answeredRedelivery(twoStep, acknowledgement, &actions) {
        return
      }
    }
    counters.received += 1
    if let acknowledgement {
      if acknowledgements.isEmpty { actions.append(.awaitDurability(true)) }
      acknowledgements.hold(acknowledgement)
      if tracksReceipts { receipts.willStore(twoStep?.id) }
    }
    actions.append(.store(consume record, acknowledged: acknowledgement != nil))
  }

  /// Records through `seq` are durable: their acknowledgements go out, in the order the
  /// records were stored, on the connection that read them.
  mutating func durable(through seq: UInt64, _ actions: inout [LinkAction]) {
    if tracksReceipts { receiptsDurable(through: seq, &actions) }
    let wasEmpty = acknowledgements.isEmpty
    var frames = acknowledgements.release(through: seq)
    // Once our close frame is out nothing else may follow it (RFC 6455 §5.5.1): the backend
    // redelivers what it did not see acknowledged, and the store drops it by id or seq.
    if phase == .closing { frames = [] }
    if cumulativeAcknowledgements {
      if let last = frames.last { actions.append(.send(last)) }
    } else {
      for frame in frames { actions.append(.send(frame)) }
    }
    if !wasEmpty && acknowledgements.isEmpty { actions.append(.awaitDurability(false)) }
  }

  /// The store appended a record whose acknowledgement waits: the store reports a duplicate
  /// it dropped as the last seq it stored, which may be durable already, and then nothing
  /// else would let the acknowledgement go (no fsync follows when nothing new is written).
  mutating func stored(seq: UInt64, _ actions: inout [LinkAction]) {
    acknowledgements.stored(seq: seq)
    if tracksReceipts { receipts.stored(seq: seq) }
    if seq <= acknowledgements.durableThrough {
      durable(through: acknowledgements.durableThrough, &actions)
    }
  }

  /// A control frame's further records, replies and heartbeat answer.
  private mutating func storeAndAnswer(
    _ reading: ProtocolReading, current: LinkLifecycle.Phase, now: MonotonicInstant,
    _ actions: inout [LinkAction]
  ) {
    for (record, acknowledgement) in reading.moreRecords {
      store(record, acknowledgement: acknowledgement, &actions)
    }
    for reply in reading.replies { actions.append(.send(reply)) }
    if let frame = reading.afterStored, let now = acknowledgements.holdBehind(frame) {
      actions.append(.send(now))
    }
    if reading.heartbeatAnswered {
      // A dialect's heartbeat answer (MQTT's PINGRESP) is its pong: its round trip counts.
      // (During the set-up the outstanding probe is the set-up itself, not a heartbeat.)
      if current == .ready, let probe = keepalive.outstanding, probe.counter == 0 {
        counters.roundTrips.observe(now - probe.sentAt)
      }
      keepalive.heartbeatAnswered()
    }
  }

  /// A control frame's acknowledgements, refusals, heartbeat promise, problem and session.
  private mutating func settle(
    _ reading: ProtocolReading, current: LinkLifecycle.Phase, now: MonotonicInstant,
    _ actions: inout [LinkAction]
  ) {
    for count in reading.delivered {
      if let sent = ledger.confirm(count: count) { confirm(sent, &actions) }
    }
    for failure in reading.failed {
      if let sent = ledger.confirm(count: failure.count) {
        fail(sent.entry, failure.reason, &actions)
      }
    }
    if let within = reading.peerHeartbeat {
      keepalive.peerHeartbeat(now: now, within: within)
      armDeadline(now: now, &actions)
    }
    if let problem = reading.problem { actions.append(.report(.protocolProblem(problem))) }
    counters.caughtUp += reading.fromHistory
    if let room = reading.historyGap {
      counters.historyGaps += 1
      actions.append(.report(.historyGap(room: room)))
    }
    if let notice = reading.notice { actions.append(.report(.protocolNotice(notice))) }
    // Before the session's readiness: its joins wait for a forgetting to be durable.
    settleTwoSteps(reading, &actions)
    if let interval = reading.heartbeatInterval {
      lifecycle.updateSession { $0.askedInterval = interval }
    }
    switch reading.session {
    case .ready?: sessionReady(now: now, &actions)
    case .refused(let reason)?:
      guard current == .settingUp || current == .ready else { break }
      // Close politely; the refusal, not the close frame, is why the connection ended.
      close(because: .sessionRefused(reason))
      actions.append(.close(.normalClosure, reason: "session refused"))
    case .broken(let reason)?:
      guard current == .settingUp || current == .ready else { break }
      close(because: .protocolViolation(reason))
      actions.append(.close(.protocolError, reason: "protocol error"))
    case .ended(let reason)?:
      guard current == .settingUp || current == .ready else { break }
      close(because: .sessionEnded(reason))
      actions.append(.close(.normalClosure, reason: "session ended"))
    case .movedTo(let uri)?:
      guard current == .settingUp || current == .ready else { break }
      switch follow(uri) {
      case .success(let url): close(because: .redirected(url))
      case .failure(let refusal): close(because: .protocolViolation(refusal.reason))
      }
      actions.append(.close(.normalClosure, reason: "moved"))
    case nil: break
    }
  }

  /// Starts closing the connection for a reason of our own, reported as its end.
  private mutating func close(because outcome: ConnectionOutcome) {
    lifecycle = .closing(LinkClosing(session: lifecycle.session, because: outcome, stopping: false))
  }

  private mutating func confirm(_ sent: DeliveryLedger.Sent, _ actions: inout [LinkAction]) {
    counters.confirmed += 1
    actions.append(.confirmed(sent))
    resumeHeldOutbox(&actions)
  }

  private mutating func fail(_ entry: OutboxEntry, _ reason: String, _ actions: inout [LinkAction])
  {
    counters.failed += 1
    actions.append(.failed(entry, reason: reason))
    resumeHeldOutbox(&actions)
  }

  /// A confirmation made room under the dialect's in-flight limit: send what waited for it.
  private mutating func resumeHeldOutbox(_ actions: inout [LinkAction]) {
    guard case .ready(let session, _) = lifecycle, session.outboxHeld else { return }
    lifecycle.updateSession { $0.outboxHeld = false }
    actions.append(.requestOutbox)
  }

  mutating func pong(_ payload: [UInt8], now: MonotonicInstant, _ actions: inout [LinkAction]) {
    guard lifecycle.hasConnection else { return }
    let answer = keepalive.pong(payload, now: now)
    if let roundTrip = answer.roundTrip { counters.roundTrips.observe(roundTrip) }
    for ping in answer.answeredPings { actions.append(.pingAnswered(id: ping.id, rtt: ping.rtt)) }
    guard let covered = answer.confirmedThrough else { return }
    // TCP keeps order: this pong proves the backend read everything sent before the ping.
    if backend.confirmsByPong {
      let confirmed = ledger.confirm(through: covered)
      if !confirmed.isEmpty {
        counters.confirmed += confirmed.count
        actions.append(.confirmedThrough(covered, entries: confirmed))
      }
    }
    armDeadline(now: now, &actions)
    let more = keepalive.takeConfirmationWanted(
      answeredThrough: covered, lastSent: ledger.lastSentCount)
    if more && backend.confirmsByPong { confirmationPing(now: now, &actions) }
  }

  mutating func fired(_ timer: LinkTimer, now: MonotonicInstant, _ actions: inout [LinkAction]) {
    switch timer {
    case .retry:
      connect(&actions)
    case .keepalive:
      guard phase == .ready else { return }
      actions.append(.arm(.keepalive, after: probeInterval))
      probe(now: now, &actions)
    case .pongDeadline:
      deadlineExpired(now: now, &actions)
    case .sendRetry:
      if phase == .ready { actions.append(.requestOutbox) }
    }
  }

  /// The interval's probe: the dialect's heartbeat frame, or a WebSocket ping.
  /// One probe at a time: the dialect is asked for its heartbeat only when none is out.
  /// While the backend's own heartbeats prove it alive no probe goes out, but a dialect whose
  /// heartbeats go both ways (STOMP) still sends its frame, which nothing answers.
  private mutating func probe(now: MonotonicInstant, _ actions: inout [LinkAction]) {
    if keepalive.isPeerDriven {
      if let frame = backend.heartbeat() { actions.append(.send(frame)) }
      return
    }
    guard keepalive.outstanding == nil else { return }
    if let frame = backend.heartbeat() {
      keepalive.heartbeatSent(now: now)
      actions.append(.send(frame))
    } else if let counter = keepalive.tick(now: now, covers: ledger.lastSentCount) {
      actions.append(.sendPing(Keepalive.payload(counter)))
    }
    armDeadline(now: now, &actions)
  }

  private mutating func confirmationPing(now: MonotonicInstant, _ actions: inout [LinkAction]) {
    guard phase == .ready,
      let counter = keepalive.confirmationPing(now: now, covers: ledger.lastSentCount)
    else { return }
    actions.append(.sendPing(Keepalive.payload(counter)))
    armDeadline(now: now, &actions)
  }

  /// Arms the deadline for the outstanding probe, or disarms it when none is.
  func armDeadline(now: MonotonicInstant, _ actions: inout [LinkAction]) {
    if let deadline = keepalive.deadline {
      actions.append(.arm(.pongDeadline, after: deadline > now ? deadline - now : .zero))
    } else {
      actions.append(.disarm(.pongDeadline))
    }
  }

  private mutating func deadlineExpired(now: MonotonicInstant, _ actions: inout [LinkAction]) {
    guard phase == .ready || phase == .settingUp else { return }
    let waitingFor =
      phase == .settingUp
      ? "setting up the backend session"
      : keepalive.isPeerDriven ? "waiting for the backend's heartbeat" : "waiting for a pong"
    switch keepalive.deadlineExpired(now: now, readingPaused: readingPaused) {
    case .idle:
      break
    case .extend(let remaining):
      actions.append(.arm(.pongDeadline, after: remaining))
    case .dead(let failedPings):
      actions.append(.report(.peerSilent(timeout: settings.pongTimeout)))
      for id in failedPings { actions.append(.pingFailed(id: id, .timedOut)) }
      let outcome = ConnectionOutcome.timedOut(phase: waitingFor, after: settings.pongTimeout)
      actions.append(.drop(.goingAway, reason: "no pong"))
      ended(outcome, now: now, &actions)
    }
  }

  mutating func operatorPing(_ id: UInt64, now: MonotonicInstant, _ actions: inout [LinkAction]) {
    guard phase == .ready else {
      actions.append(.pingFailed(id: id, .notConnected))
      return
    }
    let counter = keepalive.operatorPing(id: id, now: now, covers: ledger.lastSentCount)
    actions.append(.sendPing(Keepalive.payload(counter)))
    armDeadline(now: now, &actions)
  }

  mutating func storeBehind(_ behind: Bool, _ actions: inout [LinkAction]) {
    guard behind != readingPaused else { return }
    switch lifecycle {
    case .attempting: lifecycle = .attempting(readingPaused: behind)
    case .settingUp, .ready: lifecycle.updateSession { $0.readingPaused = behind }
    // An attempt being given up has nothing to pause.
    case .closing(let closing) where closing.session != nil:
      lifecycle.updateSession { $0.readingPaused = behind }
    case .idle, .waiting, .closing, .stopped: return
    }
    if behind {
      actions.append(.report(.readingPaused))
      actions.append(.pauseReading)
    } else {
      actions.append(.resumeReading)
    }
  }

  /// Writes pending entries not yet sent on this connection, in order, while the socket
  /// keeps up; then asks for a confirming ping.
  mutating func sendOutbox(
    _ pending: ArraySlice<OutboxEntry>, _ buffered: Int, now: MonotonicInstant,
    _ actions: inout [LinkAction]
  ) {
    guard phase == .ready else { return }
    var index = ledger.firstUnsent(in: pending)
    var run = OutboxRun(start: index, inPlace: backend.writesFramesInPlace)
    var buffered = buffered
    while index < pending.endIndex {
      if let limit = backend.maxInFlight, ledger.unconfirmedCount + run.unrecorded >= limit {
        // The backend allows no more unconfirmed messages: the next confirmation resumes.
        lifecycle.updateSession { $0.outboxHeld = true }
        break
      }
      if buffered > settings.sendBufferLimit {
        // Let the socket drain before queuing more; come back shortly.
        run.end(pending, at: index, &ledger, &actions)
        actions.append(.arm(.sendRetry, after: settings.sendRetryDelay))
        break
      }
      if run.isFull { run.end(pending, at: index, &ledger, &actions) }
      let entry = pending[index]
      var refusal = backend.refusal(of: entry)
      if refusal == nil {
        let size = run.add(entry, remaining: pending.endIndex - index, &backend)
        if let limit = backend.maxFrameSize, size > limit {
          // Sent, it would end the connection; unsent, it would hold up the rest.
          run.removeLast()
          refusal = "the message is \(size) bytes, over the backend's limit of \(limit)"
        } else {
          buffered += size
          if !run.inPlace { ledger.recordSent(entry, frame: run.storedForm(&backend, for: entry)) }
          counters.sent += 1
          run.wrote = true
          index += 1
          continue
        }
      }
      // The run so far goes out before the failure is reported, so actions stay in order.
      run.end(pending, at: index, &ledger, &actions)
      ledger.skip(entry)
      fail(entry, refusal ?? "", &actions)
      index += 1
      run.start = index
    }
    run.end(pending, at: index, &ledger, &actions)
    if run.wrote && backend.confirmsByPong { confirmationPing(now: now, &actions) }
  }
}
