import LinkCore
import WebSocket
import XCTest

/// The link core driving the STOMP dialect: set-up, heart-beats both ways, receipts that
/// confirm sends, acknowledgements after durability, and refusals.
final class STOMPLinkTests: XCTestCase {
  private func link(rooms: [String] = ["/topic/chat.7"]) -> Harness {
    var settings = STOMPProtocol.Settings()
    settings.login = "u"
    settings.passcode = "tok"
    return Harness(rooms: rooms, backend: STOMPProtocol(settings))
  }

  private func server(_ command: STOMPCommand, _ headers: [(String, String)], body: String = "")
    -> LinkEvent
  {
    .message(
      .text(
        STOMPEncoder.encode(
          STOMPFrame(command, headers.map { STOMPHeader($0.0, $0.1) }, body: Array(body.utf8)))))
  }

  private func line(_ command: STOMPCommand, _ headers: [(String, String)], body: String = "")
    -> String
  {
    let frame = STOMPFrame(command, headers.map { STOMPHeader($0.0, $0.1) }, body: Array(body.utf8))
    return "send " + String(decoding: STOMPEncoder.encode(frame), as: UTF8.self)
  }

  private func connected(_ heartBeat: String = "10000,10000") -> LinkEvent {
    server(.connected, [("version", "1.2"), ("session", "s-1"), ("heart-beat", heartBeat)])
  }

  /// A link whose CONNECTED arrived, its rooms subscribed.
  private func ready(heartBeat: String = "10000,10000") -> Harness {
    var link = link()
    link.open()
    link.on(connected(heartBeat))
    return link
  }

  func testTheSessionOpensWithConnectThenSubscribesAndSendsTheOutbox() {
    var link = link()
    link.on(.start)
    XCTAssertEqual(
      Array(link.on(.upgraded(handshake(subprotocol: "v12.stomp"))).dropFirst()),
      [
        line(
          .connect,
          [
            ("accept-version", "1.2,1.1"), ("host", "/"), ("login", "u"), ("passcode", "tok"),
            ("heart-beat", "10000,10000"),
          ]),
        "arm pongDeadline 5", "state upgrading (setting up the backend session)",
      ])
    XCTAssertEqual(
      link.on(connected()),
      [
        "arm pongDeadline 5", "arm pongDeadline 30", "state open (connected)",
        line(
          .subscribe,
          [
            ("id", "sub-1"), ("destination", "/topic/chat.7"), ("ack", "client-individual"),
            ("receipt", "sub-1"),
          ]),
        "request outbox", "arm keepalive 10",
      ])
    XCTAssertEqual(link.core.session, ProtocolSession(id: "s-1"))
    XCTAssertEqual(
      link.on(.outbox([entry(1, "a", room: "/queue/q")], buffered: 0)),
      [
        line(
          .send,
          [
            ("destination", "/queue/q"), ("content-type", "text/plain"), ("content-length", "1"),
            ("receipt", "send-1"), ("persistent", "true"), ("client-id", "id-1"),
          ], body: "a"),
        "sent id-1",
      ], "no confirmation ping: the RECEIPT confirms")
    XCTAssertEqual(
      link.on(server(.receipt, [("receipt-id", "send-1")])),
      ["confirmed id-1", "arm pongDeadline 30"])
  }

  func testInboundMessagesAreStoredWithTheirAckForWhenTheyAreDurable() {
    var link = ready()
    let lines = link.on(
      server(
        .message, [("destination", "/topic/chat.7"), ("ack", "a-1"), ("subscription", "sub-1")],
        body: "hi"))
    XCTAssertEqual(lines, ["await durability", "store hi (ack held)", "arm pongDeadline 30"])
    link.on(.stored(seq: 12))
    XCTAssertEqual(
      link.on(.durable(through: 12)),
      [
        "send "
          + String(
            decoding: STOMPEncoder.encode(STOMPFrame(.ack, [STOMPHeader("id", "a-1")])),
            as: UTF8.self),
        "durability not awaited",
      ])
    XCTAssertEqual(link.core.counters.received, 1)
  }

  func testOurHeartBeatsGoOutUnansweredWhileTheServersProveItAlive() {
    var link = ready()
    XCTAssertEqual(
      link.on(.timerFired(.keepalive)), ["arm keepalive 10", "send \n"],
      "an EOL, no WebSocket ping, no deadline of its own")
    link.advance(.seconds(10))
    XCTAssertEqual(
      link.on(.timerFired(.keepalive)), ["arm keepalive 10", "send \n"],
      "the next one goes out though nothing answered the first")
    link.advance(.seconds(10))
    XCTAssertEqual(link.on(.message(.text([0x0A]))), ["arm pongDeadline 30"])
  }

  func testAServerSilentForThreeOfItsIntervalsIsDead() {
    var link = ready(heartBeat: "5000,0")
    XCTAssertEqual(link.on(.timerFired(.keepalive)), ["arm keepalive 10"], "it wants no beats")
    link.advance(.seconds(20))
    link.on(.message(.text([0x0A])))
    link.advance(.seconds(29))
    XCTAssertEqual(link.on(.timerFired(.pongDeadline)), ["arm pongDeadline 1"])
    link.advance(.seconds(1))
    let lines = link.on(.timerFired(.pongDeadline))
    XCTAssertEqual(lines.first, "report peerSilent(timeout: 5.0 seconds)")
    XCTAssertTrue(lines.contains("drop 1001 no pong"), "\(lines)")
  }

  func testWithoutTheServersHeartBeatsWebSocketPingsProbe() {
    var link = ready(heartBeat: "0,0")
    XCTAssertEqual(
      link.on(.timerFired(.keepalive)), ["arm keepalive 10", "ping 1", "arm pongDeadline 5"])
  }

  func testARefusedConnectIsRetriedSlowlyWithTheServersText() {
    var link = link()
    link.open()
    XCTAssertEqual(
      link.on(server(.error, [("message", "Bad CONNECT")], body: "Access refused for user 'u'")),
      ["close 1000 session refused"])
    let lines = link.on(.ended(closed(.normalClosure, by: .local)))
    XCTAssertTrue(lines.contains("arm retry 60"), "\(lines)")
    XCTAssertEqual(
      link.core.lastError,
      "the backend refused the session: the STOMP server refused the connection: "
        + "Bad CONNECT: Access refused for user 'u'; check [STOMP] Username= and TokenFile=")
  }

  func testAServerThatHangsUpBeforeConnectedIsARefusal() {
    var link = link()
    link.open()
    let lines = link.on(.ended(closed(.normalClosure)))
    XCTAssertTrue(lines.contains("arm retry 60"), "\(lines)")
    XCTAssertEqual(
      link.core.lastError,
      "the backend refused the session: the STOMP server closed the connection before CONNECTED "
        + "(1000 (normal closure), closed by the peer); "
        + "check [STOMP] Username=, VirtualHost= and TokenFile=")
  }

  func testAnErrorAfterTheSetUpEndsTheConnectionWithItsTextAndBacksOff() {
    var link = ready()
    link.on(server(.receipt, [("receipt-id", "sub-1")]))
    XCTAssertEqual(
      link.on(server(.error, [("message", "access_refused")], body: "to /topic/x")),
      ["arm pongDeadline 30", "close 1002 protocol error"])
    let lines = link.on(.ended(closed(.normalClosure, by: .peer)))
    XCTAssertFalse(lines.contains("arm retry 60"), "backoff, not the longest wait: \(lines)")
    XCTAssertEqual(
      link.core.lastError,
      "the backend broke its protocol: the STOMP server sent an ERROR: access_refused: to /topic/x")
  }

  func testAnErrorForOneSendFailsItAndTheRestGoOn() {
    var link = ready()
    link.on(.outbox([entry(1), entry(2)], buffered: 0))
    XCTAssertEqual(
      link.on(server(.error, [("message", "Bad destination"), ("receipt-id", "send-1")])),
      ["failed id-1: Bad destination", "arm pongDeadline 30"])
    XCTAssertEqual(
      link.on(server(.receipt, [("receipt-id", "send-2")])),
      ["confirmed id-2", "arm pongDeadline 30"])
  }

  func testAReconnectResendsTheUnconfirmedOutboxWithTheSameReceipts() {
    var link = ready()
    link.on(.outbox([entry(1), entry(2)], buffered: 0))
    link.on(server(.receipt, [("receipt-id", "send-1")]))
    link.on(.ended(closed(.goingAway)))
    link.on(.timerFired(.retry))
    link.on(.upgraded(handshake()))
    link.on(connected())
    let lines = link.on(.outbox([entry(2)], buffered: 0))
    XCTAssertEqual(lines.count, 2)
    XCTAssertTrue(lines[0].contains("receipt:send-2"), lines[0])
    XCTAssertEqual(
      link.on(server(.receipt, [("receipt-id", "send-2")])),
      ["confirmed id-2", "arm pongDeadline 30"])
  }
}
