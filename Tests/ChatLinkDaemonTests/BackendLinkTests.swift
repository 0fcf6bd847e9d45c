import ChatLinkDaemon
import EventLoop
import Foundation
@preconcurrency import Glibc
import JSON
import LinkCore
import TestSupport
import Transport
import WebSocket
import XCTest

/// `BackendLink` on a real loop against an in-process backend: the driver performs what the
/// core decides, with real sockets, timers, store and outbox.
final class BackendLinkTests: XCTestCase {
  private var loop: EventLoop!
  private var disk: BackgroundWorker!
  private var backend: TestBackend!
  private var store: MessageStore!
  private var outbox: Outbox!
  private var link: BackendLink?
  private let dir = TemporaryDirectory()

  override func setUpWithError() throws {
    loop = try EventLoop()
    disk = try BackgroundWorker(loop: loop, name: "test-disk")
    backend = try TestBackend(loop: loop)
    store = try MessageStore(
      loop: loop, disk: disk,
      options: MessageStore.Options(directory: dir.path, syncInterval: .milliseconds(20)))
    outbox = try Outbox(loop: loop, disk: disk, directory: dir.path, maxMessages: 100)
  }

  override func tearDownWithError() throws {
    if let link {
      var stopped = false
      link.stop { stopped = true }
      try spin(loop) { stopped }
    }
  }

  private func start(
    rooms: [String] = ["7"], backend dialect: any BackendProtocol = EnvelopeProtocol(sender: "bot"),
    ping: Duration = .seconds(10), pongTimeout: Duration = .seconds(10)
  ) throws -> BackendLink {
    var configuration = Configuration()
    configuration.pingInterval = ping
    configuration.pongTimeout = pongTimeout
    configuration.reconnectMin = .milliseconds(20)
    configuration.reconnectMax = .milliseconds(200)
    configuration.compression = false
    let url = backend.url
    let link = try BackendLink(
      loop: loop, resolver: Resolver(loop: loop), tlsContext: nil,
      settings: BackendSettings(configuration, url: url, token: nil),
      rooms: rooms.compactMap(RoomID.init), store: store, outbox: outbox,
      logger: Logger(label: "test", level: .critical), dialect: dialect)
    self.link = link
    link.start()
    return link
  }

  private func enqueue(_ text: String) throws {
    var done = false
    outbox.enqueue(room: RoomID("7"), text: text) { _ in done = true }
    try spin(loop) { done }
  }

  private func storedLines() -> [String] { dir.lines(MessageStore.fileName) }

  func testTheLinkJoinsItsRoomsThenDeliversTheOutboxAndAPongConfirmsIt() throws {
    try enqueue("first")
    try enqueue("second")
    let link = try start()
    try spin(loop) { self.outbox.pending.isEmpty && link.counters.confirmed == 2 }
    XCTAssertEqual(link.state, .open)
    XCTAssertEqual(backend.received.count, 3)
    XCTAssertEqual(backend.received.first, #"{"event":"join-room","data":{"room_id":7}}"#)
    XCTAssertTrue(backend.received[1].contains(#""message":"first""#))
    XCTAssertTrue(backend.received[2].contains(#""message":"second""#))
    var durable = false
    store.whenDurable { durable = true }
    try spin(loop) { durable }
    let lines = storedLines()
    XCTAssertEqual(lines.count, 2)
    XCTAssertTrue(lines.allSatisfy { $0.contains(#""dir":"out""#) && $0.contains(#""id":""#) })
    XCTAssertEqual(link.counters.sent, 2)
  }

  func testOutRecordsConfirmedTogetherKeepTheRoomsOfTheirOwnBatches() throws {
    // Three batches confirmed by one pong: each record names its batch's room.
    for (room, texts) in [("7", ["a1", "a2"]), ("ops", ["b1"]), ("7", ["c1", "c2"])] {
      var done = false
      outbox.enqueue(room: RoomID(room), texts: PackedStrings(texts)) { _ in done = true }
      try spin(loop) { done }
    }
    let link = try start(rooms: ["7", "ops"])
    try spin(loop) { self.outbox.pending.isEmpty && link.counters.confirmed == 5 }
    var durable = false
    store.whenDurable { durable = true }
    try spin(loop) { durable }
    let rooms = try storedLines().map { line in
      let record = try XCTUnwrap(
        JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any])
      let frame = try XCTUnwrap(record["data"] as? [String: Any])
      let data = try XCTUnwrap(frame["data"] as? [String: Any])
      let text = try XCTUnwrap(data["message"] as? String)
      return "\(text)@\(record["room"] ?? "none")/\(data["room_id"] ?? "none")"
    }
    XCTAssertEqual(rooms, ["a1@7/7", "a2@7/7", "b1@ops/ops", "c1@7/7", "c2@7/7"])
  }

  func testInboundFramesAreStoredInOrderWithTheirRoomsAndReported() throws {
    let link = try start()
    var reported: [UInt64] = []
    var times: [Timestamp] = []
    link.onInbound = { _, seq, time in
      reported.append(seq)
      times.append(time)
    }
    try spin(loop) { link.state == .open }
    let sent = Timestamp.now()
    backend.current?.send(#"{"event":"message","data":{"room_id":7,"message":"hi"}}"#)
    backend.current?.send("not json")
    try spin(loop) { reported.count == 2 }
    // Each record has the time of the read that brought it.
    let seen = Timestamp.now()
    XCTAssertTrue(times.allSatisfy { $0 >= sent && $0 <= seen }, "\(times) not in \(sent)…\(seen)")
    var durable = false
    store.whenDurable { durable = true }
    try spin(loop) { durable }
    let lines = storedLines()
    XCTAssertEqual(reported, [1, 2])
    XCTAssertTrue(lines[0].contains(#""seq":1,"#) && lines[0].contains(#""room":7,"type":"json""#))
    XCTAssertTrue(lines[1].contains(#""room":null,"type":"text","data":"not json""#))
    XCTAssertEqual(link.counters.received, 2)
  }

  func testAServerRestartIsReconnectedToAndTheRoomsAreJoinedAgain() throws {
    let link = try start(rooms: ["7", "ops"])
    try spin(loop) { self.backend.received.count == 2 }
    var states: [String] = []
    link.onStateChange = { state, _ in states.append(state.name) }
    backend.current?.close(.serviceRestart)
    try spin(loop) { self.backend.connections.count == 2 && self.backend.received.count == 4 }
    try spin(loop) { link.state == .open }
    XCTAssertEqual(Array(backend.received.suffix(2)), Array(backend.received.prefix(2)))
    XCTAssertTrue(states.contains("waiting"), "\(states)")
    XCTAssertEqual(link.lastDisconnect?.code, 1012)
    XCTAssertNil(link.lastError, "a restart is not a problem")
    XCTAssertEqual(link.counters.connects, 2)
  }

  func testABackendThatStopsAnsweringIsDroppedAfterThePongTimeout() throws {
    let link = try start(ping: .milliseconds(50), pongTimeout: .milliseconds(100))
    try spin(loop) { link.state == .open }
    backend.current?.playsDead = true
    try spin(loop) { link.lastError != nil }
    XCTAssertEqual(link.lastError, "timed out after 0.1 s while waiting for a pong")
    try spin(loop) { self.backend.connections.count == 2 && link.state == .open }
  }

  func testAnOperatorPingMeasuresTheRoundTripAndFailsWhenNotConnected() throws {
    var first: Result<Duration, PingError>?
    let link = try start()
    link.ping { first = $0 }
    XCTAssertEqual(first.map { (try? $0.get()) == nil }, true, "not yet connected")
    try spin(loop) { link.state == .open }
    var second: Result<Duration, PingError>?
    link.ping { second = $0 }
    try spin(loop) { second != nil }
    XCTAssertNoThrow(try second?.get())
  }

  func testADialectsAcknowledgementLeavesOnlyOnceItsRecordIsDurable() throws {
    var durableWhenAcknowledged: [UInt64] = []
    backend.onText = { text in
      if text.hasPrefix("GOT") { durableWhenAcknowledged.append(self.store.durableSeq) }
    }
    let link = try start(backend: AcknowledgingDialect())
    try spin(loop) { link.state == .open }
    // Hold the disk, so that the record is stored but not yet durable for a while.
    disk.submit({ usleep(100_000) }, completion: { _ in })
    backend.current?.send("MSG 1")
    try spin(loop) { !durableWhenAcknowledged.isEmpty }
    XCTAssertEqual(durableWhenAcknowledged, [1])
    XCTAssertEqual(backend.received, ["GOT 1"])
  }

  func testADuplicateOfARecordDurableBeforeTheStartIsAcknowledgedWithoutANewRecord() throws {
    // Stored and durable before the link starts: no fsync, and so no durable report, comes
    // for a duplicate of it.
    _ = store.appendInbound(
      room: nil, id: MessageIDText(.payload, 4..<5), meta: nil, payload: .text(Array("MSG 1".utf8)),
      scan: .notJSON, time: .now())
    var durable = false
    store.whenDurable { durable = true }
    try spin(loop) { durable }
    let link = try start(backend: AcknowledgingDialect(ids: true))
    try spin(loop) { link.state == .open }
    backend.current?.send("MSG 1")
    try spin(loop) { backend.received == ["GOT 1"] }
    backend.current?.send("MSG 1")
    try spin(loop) { backend.received == ["GOT 1", "GOT 1"] }
    XCTAssertEqual(store.duplicatesDropped, 2)
    XCTAssertEqual(storedLines().count, 1)
  }
}

/// A dialect whose inbound frames are acknowledged once stored durably (with `ids`, a frame's
/// text after "MSG " is its id).
private struct AcknowledgingDialect: BackendProtocol {
  var ids = false
  var hasRooms: Bool { false }
  mutating func join(_ room: RoomID) -> Message? { nil }
  mutating func leave(_ room: RoomID) -> Message? { nil }
  mutating func encode(_ entry: OutboxEntry) -> Message { .text(Array(entry.text.utf8)) }
  mutating func read(_ message: Message) -> ProtocolReading {
    let text = message.text ?? ""
    var record = InboundMessage(payload: message, scan: .notJSON)
    if ids { record.id = MessageIDText(.payload, 4..<text.utf8.count) }
    return ProtocolReading(
      record: record,
      acknowledgement: .text(Array(text.replacingOccurrences(of: "MSG", with: "GOT").utf8)))
  }
}
