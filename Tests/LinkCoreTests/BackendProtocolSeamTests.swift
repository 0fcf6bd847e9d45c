import LinkCore
import WebSocket
import XCTest

/// A dialect with everything the seam allows: its own session set-up, heartbeat and
/// acknowledgements both ways. The core must drive it without knowing any of it.
struct HandshakingDialect: BackendProtocol {
  var opened = 0
  var offeredSubprotocols: [String] { ["fake.v1"] }
  var hasRooms: Bool { true }
  var confirmsByPong: Bool { false }

  mutating func open(_ handshake: ClientHandshake.Result) -> ProtocolOpening {
    opened += 1
    return ProtocolOpening(frames: [text("HELLO \(opened)")], ready: false)
  }
  mutating func join(_ room: RoomID) -> Message? { text("JOIN \(room)") }
  mutating func leave(_ room: RoomID) -> Message? { text("LEAVE \(room)") }
  mutating func encode(_ entry: OutboxEntry) -> Message {
    text("SEND \(entry.count) \(entry.text)")
  }
  mutating func heartbeat() -> Message? { text("PING") }
  func refusal(of entry: OutboxEntry) -> String? { entry.text == "REFUSE" ? "not here" : nil }

  mutating func read(_ message: Message) -> ProtocolReading {
    let words = (message.text ?? "").split(separator: " ").map(String.init)
    switch words.first {
    case "WELCOME": return ProtocolReading(record: nil, session: .ready)
    case "DENIED":
      return ProtocolReading(
        record: nil, session: .refused(words.dropFirst().joined(separator: " ")))
    case "PONG": return ProtocolReading(record: nil, heartbeatAnswered: true)
    case "SRVPING": return ProtocolReading(record: nil, replies: [text("SRVPONG")])
    case "SRVBEAT":
      var reading = ProtocolReading(record: nil)
      reading.peerHeartbeat = .seconds(30)
      return reading
    case "ACK":
      return ProtocolReading(record: nil, delivered: words.dropFirst().compactMap { UInt64($0) })
    case "MSG":
      return ProtocolReading(
        record: InboundMessage(payload: message, scan: .notJSON, room: Array("\"7\"".utf8)),
        acknowledgement: text("GOT \(words[1])"))
    default: return ProtocolReading(record: InboundMessage(payload: message, scan: .unscanned))
    }
  }
}

final class BackendProtocolSeamTests: XCTestCase {
  func testTheDialectsSetUpRunsBeforeRoomsAndTheOutbox() {
    var link = Harness(rooms: ["7"], backend: HandshakingDialect())
    XCTAssertEqual(link.core.offeredSubprotocols, ["fake.v1"])
    link.on(.start)
    let lines = link.on(.upgraded(handshake()))
    XCTAssertEqual(
      Array(lines.dropFirst()),
      [
        "send HELLO 1", "arm pongDeadline 5", "state upgrading (setting up the backend session)",
      ])
    XCTAssertEqual(link.on(.outbox([entry(1)], buffered: 0)), [], "nothing goes out before ready")
    XCTAssertEqual(
      link.on(.message(text("WELCOME"))),
      [
        "disarm pongDeadline", "state open (connected)", "send JOIN 7", "request outbox",
        "arm keepalive 10",
      ])
  }

  func testADialectsAcknowledgementsConfirmSendsAndPongsDoNot() {
    var link = Harness(rooms: [], backend: HandshakingDialect())
    link.on(.start)
    link.on(.upgraded(handshake()))
    link.on(.message(text("WELCOME")))
    XCTAssertEqual(
      link.on(.outbox([entry(1, "a"), entry(2, "b")], buffered: 0)),
      ["send SEND 1 a", "sent id-1", "send SEND 2 b", "sent id-2"],
      "no confirmation ping: the dialect acknowledges")
    XCTAssertEqual(link.on(.message(text("ACK 2"))), ["confirmed id-2"])
    XCTAssertEqual(
      link.on(.message(text("ACK 2 9"))), [], "unknown or repeated acks confirm nothing")
    XCTAssertEqual(link.on(.message(text("ACK 1"))), ["confirmed id-1"])
    XCTAssertEqual(link.core.counters.confirmed, 2)
  }

  func testARunOfSendsIsOneActionAndARefusedEntrySplitsItInOrder() {
    var link = Harness(rooms: [], backend: HandshakingDialect())
    link.on(.start)
    link.on(.upgraded(handshake()))
    link.on(.message(text("WELCOME")))
    let entries = [entry(1, "a"), entry(2, "b"), entry(3, "REFUSE"), entry(4, "d")]
    let actions = link.actions(.outbox(entries[...], buffered: 0))
    let shape = actions.map { action -> String in
      switch action {
      case .sendOutbox(let frames, let sent):
        "\(frames.messages.compactMap(\.text)) for \(sent.map(\.count))"
      case .failed(let entry, let reason): "failed \(entry.count): \(reason)"
      default: Harness.line(action)
      }
    }
    XCTAssertEqual(
      shape,
      [#"["SEND 1 a", "SEND 2 b"] for [1, 2]"#, "failed 3: not here", #"["SEND 4 d"] for [4]"#])
  }

  /// A dialect that writes its frames into the run's buffer, with a frame size limit and an
  /// in-flight limit: the run is one buffer, an entry over the limit fails without a trace in
  /// it, the ledger keeps each frame as it went out, and no more go out than may be in flight.
  struct InPlaceDialect: BackendProtocol {
    var hasRooms: Bool { false }
    var maxFrameSize: Int? { 12 }
    var maxInFlight: Int? { 3 }
    var writesFramesInPlace: Bool { true }
    mutating func join(_ room: RoomID) -> Message? { nil }
    mutating func leave(_ room: RoomID) -> Message? { nil }
    mutating func encode(_ entry: OutboxEntry) -> Message { text("S\(entry.count) \(entry.text)") }
    mutating func read(_ message: Message) -> ProtocolReading {
      ProtocolReading(record: InboundMessage(payload: message, scan: .unscanned))
    }
  }

  func testFramesWrittenInPlaceGoOutAsOneBufferAndAnOversizedOneFailsWithoutATrace() {
    var link = Harness(rooms: [], backend: InPlaceDialect())
    link.on(.start)
    link.on(.upgraded(handshake()))
    let entries = [
      entry(1, "a"), entry(2, "much too long"), entry(3, "c"), entry(4, "d"), entry(5, "e"),
    ]
    let actions = link.actions(.outbox(entries[...], buffered: 0))
    var runs: [[String]] = []
    var lines: [String] = []
    for action in actions {
      switch action {
      case .sendOutbox(let frames, let sent):
        guard case .texts = frames else { return XCTFail("frames not written in place") }
        runs.append(frames.messages.compactMap(\.text))
        lines.append("send \(sent.map(\.count))")
      case .failed(let entry, let reason): lines.append("failed \(entry.count): \(reason)")
      default: lines.append(Harness.line(action))
      }
    }
    // Three may be in flight, those of the run being written included: the fifth waits.
    XCTAssertEqual(
      lines,
      [
        "send [1]", "failed 2: the message is 16 bytes, over the backend's limit of 12",
        "send [3, 4]", "ping 1", "arm pongDeadline 5",
      ])
    XCTAssertEqual(runs, [["S1 a"], ["S3 c", "S4 d"]])
    // The pong confirms the three, each with its frame as it went out, read from its run's
    // buffer; then the fifth goes.
    let confirmed = link.actions(.pongReceived(Keepalive.payload(1)))
    guard case .confirmedThrough(4, let sent)? = confirmed.first else {
      return XCTFail("\(confirmed.map(Harness.line))")
    }
    XCTAssertEqual(sent.map(\.entry.count), [1, 3, 4])
    XCTAssertEqual(sent.map(\.frame.message.text), ["S1 a", "S3 c", "S4 d"])
    for item in sent {
      guard case .packed = item.frame else { return XCTFail("a frame copied out of its run") }
    }
    let next = link.actions(.outbox(entries[4...], buffered: 0))
    XCTAssertEqual(next.flatMap(Harness.lines).prefix(2), ["send S5 e", "sent id-5"])
  }
  private func acknowledging() -> Harness {
    var link = Harness(backend: HandshakingDialect())
    link.on(.start)
    link.on(.upgraded(handshake()))
    link.on(.message(text("WELCOME")))
    return link
  }

  func testAnInboundRecordsAcknowledgementWaitsInTheCoreUntilTheRecordIsDurable() {
    var link = acknowledging()
    XCTAssertEqual(
      link.on(.message(text("MSG 41"))), ["await durability", "store MSG 41 (ack held)"],
      "the store is told that someone waits, then asked to store")
    XCTAssertEqual(
      link.on(.message(text("SRVPING"))), ["send SRVPONG"], "control frames are not stored")
    XCTAssertEqual(link.core.counters.received, 1)
    XCTAssertEqual(link.on(.stored(seq: 7)), [])
    XCTAssertEqual(link.on(.durable(through: 6)), [], "its record is not durable yet")
    XCTAssertEqual(link.on(.durable(through: 7)), ["send GOT 41", "durability not awaited"])
    XCTAssertEqual(link.on(.durable(through: 8)), [], "sent once")
  }

  func testAcknowledgementsLeaveInTheOrderTheirRecordsWereStoredAsFarAsTheyAreDurable() {
    var link = acknowledging()
    link.on(.message(text("MSG 1")))
    link.on(.stored(seq: 10))
    XCTAssertEqual(link.on(.message(text("MSG 2"))), ["store MSG 2 (ack held)"])
    link.on(.stored(seq: 12))
    link.on(.message(text("MSG 3")))
    link.on(.stored(seq: 13))
    XCTAssertEqual(link.on(.durable(through: 12)), ["send GOT 1", "send GOT 2"])
    XCTAssertEqual(link.on(.durable(through: 20)), ["send GOT 3", "durability not awaited"])
  }

  func testALostConnectionVoidsTheWaitingAcknowledgementsForTheBackendRedelivers() {
    var link = acknowledging()
    link.on(.message(text("MSG 1")))
    link.on(.stored(seq: 10))
    link.on(.message(text("MSG 2")))
    let ended = link.on(.ended(.connectionFailed("reset")))
    XCTAssertTrue(ended.contains("durability not awaited"), "\(ended)")
    // MSG 2's seq is reported only after the connection ended.
    link.on(.stored(seq: 11))
    XCTAssertEqual(link.on(.durable(through: 11)), [], "nothing goes out on the next connection")
    link.on(.timerFired(.retry))
    link.on(.upgraded(handshake()))
    link.on(.message(text("WELCOME")))
    link.on(.message(text("MSG 2")))
    link.on(.stored(seq: 12))
    XCTAssertEqual(link.on(.durable(through: 12)), ["send GOT 2", "durability not awaited"])
  }

  func testTheDialectsHeartbeatReplacesWebSocketPings() {
    var link = Harness(backend: HandshakingDialect())
    link.on(.start)
    link.on(.upgraded(handshake()))
    link.on(.message(text("WELCOME")))
    XCTAssertEqual(
      link.on(.timerFired(.keepalive)), ["arm keepalive 10", "send PING", "arm pongDeadline 5"])
    link.advance(.seconds(1))
    link.on(.message(text("PONG")))
    XCTAssertEqual(link.core.counters.roundTrips.count, 1, "the set-up is no round trip")
    XCTAssertEqual(link.core.counters.roundTrips.sum, 1)
    link.advance(.seconds(5))
    XCTAssertEqual(link.on(.timerFired(.pongDeadline)), [], "answered: nothing outstanding")
    link.on(.timerFired(.keepalive))
    link.advance(.seconds(6))
    XCTAssertEqual(
      link.on(.timerFired(.pongDeadline)).first, "report peerSilent(timeout: 5.0 seconds)")
  }

  /// Heartbeats both ways (STOMP): while the backend's prove it alive, ours still go out
  /// every interval, and nothing need answer them.
  func testWhileTheBackendSendsHeartbeatsTheDialectsStillGoOutUnanswered() {
    var link = Harness(backend: HandshakingDialect())
    link.on(.start)
    link.on(.upgraded(handshake()))
    link.on(.message(text("WELCOME")))
    link.on(.message(text("SRVBEAT")))
    XCTAssertEqual(link.on(.timerFired(.keepalive)), ["arm keepalive 10", "send PING"])
    link.advance(.seconds(10))
    XCTAssertEqual(link.on(.timerFired(.keepalive)), ["arm keepalive 10", "send PING"])
    link.advance(.seconds(20))
    XCTAssertEqual(
      link.on(.timerFired(.pongDeadline)).first, "report peerSilent(timeout: 5.0 seconds)",
      "the backend's silence, not an unanswered PING, ends it")
  }

  func testARefusedSessionClosesPolitelyAndIsRetriedSlowlyWithTheReason() {
    var link = Harness(backend: HandshakingDialect())
    link.on(.start)
    link.on(.upgraded(handshake()))
    XCTAssertEqual(link.on(.message(text("DENIED bad token"))), ["close 1000 session refused"])
    let lines = link.on(.ended(closed(.normalClosure, by: .local)))
    XCTAssertTrue(lines.contains("arm retry 60"), "\(lines)")
    XCTAssertEqual(link.core.lastError, "the backend refused the session: bad token")
    XCTAssertEqual(link.core.lastDisconnect?.reason, "the backend refused the session: bad token")
  }

  /// A status read between the upgrade and the backend's answer must still say why the last
  /// attempt failed: only a usable session clears the error.
  func testTheLastErrorStaysVisibleUntilASessionIsReady() {
    var link = Harness(backend: HandshakingDialect())
    link.on(.start)
    link.on(.upgraded(handshake()))
    link.on(.message(text("DENIED bad token")))
    link.on(.ended(closed(.normalClosure, by: .local)))
    link.on(.timerFired(.retry))
    link.on(.upgraded(handshake()))
    XCTAssertEqual(link.core.lastError, "the backend refused the session: bad token")
    link.on(.message(text("WELCOME")))
    XCTAssertNil(link.core.lastError)
  }

  func testAPeerCloseDuringTheSetUpIsARefusalRetriedSlowlyWithTheDialectsText() {
    var link = Harness(backend: HandshakingDialect())
    link.on(.start)
    link.on(.upgraded(handshake()))
    let lines = link.on(.ended(closed(.protocolError, "unauthenticated")))
    XCTAssertTrue(lines.contains("arm retry 60"), "the longest wait, as for HTTP 401: \(lines)")
    XCTAssertEqual(
      link.core.lastError,
      "the backend refused the session: the backend closed the connection during its set-up: "
        + "1002 (protocol error) \"unauthenticated\", closed by the peer")
    XCTAssertEqual(link.core.failures, 0)
    XCTAssertEqual(link.core.counters.connects, 0)
  }

  func testAServerRestartingDuringTheSetUpIsNotARefusal() {
    for code in [CloseCode.goingAway, .serviceRestart, .internalServerError] {
      var link = Harness(backend: HandshakingDialect())
      link.on(.start)
      link.on(.upgraded(handshake()))
      let lines = link.on(.ended(closed(code)))
      XCTAssertFalse(lines.contains("arm retry 60"), "\(code): \(lines)")
      XCTAssertNil(link.core.lastError, "\(code)")
    }
  }

  func testANormalCloseSoonAfterTheSessionOpenedBacksOffAndSaysSo() {
    var link = Harness(backend: HandshakingDialect(), reconnect: (.seconds(1), .seconds(8)))
    link.on(.start)
    for attempt in 1...3 {
      link.on(.upgraded(handshake()))
      link.on(.message(text("WELCOME")))
      link.advance(.milliseconds(20))
      link.on(.ended(closed(.normalClosure, "STOMP died")))
      XCTAssertEqual(link.core.failures, attempt, "each early close counts as a failure")
      link.on(.timerFired(.retry))
    }
    XCTAssertEqual(
      link.core.lastError,
      "the backend closed the connection as soon as the session opened: "
        + "1000 (normal closure) \"STOMP died\", closed by the peer")
    XCTAssertEqual(link.core.lastDisconnect?.code, 1000)
    link.on(.upgraded(handshake()))
    link.on(.message(text("WELCOME")))
    link.advance(.milliseconds(2500))
    link.on(.ended(closed(.normalClosure)))
    XCTAssertEqual(
      link.core.lastError,
      "the backend closed the connection 2.5 s after the session opened: "
        + "1000 (normal closure), closed by the peer")
  }

  func testANormalCloseOfAStableSessionReconnectsSoonWithoutAFailure() {
    var link = Harness(backend: HandshakingDialect())
    link.on(.start)
    link.on(.upgraded(handshake()))
    link.on(.message(text("WELCOME")))
    link.advance(.seconds(30))
    link.on(.ended(closed(.normalClosure)))
    XCTAssertEqual(link.core.failures, 0)
    XCTAssertNil(link.core.lastError)
  }

  func testEveryConnectionStartsTheDialectAfresh() {
    var link = Harness(backend: HandshakingDialect())
    link.on(.start)
    link.on(.upgraded(handshake()))
    link.on(.ended(closed(.goingAway)))
    link.on(.timerFired(.retry))
    XCTAssertEqual(link.on(.upgraded(handshake())).dropFirst().first, "send HELLO 2")
  }
}
