import LinkCore
import WebSocket
import XCTest

/// The link core driving the Socket.IO dialect: set-up, the server's heartbeat, acks that
/// confirm or fail sends, and the limits of the set-up.
final class SocketIOLinkTests: XCTestCase {
  private static let openPacket =
    #"0{"sid":"e1","upgrades":[],"pingInterval":2000,"pingTimeout":1000,"maxPayload":200}"#

  private func link(rooms: [String] = ["7"]) -> Harness {
    var settings = SocketIOProtocol.Settings()
    settings.sender = "bot"
    return Harness(rooms: rooms, backend: SocketIOProtocol(settings))
  }

  /// A link whose namespace connect was accepted, its joins and outbox request done.
  private func ready(rooms: [String] = ["7"]) -> Harness {
    var link = link(rooms: rooms)
    link.open()
    link.on(.message(text(Self.openPacket)))
    link.on(.message(text(#"40{"sid":"n1"}"#)))
    return link
  }

  func testTheSessionOpensWithTheServersPacketsThenJoinsRoomsAndSendsTheOutbox() {
    var link = link()
    link.on(.start)
    XCTAssertEqual(
      Array(link.on(.upgraded(handshake())).dropFirst()),
      ["arm pongDeadline 5", "state upgrading (setting up the backend session)"])
    XCTAssertEqual(
      link.on(.message(text(Self.openPacket))), ["send 40{}", "arm pongDeadline 3"],
      "the namespace connect, and the server's heartbeat is now the deadline")
    XCTAssertEqual(
      link.on(.message(text(#"40{"sid":"n1"}"#))),
      [
        "arm pongDeadline 3", "state open (connected)", #"send 421["join-room",{"room_id":7}]"#,
        "request outbox", "arm keepalive 10",
      ])
    XCTAssertEqual(link.core.session, ProtocolSession(id: "n1", namespace: "/"))
    XCTAssertEqual(
      link.on(.outbox([entry(1, "a")], buffered: 0)),
      [
        #"send 422["send-message",{"room_id":7,"message":"a","sender":"bot","count":1,"client_id":"id-1"}]"#,
        "sent id-1",
      ], "no confirmation ping: the ack confirms")
    XCTAssertEqual(link.on(.message(text(#"432[{"ok":true}]"#))), ["confirmed id-1"])
  }

  func testAnAckWithAnErrorFailsThatMessageAndTheRestGoOn() {
    var link = ready()
    link.on(.outbox([entry(1), entry(2), entry(3)], buffered: 0))
    XCTAssertEqual(
      link.on(.message(text(#"433[{"error":"muted"}]"#))), ["failed id-2: muted"])
    XCTAssertEqual(link.on(.message(text("434[]"))), ["confirmed id-3"])
    XCTAssertEqual(link.on(.message(text("432[]"))), ["confirmed id-1"])
    XCTAssertEqual(link.core.counters.failed, 1)
    XCTAssertEqual(link.core.counters.confirmed, 2)
  }

  func testAMessageOverTheServersMaxPayloadFailsWithoutGoingOut() {
    var link = ready()
    let big = entry(2, String(repeating: "x", count: 300))
    let lines = link.on(.outbox([entry(1), big, entry(3)], buffered: 0))
    XCTAssertEqual(lines.count, 5, "\(lines)")
    XCTAssertEqual(lines[2].prefix(19), "failed id-2: the me")
    XCTAssertTrue(lines[2].hasSuffix("over the backend's limit of 200"), lines[2])
    XCTAssertEqual(lines[4], "sent id-3")
    XCTAssertEqual(
      link.on(.outbox([entry(1), entry(3)], buffered: 0)), [], "the failed one is passed over")
  }

  func testTheServersPingsAreAnsweredAndNoWebSocketPingsGoOut() {
    var link = ready()
    link.advance(.seconds(2))
    XCTAssertEqual(link.on(.message(text("2"))), ["send 3", "arm pongDeadline 3"])
    XCTAssertEqual(link.on(.timerFired(.keepalive)), ["arm keepalive 10"], "no probe")
  }

  func testAServerThatFallsSilentIsDeadPingIntervalPlusPingTimeoutAfterItsLastFrame() {
    var link = ready()
    link.advance(.seconds(2))
    link.on(.message(text("2")))
    link.advance(.seconds(2))
    // A server busy sending (its ping queued behind its events) is alive: the wait starts over.
    link.on(.message(text(#"42["chat",{"room_id":7}]"#)))
    link.advance(.seconds(1))
    XCTAssertEqual(link.on(.timerFired(.pongDeadline)), ["arm pongDeadline 2"])
    link.advance(.seconds(2))
    let lines = link.on(.timerFired(.pongDeadline))
    XCTAssertEqual(lines.first, "report peerSilent(timeout: 5.0 seconds)")
    XCTAssertTrue(lines.contains("drop 1001 no pong"), "\(lines)")
    XCTAssertEqual(
      link.core.lastDisconnect?.reason.contains("backend's heartbeat"), true,
      link.core.lastDisconnect?.reason ?? "")
  }

  func testWhileReadingIsPausedTheServersSilenceProvesNothing() {
    var link = ready()
    link.on(.storeBehind(true))
    link.advance(.seconds(4))
    XCTAssertEqual(link.on(.timerFired(.pongDeadline)), ["arm pongDeadline 5"])
    link.on(.storeBehind(false))
    link.advance(.seconds(2))
    XCTAssertEqual(link.on(.timerFired(.pongDeadline)), ["arm pongDeadline 1"])
  }

  func testASetUpThatNeverFinishesIsDroppedAfterThePongTimeout() {
    var link = link()
    link.open()
    link.advance(.seconds(5))
    let lines = link.on(.timerFired(.pongDeadline))
    XCTAssertTrue(lines.contains("drop 1001 no pong"), "\(lines)")
    XCTAssertEqual(
      link.core.lastDisconnect?.reason.contains("setting up the backend session"), true,
      link.core.lastDisconnect?.reason ?? "")
  }

  func testAServerThatHangsUpBeforeTheNamespaceConnectIsARefusal() {
    var link = link()
    link.open()
    link.on(.message(text(Self.openPacket)))
    let lines = link.on(.ended(closed(.policyViolation, "no")))
    XCTAssertTrue(lines.contains("arm retry 60"), "\(lines)")
    XCTAssertEqual(
      link.core.lastError?.hasPrefix(
        "the backend refused the session: the Socket.IO server closed the connection before "
          + "the namespace connect (1008 (policy violation) \"no\", closed by the peer)"),
      true, link.core.lastError ?? "")
  }

  func testAConnectErrorIsARefusalRetriedSlowly() {
    var link = link()
    link.open()
    link.on(.message(text(Self.openPacket)))
    XCTAssertEqual(
      link.on(.message(text(#"44{"message":"unauthorized"}"#))), ["close 1000 session refused"])
    let lines = link.on(.ended(closed(.normalClosure, by: .local)))
    XCTAssertTrue(lines.contains("arm retry 60"), "\(lines)")
    XCTAssertEqual(
      link.core.lastError,
      "the backend refused the session: the Socket.IO server refused the connection: unauthorized")
  }

  func testAReconnectResendsTheUnconfirmedOutboxWithNewAckIDs() {
    var link = ready()
    link.on(.outbox([entry(1), entry(2)], buffered: 0))
    link.on(.message(text("432[]")))
    link.on(.ended(closed(.goingAway)))
    XCTAssertNil(link.core.session)
    link.on(.timerFired(.retry))
    link.on(.upgraded(handshake()))
    link.on(.message(text(Self.openPacket)))
    link.on(.message(text(#"40{"sid":"n2"}"#)))
    XCTAssertEqual(link.core.session?.id, "n2")
    XCTAssertEqual(
      link.on(.outbox([entry(1)], buffered: 0)).first?.hasPrefix(#"send 422["send-message""#),
      true, "the join took ack id 1")
  }

  func testInboundAcksGoOutOnceTheirRecordsAreDurable() {
    var link = ready()
    XCTAssertEqual(
      link.on(.message(text(#"429["ask",{"room_id":7}]"#))),
      ["await durability", #"store {"event":"ask","args":[{"room_id":7}]} (ack held)"#])
    link.on(.stored(seq: 3))
    XCTAssertEqual(link.on(.durable(through: 3)), ["send 439[]", "durability not awaited"])
  }

  func testProblemsGoToTheLogAndTheLinkGoesOn() {
    var link = ready()
    XCTAssertEqual(
      link.on(.message(text("432[]"))),
      ["report protocolProblem(\"an ack for an id we did not ask for\")"])
    XCTAssertEqual(link.core.state, .open)
  }
}
