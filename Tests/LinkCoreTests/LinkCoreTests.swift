import LinkCore
import TestSupport
import WebSocket
import XCTest

/// The link core as transcripts: the events a driver feeds and the actions the core asks for.
final class LinkCoreTests: XCTestCase {
  func testStartingConnectsAndAnUpgradeJoinsTheRoomsThenSendsTheOutboxThenArmsTheKeepalive() {
    var link = Harness()
    XCTAssertEqual(
      link.on(.start), ["connect", "state connecting (connecting to ws://chat.example:9000/ws)"])
    XCTAssertEqual(link.on(.start), [], "a second start does nothing")
    XCTAssertEqual(link.on(.progress(.upgrading)), ["state upgrading (sent the upgrade request)"])
    let lines = link.on(.upgraded(handshake()))
    XCTAssertEqual(lines.first?.hasPrefix("report connected"), true)
    XCTAssertEqual(
      Array(lines.dropFirst()),
      [
        "state open (connected)",
        #"send {"event":"join-room","data":{"room_id":7}}"#,
        #"send {"event":"join-room","data":{"room_id":"ops"}}"#,
        "request outbox",
        "arm keepalive 10",
      ])
    XCTAssertEqual(link.core.counters.attempts, 1)
    XCTAssertEqual(link.core.counters.connects, 1)
    XCTAssertNotNil(link.core.negotiated)
  }

  func testTLSProgressIsShownOnlyWhileConnecting() {
    var link = Harness()
    link.on(.start)
    XCTAssertEqual(
      link.on(.progress(.tlsHandshake)), ["state tls (TLS handshake with chat.example)"])
    link.on(.progress(.upgrading))
    XCTAssertEqual(link.on(.progress(.tlsHandshake)), [])
  }

  func testTheOutboxGoesOutInOrderAndOnePongConfirmsTheBurst() {
    var link = Harness()
    link.open()
    let lines = link.on(.outbox([entry(1, "a"), entry(2, "b")], buffered: 0))
    XCTAssertEqual(lines.filter { $0.hasPrefix("sent") }, ["sent id-1", "sent id-2"])
    XCTAssertEqual(lines.suffix(2), ["ping 1", "arm pongDeadline 5"])
    XCTAssertEqual(link.core.counters.sent, 2)
    // The same pending entries offered again are not sent twice on this connection.
    XCTAssertEqual(link.on(.outbox([entry(1, "a"), entry(2, "b")], buffered: 0)), [])
    link.advance(.milliseconds(3))
    XCTAssertEqual(
      link.on(.pongReceived(Keepalive.payload(1))),
      ["confirmed through 2: id-1,id-2", "disarm pongDeadline"])
    XCTAssertEqual(link.core.counters.confirmed, 2)
  }

  func testALongStreamIsSentInRunsOfBoundedBuffersInOrderAndOnePongConfirmsThemAll() throws {
    var link = Harness(sendBufferLimit: 1 << 30)
    link.open()
    let text = String(repeating: "x", count: 600)
    let entries = (UInt64(1)...500).map { entry($0, "\($0) \(text)") }
    let actions = link.actions(.outbox(entries[...], buffered: 0))
    var runs: [(frames: OutboxFrames, entries: ArraySlice<OutboxEntry>)] = []
    for action in actions {
      if case .sendOutbox(let frames, let sent) = action { runs.append((frames, sent)) }
    }
    XCTAssertGreaterThan(runs.count, 1)
    var envelope = EnvelopeProtocol(sender: "bot")
    var next: UInt64 = 1
    for run in runs {
      guard case .texts(let texts) = run.frames else { return XCTFail("frames not in one buffer") }
      XCTAssertLessThan(texts.utf8Count, 128 << 10 + 1000)
      XCTAssertEqual(run.frames.count, run.entries.count)
      for (offset, sent) in run.entries.enumerated() {
        XCTAssertEqual(sent.count, next)
        XCTAssertEqual(run.frames[offset], envelope.encode(sent))
        next += 1
      }
    }
    XCTAssertEqual(next, 501)
    let confirmed = link.actions(.pongReceived(Keepalive.payload(1)))
    guard case .confirmedThrough(500, let sent)? = confirmed.first else {
      return XCTFail("\(confirmed.map(Harness.line))")
    }
    XCTAssertEqual(sent.map(\.entry.count), Array(1...500))
    XCTAssertEqual(sent.map(\.frame.message), entries.map { envelope.encode($0) })
  }

  func testAnEchoConfirmsItsMessageAndIsStoredLikeAnyFrame() {
    var link = Harness()
    link.open()
    link.on(.outbox([entry(1, "a", id: "c-1")], buffered: 0))
    let echo = #"{"event":"message","data":{"room_id":7,"message":"a","client_id":"c-1"}}"#
    XCTAssertEqual(link.on(.message(text(echo))), ["store \(echo)", "confirmed c-1"])
    XCTAssertEqual(link.core.counters.received, 1)
    XCTAssertEqual(link.core.counters.confirmed, 1)
    // The pong that follows confirms nothing more.
    XCTAssertEqual(link.on(.pongReceived(Keepalive.payload(1))), ["disarm pongDeadline"])
  }

  func testSendsMadeWhileAPingIsOutAreConfirmedByTheNextPing() {
    var link = Harness()
    link.open()
    link.on(.outbox([entry(1)], buffered: 0))
    XCTAssertEqual(
      link.on(.outbox([entry(1), entry(2)], buffered: 0)), ["send " + sendText(2), "sent id-2"])
    XCTAssertEqual(
      link.on(.pongReceived(Keepalive.payload(1))),
      ["confirmed through 1: id-1", "disarm pongDeadline", "ping 2", "arm pongDeadline 5"])
    XCTAssertEqual(
      link.on(.pongReceived(Keepalive.payload(2))),
      ["confirmed through 2: id-2", "disarm pongDeadline"])
  }

  func testAFullSocketPausesTheOutboxAndItResumesShortly() {
    var link = Harness()
    link.open()
    let big = String(repeating: "x", count: 600)
    let lines = link.on(.outbox([entry(1, big), entry(2, big), entry(3, big)], buffered: 0))
    XCTAssertEqual(lines.filter { $0.hasPrefix("sent") }, ["sent id-1", "sent id-2"])
    XCTAssertTrue(lines.contains("arm sendRetry 0"), "\(lines)")
    XCTAssertEqual(link.on(.timerFired(.sendRetry)), ["request outbox"])
    XCTAssertEqual(
      link.on(.outbox([entry(1, big), entry(2, big), entry(3, big)], buffered: 0)).filter {
        $0.hasPrefix("sent")
      }, ["sent id-3"])
  }

  func testAfterAReconnectUnconfirmedMessagesGoOutAgainInOrder() {
    var link = Harness()
    link.open()
    link.on(.outbox([entry(1), entry(2)], buffered: 0))
    link.on(.ended(closed(.serviceRestart)))
    XCTAssertEqual(link.core.state.name, "waiting")
    link.on(.timerFired(.retry))
    link.on(.upgraded(handshake()))
    let lines = link.on(.outbox([entry(1), entry(2)], buffered: 0))
    XCTAssertEqual(lines.filter { $0.hasPrefix("sent") }, ["sent id-1", "sent id-2"])
    XCTAssertEqual(link.core.counters.sent, 4)
    XCTAssertEqual(link.core.counters.attempts, 2)
  }

  func testARefusalWaitsAsThePolicySaysAndShowsTheProblemUntilTheNextConnection() {
    var link = Harness()
    link.on(.start)
    let lines = link.on(.ended(refusal(401)))
    XCTAssertEqual(
      lines,
      [
        "disarm keepalive", "disarm pongDeadline", "disarm sendRetry",
        "report failed(problem: \"the backend refused the credentials (HTTP 401); check TokenFile=\")",
        "report disconnected(text: \"server answered 401 No\", closeCode: nil, retryIn: 60.0 seconds, failures: 0)",
        "state waiting 60 s to reconnect (server answered 401 No)",
        "arm retry 60",
      ])
    XCTAssertEqual(
      link.core.lastError, "the backend refused the credentials (HTTP 401); check TokenFile=")
    XCTAssertEqual(link.core.lastDisconnect, Disconnection(reason: "server answered 401 No"))
    XCTAssertEqual(link.on(.timerFired(.retry)).first, "connect")
    link.on(.upgraded(handshake()))
    XCTAssertNil(link.core.lastError)
  }

  func testAClosedConnectionReportsItsCode() {
    var link = Harness()
    link.open()
    link.on(.ended(closed(.policyViolation, "expired")))
    XCTAssertEqual(link.core.lastDisconnect?.code, 1008)
    XCTAssertEqual(link.core.state, .waiting(.seconds(60)))
  }

  func testASilentPeerIsDroppedAfterTheTimeoutAndReconnectedTo() {
    var link = Harness()
    link.open()
    link.advance(.seconds(10))
    XCTAssertEqual(
      link.on(.timerFired(.keepalive)), ["arm keepalive 10", "ping 1", "arm pongDeadline 5"])
    link.advance(.seconds(2))
    link.on(.message(text("{}")))
    link.advance(.seconds(3))
    XCTAssertEqual(link.on(.timerFired(.pongDeadline)), ["arm pongDeadline 2"])
    link.advance(.seconds(2))
    let lines = link.on(.timerFired(.pongDeadline))
    XCTAssertEqual(lines.first, "report peerSilent(timeout: 5.0 seconds)")
    XCTAssertEqual(lines[1], "drop 1001 no pong")
    XCTAssertTrue(
      lines.contains {
        $0.hasPrefix("state waiting")
          && $0.hasSuffix("(timed out after 5 s while waiting for a pong)")
      }, "\(lines)")
    XCTAssertTrue(lines.contains { $0.hasPrefix("arm retry") }, "\(lines)")
    XCTAssertEqual(
      link.core.lastError, "timed out after 5 s while waiting for a pong")
    XCTAssertEqual(link.on(.ended(.cancelled)), [], "the dropped connection reports nothing more")
  }

  func testWhileTheStoreIsBehindReadingPausesAndThePeerIsNotDeclaredDead() {
    var link = Harness()
    link.open()
    XCTAssertEqual(link.on(.storeBehind(true)), ["report readingPaused", "pause reading"])
    XCTAssertEqual(link.on(.storeBehind(true)), [])
    link.on(.timerFired(.keepalive))
    link.advance(.seconds(30))
    XCTAssertEqual(link.on(.timerFired(.pongDeadline)), ["arm pongDeadline 5"])
    XCTAssertEqual(link.on(.storeBehind(false)), ["resume reading"])
  }

  func testOperatorPingsAreAnsweredOrFailClearly() {
    var link = Harness()
    XCTAssertEqual(link.on(.pingRequested(id: 1)), ["ping 1 failed: not connected to the backend"])
    link.open()
    XCTAssertEqual(link.on(.pingRequested(id: 2)), ["ping 1", "arm pongDeadline 5"])
    link.advance(.milliseconds(4))
    let answer = link.actions(.pongReceived(Keepalive.payload(1)))
    guard case .pingAnswered(2, let rtt) = answer.first else { return XCTFail("\(answer)") }
    XCTAssertEqual(rtt, .milliseconds(4))
    link.on(.pingRequested(id: 3))
    let lines = link.on(.ended(closed(.goingAway)))
    XCTAssertTrue(lines.contains("ping 3 failed: not connected to the backend"), "\(lines)")
  }

  func testStoppingClosesWith1001AndReportsStoppedOnceTheConnectionIsDown() {
    var link = Harness()
    link.open()
    XCTAssertEqual(
      link.on(.stop),
      [
        "disarm retry", "disarm keepalive", "disarm pongDeadline",
        "state closing (shutting down)", "close 1001 shutting down",
      ])
    XCTAssertEqual(link.on(.outbox([entry(1)], buffered: 0)), [], "nothing is sent while stopping")
    let lines = link.on(.ended(closed(.goingAway, by: .local)))
    XCTAssertEqual(lines.suffix(2), ["state idle (stopped)", "stopped"])
    XCTAssertEqual(link.on(.timerFired(.retry)), [], "a stopped link never reconnects")
  }

  func testStoppingWhileWaitingStopsAtOnce() {
    var link = Harness()
    link.on(.start)
    link.on(.ended(.connectionFailed("refused")))
    XCTAssertEqual(link.on(.stop).suffix(2), ["state idle (stopped)", "stopped"])
  }

  func testStoppingDuringAnAttemptClosesItAndNothingStartsItAgain() {
    var link = Harness()
    link.on(.start)
    XCTAssertEqual(link.on(.stop).last, "close 1001 shutting down")
    XCTAssertEqual(link.on(.upgraded(handshake())), [], "the attempt is being given up")
    XCTAssertEqual(link.on(.reconnect(reason: "operator")), [], "nor reconnected while stopping")
    XCTAssertEqual(link.on(.ended(.cancelled)).suffix(2), ["state idle (stopped)", "stopped"])
    XCTAssertEqual(link.on(.start), [], "a stopped link does not start again")
    XCTAssertEqual(link.on(.reconnect(reason: "operator")), [])
    XCTAssertEqual(link.core.counters.attempts, 1)
  }

  func testStoppingWhileARefusedSessionClosesCountsTheRefusalAndStops() {
    var link = Harness(backend: HandshakingDialect())
    link.open()
    XCTAssertEqual(
      link.on(.message(text("DENIED bad password"))).last, "close 1000 session refused")
    XCTAssertEqual(link.on(.stop), ["disarm retry", "disarm keepalive", "disarm pongDeadline"])
    let lines = link.on(.ended(closed(.normalClosure, by: .local)))
    XCTAssertEqual(lines.suffix(2), ["state idle (stopped)", "stopped"])
    XCTAssertEqual(link.core.counters.endings, ["session_refused": 1])
  }

  func testAStoreBehindDuringAnAttemptKeepsReadingPausedOnceUpgraded() {
    var link = Harness()
    link.on(.start)
    XCTAssertEqual(link.on(.storeBehind(true)), ["report readingPaused", "pause reading"])
    link.on(.upgraded(handshake()))
    XCTAssertTrue(link.core.readingPaused)
    XCTAssertEqual(link.on(.storeBehind(false)), ["resume reading"])
    link.on(.ended(.connectionFailed("reset")))
    XCTAssertFalse(link.core.readingPaused, "a new connection reads from the start")
  }

  func testTheHandshakeAndItsSessionLiveExactlyAsLongAsTheConnection() {
    var link = Harness()
    XCTAssertNil(link.core.negotiated)
    link.open()
    XCTAssertEqual(link.core.negotiated, handshake())
    link.on(.ended(.connectionFailed("reset")))
    XCTAssertNil(link.core.negotiated)
    XCTAssertNil(link.core.session)
  }

  func testAReconnectRequestDropsTheConnectionAndConnectsAtOnce() {
    var link = Harness()
    link.open()
    let lines = link.on(.reconnect(reason: "requested"))
    XCTAssertEqual(
      lines.prefix(3),
      [
        "report reconnectRequested(reason: \"requested\")", "disarm retry",
        "drop 1001 reconnecting",
      ])
    XCTAssertEqual(
      lines.suffix(2), ["connect", "state connecting (connecting to ws://chat.example:9000/ws)"])
    XCTAssertEqual(link.on(.stop).last, "close 1001 shutting down")
  }

  func testJoinsAndLeavesGoOutAtOnceWhenOpenAndAfterEveryReconnect() {
    var link = Harness(rooms: ["7"])
    XCTAssertEqual(link.on(.join(RoomID("9")!)), [])
    link.open()
    XCTAssertEqual(
      link.on(.join(RoomID("ops")!)), [#"send {"event":"join-room","data":{"room_id":"ops"}}"#])
    XCTAssertEqual(link.on(.join(RoomID("ops")!)), [], "joined once")
    XCTAssertEqual(
      link.on(.leave(RoomID("7")!)), [#"send {"event":"leave-room","data":{"room_id":7}}"#])
    XCTAssertEqual(link.core.rooms.map(\.name), ["9", "ops"])
  }

  func testAReloadLeavesRemovedRoomsJoinsNewOnesKeepsRuntimeJoinsAndRestartsTheKeepalive() {
    var link = Harness(rooms: ["7", "8"])
    link.open()
    link.on(.join(RoomID("runtime")!))
    var settings = link.core.settings
    settings.pingInterval = .seconds(3)
    let lines = link.on(.reload(settings, rooms: [RoomID("8")!, RoomID("9")!]))
    XCTAssertEqual(
      lines,
      [
        #"send {"event":"leave-room","data":{"room_id":7}}"#,
        #"send {"event":"join-room","data":{"room_id":9}}"#,
        "arm keepalive 3",
      ])
    XCTAssertEqual(link.core.rooms.map(\.name), ["8", "runtime", "9"])
  }

  func testAReloadThatChangesWhatTheUpgradeCarriesReconnectsAndJoinsOnTheNewConnection() {
    var link = Harness(rooms: ["7"])
    link.open()
    var settings = link.core.settings
    settings.upgrade.headers.add(name: "Authorization", value: "Bearer new")
    let lines = link.on(.reload(settings, rooms: [RoomID("7")!, RoomID("9")!]))
    XCTAssertTrue(lines.contains("drop 1001 reconnecting"), "\(lines)")
    XCTAssertFalse(lines.contains { $0.hasPrefix("send") }, "no join on the old connection")
    XCTAssertEqual(lines.last, "state connecting (connecting to ws://chat.example:9000/ws)")
    let joins = link.on(.upgraded(handshake())).filter { $0.hasPrefix("send") }
    XCTAssertEqual(
      joins,
      [
        #"send {"event":"join-room","data":{"room_id":7}}"#,
        #"send {"event":"join-room","data":{"room_id":9}}"#,
      ])
  }

  func testNewEnvelopeNamesApplyAtOnceWithoutANewConnection() {
    var link = Harness(rooms: ["7"])
    link.open()
    var settings = link.core.settings
    var names = EnvelopeNames()
    names.joinEvent = "enter"
    settings.dialect = .envelope(names, sender: "bot")
    XCTAssertEqual(link.on(.reload(settings, rooms: [RoomID("7")!])), ["arm keepalive 10"])
    XCTAssertEqual(
      link.on(.join(RoomID("8")!)), [#"send {"event":"enter","data":{"room_id":8}}"#])
  }

  func testAChangedSettingOfADialectWithASessionReconnectsWithANewDialect() {
    var mqtt = MQTTProtocol.Settings()
    mqtt.clientID = "a"
    var settings = LinkSettings(
      url: testURL, pingInterval: .seconds(10), pongTimeout: .seconds(5),
      reconnectMin: .seconds(1), reconnectMax: .seconds(60))
    settings.dialect = .mqtt(mqtt)
    var link = Harness(core: LinkCore(settings: settings, rooms: [], random: SplitMix64()))
    link.open()
    XCTAssertEqual(
      link.on(.reload(settings, rooms: [])), [], "unchanged: the session and connection stay")
    mqtt.clientID = "b"
    settings.dialect = .mqtt(mqtt)
    XCTAssertTrue(link.on(.reload(settings, rooms: [])).contains("drop 1001 reconnecting"))
    let opening = link.on(.upgraded(handshake(subprotocol: "mqtt")))
    XCTAssertTrue(
      opening.contains { $0.hasPrefix("send binary") }, "the new dialect's CONNECT: \(opening)")
  }

  func testRawHasNoRoomsToJoin() {
    var link = Harness(rooms: ["7"], backend: RawProtocol())
    XCTAssertEqual(link.core.rooms, [])
    XCTAssertFalse(link.core.hasRooms)
    XCTAssertFalse(link.open().contains { $0.hasPrefix("send") })
    XCTAssertEqual(link.on(.join(RoomID("7")!)), [])
  }

  func testAConnectionThatStayedUpForgetsPastFailures() {
    var link = Harness()
    link.on(.start)
    for _ in 0..<3 {
      link.on(.ended(.connectionFailed("refused")))
      link.on(.timerFired(.retry))
    }
    XCTAssertEqual(link.core.failures, 3)
    link.on(.upgraded(handshake()))
    link.advance(.seconds(5))
    link.on(.ended(closed(.abnormalClosure, by: .transport)))
    XCTAssertEqual(link.core.failures, 4, "a short connection does not count as stable")
    link.on(.timerFired(.retry))
    link.on(.upgraded(handshake()))
    link.advance(.seconds(31))
    link.on(.ended(closed(.abnormalClosure, by: .transport)))
    XCTAssertEqual(link.core.failures, 1)
  }

  func testEventsOfAConnectionThatIsNotThereAreIgnored() {
    var link = Harness()
    XCTAssertEqual(link.on(.message(text("{}"))), [])
    XCTAssertEqual(link.on(.pongReceived(Keepalive.payload(1))), [])
    XCTAssertEqual(link.on(.ended(.cancelled)), [])
    XCTAssertEqual(link.on(.upgraded(handshake())), [])
    XCTAssertEqual(link.on(.timerFired(.keepalive)), [])
    XCTAssertEqual(link.on(.storeBehind(true)), [])
  }

  private func sendText(_ count: UInt64) -> String {
    var envelope = EnvelopeProtocol(sender: "bot")
    return envelope.encode(entry(count)).text ?? ""
  }
}
