import ChatLinkAPI
import ChatLinkClient
import JSON
import TestSupport
import Varlink
import XCTest

/// Each method of the typed client against a stand-in daemon: what it calls, and what it makes
/// of the answer.
final class ChatLinkClientTests: XCTestCase {
  private let method = "io.chatlink.Daemon."

  private let status = DaemonStatus(
    state: .open, url: "ws://127.0.0.1:8765/", rooms: ["7", "ops"], received: 12, sent: 3,
    confirmed: 3, connects: 1, outbox: 0, lastSeq: 42, durableSeq: 42,
    storePath: "/var/lib/chatlink/messages.jsonl", version: "0.1.0")

  private func record(_ seq: Int) -> StoredRecord {
    StoredRecord(
      seq: seq, time: "2026-12-02T12:00:00.000000Z", direction: .inbound, room: .string("7"),
      type: .text, data: .string("message \(seq)"))
  }

  func testEachMethodCallsItsQualifiedNameAndReadsItsReply() throws {
    let daemon = try FakeDaemon([
      "GetInfo": ServiceInfo(
        vendor: "ChatLink", product: "chatlinkd", version: "0.1.0",
        url: "https://chatlink.example", interfaces: ["io.chatlink.Daemon"]
      ).json,
      "ListRooms": ListRoomsReply(rooms: ["7", "ops"]).json, "Ping": PingReply(rttMs: 1.25).json,
      "GetMetrics": GetMetricsReply(text: "# EOF\n").json, "Join": .object([]),
      "Leave": .object([]), "Reconnect": .object([]),
    ])
    let client = try ChatLinkClient(socketPath: daemon.path)
    XCTAssertEqual(try client.info().product, "chatlinkd")
    XCTAssertEqual(try client.rooms(), ["7", "ops"])
    XCTAssertEqual(try client.ping(), 1.25)
    XCTAssertEqual(try client.metrics(format: "prometheus"), "# EOF\n")
    try client.join("ops")
    try client.leave("7")
    try client.reconnect()
    XCTAssertEqual(
      daemon.calls.map(\.method),
      ["org.varlink.service.GetInfo"]
        + ["ListRooms", "Ping", "GetMetrics", "Join", "Leave", "Reconnect"].map { method + $0 })
    XCTAssertEqual(daemon.calls[3].parameters, json(#"{"format":"prometheus"}"#))
    XCTAssertEqual(daemon.calls[4].parameters, json(#"{"room":"ops"}"#))
    XCTAssertEqual(daemon.calls[5].parameters, json(#"{"room":"7"}"#))
  }

  func testStatusKeepsTheObjectAsItCameBesideTheTypedValue() throws {
    guard case .object(var members) = status.json else { return XCTFail("not an object") }
    members.append(("uptime_s", .int(5)))
    let sent = JSONValue.object(members)
    let daemon = try FakeDaemon(["GetStatus": .object(["status": sent])])
    let received = try ChatLinkClient(socketPath: daemon.path).status()
    XCTAssertEqual(received.value, status)
    XCTAssertEqual(received.state, .open)
    XCTAssertEqual(received.json, sent)
  }

  func testSendReturnsTheQueuedReceiptAndWithWaitReadsOnUntilTheBackendConfirms() throws {
    let daemon = try FakeDaemon { call in
      let receipt = { (state: SendState) in SendReceipt(id: "a1", state: state, count: 7).json }
      guard call.more else { return [VarlinkReply(parameters: receipt(.queued))] }
      return [
        VarlinkReply(parameters: receipt(.queued), continues: true),
        VarlinkReply(parameters: receipt(.sent), continues: true),
        VarlinkReply(parameters: receipt(.confirmed), continues: true),
      ]
    }
    let client = try ChatLinkClient(socketPath: daemon.path)
    let queued = try client.send(SendParameters(room: "7", text: "hi"))
    XCTAssertEqual(queued.value, SendReceipt(id: "a1", state: .queued, count: 7))
    XCTAssertEqual(try client.send(SendParameters(text: "hi"), wait: true).state, .confirmed)
    XCTAssertEqual(daemon.calls.map(\.more), [false, true])
    XCTAssertEqual(daemon.calls[0].parameters, json(#"{"room":"7","text":"hi"}"#))
  }

  func testAWaitingSendEndsWithTheLastReplyEvenUnconfirmed() throws {
    let daemon = try FakeDaemon { _ in
      [
        VarlinkReply(
          parameters: SendReceipt(id: "a1", state: .queued, count: 1).json, continues: true),
        VarlinkReply(parameters: SendReceipt(id: "a1", state: .sent, count: 1).json),
      ]
    }
    let receipt = try ChatLinkClient(socketPath: daemon.path).send(
      SendParameters(text: "hi"), wait: true)
    XCTAssertEqual(receipt.state, .sent)
  }

  func testHistoryReadsEveryRecordWithItsObjectAndNamesOneThatDoesNotRead() throws {
    let records = [record(41), record(42)]
    let good = try FakeDaemon(["History": HistoryReply(records: records).json])
    let read = try ChatLinkClient(socketPath: good.path).history(
      HistoryParameters(room: "7", sinceSeq: 40, limit: 2))
    XCTAssertEqual(read.map(\.value), records)
    XCTAssertEqual(read.map(\.json), records.map(\.json))
    XCTAssertEqual(good.calls.first?.parameters, json(#"{"room":"7","since_seq":40,"limit":2}"#))

    let bad = try FakeDaemon([
      "History": .object(["records": .array([record(1).json, json(#"{"seq":"two"}"#)])])
    ])
    XCTAssertThrowsError(try ChatLinkClient(socketPath: bad.path).history()) { error in
      guard case .protocolError(let why) = error as? ClientError else {
        return XCTFail("\(error)")
      }
      XCTAssertTrue(why.hasPrefix("records[1].seq"), why)
    }
    let notAnArray = try FakeDaemon(["History": json(#"{"records":{}}"#)])
    XCTAssertThrowsError(try ChatLinkClient(socketPath: notAnArray.path).history()) { error in
      XCTAssertEqual(error as? ClientError, .protocolError("records must be an array"))
    }
  }

  func testSubscribeStreamsEventsUntilTheHandlerHasEnoughOrTheStreamEnds() throws {
    let events: [DaemonEvent] = [
      .status(time: "2026-12-02T12:00:00Z", text: "Connected"),
      .sent(time: "2026-12-02T12:00:01Z", id: "a1", room: "7"),
      .confirmed(time: "2026-12-02T12:00:02Z", id: "a1", room: "7"),
    ]
    let daemon = try FakeDaemon { _ in
      events.enumerated().map { index, event in
        VarlinkReply(
          parameters: SubscribeReply(event: event).json, continues: index < events.count - 1)
      }
    }
    var seen: [DaemonEvent] = []
    try ChatLinkClient(socketPath: daemon.path).subscribe(SubscribeParameters(room: "7")) {
      seen.append($0.value)
      return seen.count < 2
    }
    XCTAssertEqual(seen, Array(events.prefix(2)))
    seen = []
    try ChatLinkClient(socketPath: daemon.path).subscribe { event in
      seen.append(event.value)
      return true
    }
    XCTAssertEqual(seen, events)
    XCTAssertEqual(daemon.calls.map(\.more), [true, true])
    XCTAssertEqual(daemon.calls.first?.parameters, json(#"{"room":"7"}"#))
  }

  func testADaemonsErrorIsThrownAndReadsAsItsTypedError() throws {
    let daemon = try FakeDaemon { _ in
      [VarlinkReply(DaemonError.outboxFull(limit: 10_000).varlinkError)]
    }
    XCTAssertThrowsError(
      try ChatLinkClient(socketPath: daemon.path).send(SendParameters(text: "x"))
    ) { error in
      XCTAssertEqual((error as? ClientError)?.daemonError, .outboxFull(limit: 10_000))
    }
    XCTAssertNil(ClientError.connectionLost("eof").daemonError)
  }

  func testAnAnswerOfTheWrongShapeIsAProtocolErrorNamingTheField() throws {
    let daemon = try FakeDaemon(["GetStatus": json(#"{"status":{"state":5}}"#)])
    XCTAssertThrowsError(try ChatLinkClient(socketPath: daemon.path).status()) { error in
      XCTAssertEqual(
        error as? ClientError, .protocolError("status.state must be a string"))
    }
  }

  func testAValueMadeHereCarriesItsOwnEncoding() {
    let made = Received(status)
    XCTAssertEqual(made.json, status.json)
    XCTAssertEqual(made.outbox, 0)
  }
}
