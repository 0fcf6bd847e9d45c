import EventLoop
import JSON
import TestSupport
import Transport
import WebSocket
import WebSocketClient
import XCTest

/// The client's life, sending, reading and deadlines against `TestBackend` on the test's own
/// loop: no other process involved.
final class WebSocketClientLoopbackTests: XCTestCase {
  private var loop: EventLoop!
  private var backend: TestBackend!

  override func setUpWithError() throws {
    loop = try EventLoop()
    backend = try TestBackend(loop: loop)
  }

  override func tearDown() {
    backend = nil
    loop = nil
  }

  private func client(
    connectTimeout: Microseconds = 5_000_000, closeTimeout: Microseconds = 3_000_000
  )
    throws -> (WebSocketClient, ClientRecorder)
  {
    let client = WebSocketClient(
      loop: loop, resolver: try Resolver(loop: loop), tlsContext: nil,
      configuration: WebSocketClient.Configuration(
        url: backend.url, connectTimeout: connectTimeout, closeTimeout: closeTimeout))
    let recorder = ClientRecorder()
    client.delegate = recorder
    return (client, recorder)
  }

  private func openClient(closeTimeout: Microseconds = 3_000_000) throws
    -> (WebSocketClient, ClientRecorder)
  {
    let (client, recorder) = try client(closeTimeout: closeTimeout)
    client.connect()
    try spin(loop) { recorder.opened != nil || recorder.disconnect != nil }
    XCTAssertNotNil(recorder.opened, "\(String(describing: recorder.disconnect))")
    return (client, recorder)
  }

  func testAConnectionGoesFromIdleThroughUpgradingToOpenAndACloseToClosed() throws {
    let (client, recorder) = try client()
    XCTAssertEqual(client.phase, .idle)
    client.connect()
    XCTAssertEqual(client.phase, .connecting)
    try spin(loop) { recorder.opened != nil }
    XCTAssertEqual(client.phase, .open)
    XCTAssertEqual(recorder.progress, [.upgrading])
    XCTAssertTrue(client.peerDescription?.hasPrefix("127.0.0.1:") ?? false)
    client.close(code: .goingAway, reason: "bye")
    XCTAssertEqual(client.phase, .closing)
    try spin(loop) { recorder.disconnect != nil }
    XCTAssertEqual(client.phase, .closed)
    guard case .closed(let info) = recorder.disconnect else {
      return XCTFail("\(String(describing: recorder.disconnect))")
    }
    XCTAssertEqual(info.code, .goingAway)
    XCTAssertEqual(info.initiator, .local)
    XCTAssertTrue(info.clean)
    try spin(loop) { backend.current?.isClosed ?? false }
  }

  func testEveryWayOfSendingArrivesInOrderAndIsCountedWithTheReplies() throws {
    let (client, recorder) = try client()
    let meter = TrafficMeter()
    client.traffic = meter
    client.connect()
    try spin(loop) { recorder.opened != nil }
    try client.send(text: "one")
    try client.send(contentsOf: [.text(Array("two".utf8)), .text(Array("three".utf8))])
    try client.send(texts: PackedStrings(["four", "five"]))
    try Array("six".utf8).withUnsafeBytes { try client.send(text: $0) }
    try client.send(.text(Array("seven".utf8)))
    XCTAssertGreaterThan(client.bufferedAmount, 0, "sends of one loop turn wait for one write")
    try spin(loop) { backend.received.count == 7 }
    XCTAssertEqual(backend.received, ["one", "two", "three", "four", "five", "six", "seven"])
    XCTAssertEqual(client.bufferedAmount, 0)
    backend.current?.sendTogether(["a", "b", "c"])
    try spin(loop) { recorder.messages.count == 3 }
    XCTAssertEqual(recorder.messages.map(\.text), ["a", "b", "c"])
    XCTAssertEqual(meter.messagesSent, 7)
    XCTAssertEqual(meter.messagesReceived, 3)
    // The upgrade's request and answer are counted too.
    XCTAssertGreaterThan(meter.bytesSent, 200)
    XCTAssertGreaterThan(meter.bytesReceived, 100)
  }

  func testSendingBeforeTheUpgradeIsRefusedAsNotOpen() throws {
    let (client, _) = try client()
    client.connect()
    XCTAssertThrowsError(try client.send(text: "early")) { error in
      XCTAssertEqual(error as? ClientConnection.SendError, .notOpen(.handshaking))
    }
    XCTAssertThrowsError(try client.ping()) { error in
      XCTAssertEqual(error as? ClientConnection.SendError, .notOpen(.handshaking))
    }
  }

  func testPingsAreAnsweredBothWaysWithTheirPayloads() throws {
    let (client, recorder) = try openClient()
    try client.ping([1, 2, 3])
    try spin(loop) { recorder.pongs.count == 1 }
    XCTAssertEqual(recorder.pongs, [[1, 2, 3]])
    backend.current?.ping([9, 8])
    try spin(loop) { backend.current?.pongs.count == 1 }
    XCTAssertEqual(recorder.pings, [[9, 8]])
    XCTAssertEqual(backend.current?.pongs, [[9, 8]])
  }

  func testMessagesOfOneReadShareTheTimeTheyWereRead() throws {
    let (client, recorder) = try openClient()
    let before = Timestamp.now()
    backend.current?.sendTogether(["a", "b", "c"])
    try spin(loop) { recorder.messages.count == 3 }
    let time = try XCTUnwrap(recorder.receiveTimes.first)
    XCTAssertEqual(recorder.receiveTimes, [time, time, time])
    XCTAssertGreaterThanOrEqual(time, before)
    XCTAssertLessThanOrEqual(time, Timestamp.now())
    XCTAssertEqual(client.receivedAt, time)
  }

  func testPausedReadingHoldsMessagesBackUntilItResumes() throws {
    let (client, recorder) = try openClient()
    client.isReadingPaused = true
    XCTAssertTrue(client.isReadingPaused)
    backend.current?.send("held")
    try spin(loop, for: 100_000)
    XCTAssertTrue(recorder.messages.isEmpty)
    client.isReadingPaused = false
    try spin(loop) { recorder.messages.count == 1 }
    XCTAssertEqual(recorder.messages.first?.text, "held")
  }

  func testAnUpgradeThatNeverComesEndsAtTheConnectTimeout() throws {
    backend.answersUpgrades = false
    let (client, recorder) = try client(connectTimeout: 200_000)
    client.connect()
    try spin(loop) { recorder.disconnect != nil }
    guard case .transportFailed(.timedOut(let phase, let seconds)) = recorder.disconnect else {
      return XCTFail("\(String(describing: recorder.disconnect))")
    }
    XCTAssertEqual(phase, "upgrading")
    XCTAssertEqual(seconds, 0.2)
    XCTAssertEqual(recorder.progress, [.upgrading])
    XCTAssertNil(recorder.opened)
  }

  func testACloseThePeerNeverAnswersEndsAtTheCloseTimeout() throws {
    let (client, recorder) = try openClient(closeTimeout: 200_000)
    backend.current?.playsDead = true
    let start = loop.now
    client.close()
    try spin(loop) { recorder.disconnect != nil }
    XCTAssertGreaterThanOrEqual(loop.now - start, 200_000)
    XCTAssertEqual(client.phase, .closed)
  }

  func testClosingBeforeTheConnectionOpensCancelsIt() throws {
    let (client, recorder) = try client()
    client.connect()
    client.close()
    guard case .cancelled = recorder.disconnect else {
      return XCTFail("\(String(describing: recorder.disconnect))")
    }
    XCTAssertEqual(client.phase, .closed)
  }

  func testAbortingDropsTheConnectionAtOnceWithTheGivenError() throws {
    let (client, recorder) = try openClient()
    client.abort(.closedByPeer)
    guard case .transportFailed(.closedByPeer) = recorder.disconnect else {
      return XCTFail("\(String(describing: recorder.disconnect))")
    }
    XCTAssertEqual(client.phase, .closed)
    try spin(loop) { backend.current?.isClosed ?? false }
  }
}
