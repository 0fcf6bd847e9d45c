import ChatLinkCommands
import Foundation
import JSON
import TestSupport
import Varlink
import XCTest

/// Every verb against a stand-in daemon: what it asks, what it prints, how it exits.
final class CommandRunTests: XCTestCase {
  private let method = "io.chatlink.Daemon."

  func testStatusPrintsTheBlockAndExitsZero() throws {
    let daemon = try FakeDaemon(["GetStatus": .object(["status": Sample.openStatus])])
    let run = chatlinkctl(["--socket", daemon.path, "status"])
    XCTAssertEqual(run.status, 0, run.errors)
    XCTAssertEqual(run.output, Format.status(try typed(Sample.openStatus), colour: false) + "\n")
    XCTAssertEqual(daemon.calls.map(\.method), [method + "GetStatus"])
  }

  func testStatusAsJSONIsOneLine() throws {
    let daemon = try FakeDaemon(["GetStatus": .object(["status": Sample.openStatus])])
    let run = chatlinkctl(["status", "--json"], environment: ["CHATLINK_SOCKET": daemon.path])
    XCTAssertEqual(run.output, Sample.openStatus.description + "\n")
  }

  func testJSONOutputPassesOnWhatTheDaemonSentEvenFieldsThisVersionDoesNotKnow() throws {
    guard case .object(var members) = Sample.openStatus else { return XCTFail("not an object") }
    members.append(("uptime_s", .int(5)))
    let status = JSONValue.object(members)
    let rotated = json(#"{"event":"rotated","time":"2026-12-02T12:00:13Z","file":"x.1"}"#)
    let daemon = try FakeDaemon { call in
      call.method.hasSuffix("GetStatus")
        ? [VarlinkReply(parameters: .object(["status": status]))]
        : [VarlinkReply(parameters: .object(["event": rotated]))]
    }
    let run = chatlinkctl(["--socket", daemon.path, "--json", "status"])
    XCTAssertEqual(run.output, status.description + "\n")
    let follow = chatlinkctl(["--socket", daemon.path, "--json", "follow"])
    XCTAssertEqual(follow.output, rotated.description + "\n")
  }

  func testAReplyOfTheWrongShapeExitsOneNamingTheField() throws {
    let daemon = try FakeDaemon(["GetStatus": json(#"{"status":{"state":5}}"#)])
    let run = chatlinkctl(["--socket", daemon.path, "status"])
    XCTAssertEqual(run.status, 1)
    XCTAssertEqual(
      run.errors, "chatlinkctl: unexpected answer from chatlinkd: status.state must be a string\n")
  }

  func testColourNeedsATerminalAndNoNO_COLOR() throws {
    let daemon = try FakeDaemon(["GetStatus": .object(["status": Sample.openStatus])])
    XCTAssertTrue(
      chatlinkctl(["--socket", daemon.path, "status"], terminal: true).output.contains("\u{1B}["))
    XCTAssertFalse(
      chatlinkctl(["--socket", daemon.path, "status"], terminal: false).output.contains("\u{1B}["))
    XCTAssertFalse(
      chatlinkctl(
        ["--socket", daemon.path, "status"], environment: ["NO_COLOR": "1"], terminal: true
      )
      .output.contains("\u{1B}["))
  }

  func testStatusWatchPrintsOnlyWhenTheStatusChanges() throws {
    let answers = Answers([
      Sample.openStatus, Sample.openStatus, Sample.waitingStatus, Sample.waitingStatus,
      Sample.openStatus,
    ])
    let daemon = try FakeDaemon { _ in
      [VarlinkReply(parameters: .object(["status": answers.next()]))]
    }
    let run = chatlinkctl(["--socket", daemon.path, "status", "--watch"], polls: 5)
    XCTAssertEqual(run.status, 0, run.errors)
    XCTAssertEqual(
      run.lines,
      [
        "12:00:00 open       Connected to ws://127.0.0.1:8765/ (2 rooms) · 12 in, 3 out · outbox 0",
        "12:00:02 waiting    Reconnecting to ws://127.0.0.1:8765/ in 2.5 s · 12 in, 3 out · outbox 1 · last error: connection refused",
        "12:00:04 open       Connected to ws://127.0.0.1:8765/ (2 rooms) · 12 in, 3 out · outbox 0",
      ])
    XCTAssertEqual(daemon.calls.count, 5)
  }

  func testStatusWatchAsJSONPrintsEachChangedStatusObject() throws {
    let answers = Answers([Sample.openStatus, Sample.openStatus, Sample.waitingStatus])
    let daemon = try FakeDaemon { _ in
      [VarlinkReply(parameters: .object(["status": answers.next()]))]
    }
    let run = chatlinkctl(["--json", "--socket", daemon.path, "status", "--watch"], polls: 3)
    XCTAssertEqual(run.lines, [Sample.openStatus.description, Sample.waitingStatus.description])
  }

  func testStatusWatchSaysWhenTheDaemonGoesAwayAndCarriesOn() throws {
    let answers = Answers([Sample.openStatus])
    let daemon = try FakeDaemon { _ in
      answers.isEmpty ? [] : [VarlinkReply(parameters: .object(["status": answers.next()]))]
    }
    let run = chatlinkctl(["--socket", daemon.path, "status", "--watch"], polls: 3)
    XCTAssertEqual(run.status, 0, run.errors)
    XCTAssertEqual(run.lines.count, 2, run.output)
    XCTAssertTrue(
      run.lines[1].hasPrefix("12:00:01 down       connection to chatlinkd lost"), run.output)
  }

  func testSendPrintsTheReceipt() throws {
    let daemon = try FakeDaemon(["Send": Sample.receipt])
    let run = chatlinkctl([
      "--socket", daemon.path, "send", "--room", "7", "--id", "5f1c9a2e0b7d4e31", "hi",
    ])
    XCTAssertEqual(run.status, 0, run.errors)
    XCTAssertEqual(run.output, "queued 5f1c9a2e0b7d4e31 (count 12)\n")
    XCTAssertEqual(
      daemon.calls.first?.parameters,
      json(#"{"room":"7","text":"hi","id":"5f1c9a2e0b7d4e31"}"#))
  }

  func testSendWaitReturnsTheConfirmation() throws {
    let daemon = try FakeDaemon { call in
      XCTAssertTrue(call.more)
      return ["queued", "sent", "confirmed"].enumerated().map { index, state in
        VarlinkReply(
          parameters: .object([
            "id": .string("a1"), "state": .string(state), "count": .int(Int64(1 - index / 2)),
          ]), continues: state != "confirmed")
      }
    }
    let run = chatlinkctl(["--socket", daemon.path, "send", "--wait", "--json", "hi"])
    XCTAssertEqual(run.status, 0, run.errors)
    XCTAssertEqual(run.output, #"{"id":"a1","state":"confirmed","count":0}"# + "\n")
  }

  /// A stand-in for SendBatch: ids "id-<text>", counts from `first` on.
  private static func batchReceipt(_ call: VarlinkCall, first: Int64) -> VarlinkReply {
    let texts = call.parameters["texts"]?.arrayValue ?? []
    return VarlinkReply(
      parameters: .object([
        "ids": .array(texts.map { .string("id-" + ($0.stringValue ?? "")) }),
        "count": .int(first), "state": .string("queued"),
      ]))
  }

  func testSendDashSendsEveryInputLineOverOneConnectionInBatches() throws {
    let counter = Counter()
    let daemon = try FakeDaemon { call in
      let n = Int64(call.parameters["texts"]?.arrayValue?.count ?? 0)
      return [Self.batchReceipt(call, first: counter.take(n))]
    }
    let input = (1...2500).map { "line \($0)" } + ["", "\r"]
    let run = chatlinkctl(["--socket", daemon.path, "send", "--room", "ops", "-"], input: input)
    XCTAssertEqual(run.status, 0, run.errors)
    XCTAssertEqual(run.output, "queued 2500 messages; the last is id-line 2500 (count 2500)\n")
    XCTAssertEqual(daemon.calls.map(\.method), Array(repeating: method + "SendBatch", count: 3))
    let batches = daemon.calls.map { $0.parameters["texts"]?.arrayValue?.count ?? 0 }
    XCTAssertEqual(batches, [1024, 1024, 452])
    XCTAssertEqual(
      daemon.calls.map { $0.parameters["room"] }, Array(repeating: .string("ops"), count: 3))
    // Each waits for room in a full outbox rather than failing.
    XCTAssertEqual(
      daemon.calls.map { $0.parameters["wait_for_room"] }, Array(repeating: .bool(true), count: 3))
    let sent = daemon.calls.flatMap { $0.parameters["texts"]?.arrayValue ?? [] }
    XCTAssertEqual(sent, (1...2500).map { .string("line \($0)") })
  }

  func testSendDashKeepsEachRequestUnderTheDaemonsLimitByStartingANewBatchBeforeItWouldPassIt()
    throws
  {
    let daemon = try FakeDaemon { call in [Self.batchReceipt(call, first: 1)] }
    let long = String(repeating: "x", count: 40_000)
    let input = ["a", long, "b", long, long, "c"]
    let run = chatlinkctl(["--socket", daemon.path, "--json", "send", "-"], input: input)
    XCTAssertEqual(run.status, 0, run.errors)
    XCTAssertEqual(run.lines.count, 6)
    let batches = daemon.calls.map { $0.parameters["texts"]?.arrayValue?.count ?? 0 }
    XCTAssertEqual(batches, [3, 1, 2])
    for call in daemon.calls {
      XCTAssertLessThan(call.encoded.count, 49 * 1024, "the daemon refuses requests over 64 KiB")
    }
    XCTAssertEqual(
      daemon.calls.flatMap { $0.parameters["texts"]?.arrayValue ?? [] },
      input.map { .string($0) })
    XCTAssertNil(daemon.calls.first?.parameters["room"] ?? nil)
  }

  /// A line longer than any request the daemon reads (which would make it close the
  /// connection, the receipts of the lines before going with it) is not sent: the lines before
  /// it are queued and summed up, the error names it, and nothing after it is sent.
  func testSendDashStopsAtALineTooLongForTheDaemonAfterQueueingEveryLineBeforeIt() throws {
    let counter = Counter()
    let daemon = try FakeDaemon { call in
      let n = Int64(call.parameters["texts"]?.arrayValue?.count ?? 0)
      return [Self.batchReceipt(call, first: counter.take(n))]
    }
    let input = ["a", "b", String(repeating: "x", count: 70_000), "c"]
    let run = chatlinkctl(["--socket", daemon.path, "send", "-"], input: input)
    XCTAssertEqual(run.status, 1)
    XCTAssertEqual(run.output, "queued 2 messages; the last is id-b (count 2)\n")
    XCTAssertEqual(
      run.errors,
      "chatlinkctl: chatlinkd refused the parameter 'texts': message 3 is 70000 bytes, more than "
        + "one request to chatlinkd may hold (65536 bytes); it and the messages after it were not "
        + "sent\n")
    XCTAssertEqual(
      daemon.calls.flatMap { $0.parameters["texts"]?.arrayValue ?? [] },
      [.string("a"), .string("b")])
  }

  func testSendDashAsJSONPrintsOneReceiptPerLine() throws {
    let daemon = try FakeDaemon { call in [Self.batchReceipt(call, first: 7)] }
    let run = chatlinkctl(
      ["--socket", daemon.path, "--json", "send", "-"], input: ["a", "b", "c"])
    XCTAssertEqual(
      run.lines,
      [
        #"{"id":"id-a","state":"queued","count":7}"#, #"{"id":"id-b","state":"queued","count":8}"#,
        #"{"id":"id-c","state":"queued","count":9}"#,
      ])
  }

  func testAVarlinkErrorExitsOneWithItsMessage() throws {
    let daemon = try FakeDaemon { _ in
      [
        VarlinkReply(
          parameters: .object(["limit": .int(10000)]), error: "io.chatlink.Daemon.OutboxFull")
      ]
    }
    let run = chatlinkctl(["--socket", daemon.path, "send", "hi"])
    XCTAssertEqual(run.status, 1)
    XCTAssertEqual(run.output, "")
    XCTAssertEqual(
      run.errors,
      "chatlinkctl: the outbox is full (10000 messages): the backend has not confirmed earlier messages yet\n"
    )
  }

  func testSendDashReportsEveryBatchTheDaemonAcceptedAroundARefusal() throws {
    // The second batch is refused (say the daemon could never fit it); the third, fourth and
    // fifth, already on their way, are accepted.
    let counter = Counter()
    let daemon = try FakeDaemon { call in
      let n = Int64(call.parameters["texts"]?.arrayValue?.count ?? 0)
      let first = counter.take(n)
      guard first != 1025 else {
        return [
          VarlinkReply(
            parameters: .object(["limit": .int(2)]), error: "io.chatlink.Daemon.OutboxFull")
        ]
      }
      return [Self.batchReceipt(call, first: first)]
    }
    let input = (1...10_000).map { "m\($0)" }
    let run = chatlinkctl(["--socket", daemon.path, "send", "-"], input: input)
    XCTAssertEqual(run.status, 1)
    // Batches 3, 4 and 5 were on their way when the refusal of 2 came: no more were sent.
    XCTAssertEqual(daemon.calls.count, 5)
    XCTAssertEqual(run.output, "queued 4096 messages; the last is id-m5120 (count 5120)\n")
    XCTAssertTrue(run.errors.hasPrefix("chatlinkctl: the outbox is full (2 messages)"), run.errors)
  }

  func testNotConnectedExitsOneAndNamesTheState() throws {
    let daemon = try FakeDaemon { _ in
      [
        VarlinkReply(
          parameters: .object(["state": .string("waiting")]),
          error: "io.chatlink.Daemon.NotConnected")
      ]
    }
    let run = chatlinkctl(["--socket", daemon.path, "ping"])
    XCTAssertEqual(run.status, 1)
    XCTAssertEqual(
      run.errors,
      "chatlinkctl: chatlinkd is not connected to the backend (state: waiting); try again later\n")
  }

  func testAnUnreachableDaemonExitsThreeAndSaysHowToStartIt() {
    let path = missingSocketPath()
    let run = chatlinkctl(["--socket", path, "status"])
    XCTAssertEqual(run.status, 3)
    XCTAssertEqual(run.output, "")
    XCTAssertEqual(
      run.errors,
      "chatlinkctl: cannot connect to \(path): No such file or directory; is chatlinkd running? (systemctl start chatlinkd)\n"
    )
  }

  func testEveryVerbExitsThreeWhenTheDaemonIsUnreachable() {
    let path = missingSocketPath()
    for verb in [
      ["status"], ["status", "--watch"], ["send", "x"], ["send", "-"], ["join", "7"],
      ["leave", "7"],
      ["rooms"], ["history"], ["follow"], ["reconnect"], ["ping"],
      ["metrics"],
    ] {
      let run = chatlinkctl(["--socket", path] + verb, input: ["a"], polls: 2)
      XCTAssertEqual(run.status, 3, "\(verb): \(run.errors)")
      XCTAssertTrue(run.errors.contains("is chatlinkd running?"), "\(verb)")
    }
  }

  func testPermissionDeniedByTheDaemonExitsFour() throws {
    let daemon = try FakeDaemon { _ in [VarlinkReply(.permissionDenied)] }
    let run = chatlinkctl(["--socket", daemon.path, "join", "7"])
    XCTAssertEqual(run.status, 4)
    XCTAssertTrue(run.errors.hasPrefix("chatlinkctl: permission denied"), run.errors)
  }

  func testAClosedConnectionExitsOne() throws {
    let daemon = try FakeDaemon { _ in [] }
    let run = chatlinkctl(["--socket", daemon.path, "rooms"])
    XCTAssertEqual(run.status, 1)
    XCTAssertEqual(
      run.errors, "chatlinkctl: connection to chatlinkd lost: the daemon closed the connection\n")
  }

  func testJoinLeaveAndReconnectConfirmInWords() throws {
    let daemon = try FakeDaemon([
      "Join": .object([]), "Leave": .object([]), "Reconnect": .object([]),
    ])
    XCTAssertEqual(chatlinkctl(["--socket", daemon.path, "join", "7"]).output, "joined #7\n")
    XCTAssertEqual(chatlinkctl(["--socket", daemon.path, "leave", "ops"]).output, "left #ops\n")
    XCTAssertEqual(
      chatlinkctl(["--socket", daemon.path, "reconnect"]).output, "reconnecting to the backend\n")
    XCTAssertEqual(chatlinkctl(["--socket", daemon.path, "--json", "join", "7"]).output, "{}\n")
    XCTAssertEqual(
      daemon.calls.map(\.parameters),
      [json(#"{"room":"7"}"#), json(#"{"room":"ops"}"#), json("{}"), json(#"{"room":"7"}"#)])
  }

  func testRoomsPrintsOneRoomPerLineOrOneJSONObject() throws {
    let daemon = try FakeDaemon(["ListRooms": json(#"{"rooms":["7","ops"]}"#)])
    XCTAssertEqual(chatlinkctl(["--socket", daemon.path, "rooms"]).output, "7\nops\n")
    XCTAssertEqual(
      chatlinkctl(["--socket", daemon.path, "rooms", "--json"]).output,
      #"{"rooms":["7","ops"]}"# + "\n")
  }

  func testMetricsPrintsTheTextAsItCameAndAsJSONOnRequest() throws {
    let text = "# TYPE chatlink_connects counter\nchatlink_connects_total 2\n# EOF\n"
    let daemon = try FakeDaemon(["GetMetrics": .object(["text": .string(text)])])
    let run = chatlinkctl(["--socket", daemon.path, "metrics"])
    XCTAssertEqual(run.status, 0, run.errors)
    XCTAssertEqual(run.output, text)
    XCTAssertEqual(daemon.calls.map(\.method), [method + "GetMetrics"])
    XCTAssertEqual(
      chatlinkctl(["--socket", daemon.path, "metrics", "--json"]).output,
      ##"{"text":"# TYPE chatlink_connects counter\nchatlink_connects_total 2\n# EOF\n"}"## + "\n")
  }

  func testPingPrintsTheRoundTrip() throws {
    let daemon = try FakeDaemon(["Ping": json(#"{"rtt_ms":0.25}"#)])
    XCTAssertEqual(
      chatlinkctl(["--socket", daemon.path, "ping"]).output, "round trip to the backend: 0.250 ms\n"
    )
    XCTAssertEqual(
      chatlinkctl(["--socket", daemon.path, "ping", "--json"]).output, #"{"rtt_ms":0.25}"# + "\n")
  }

  func testHistoryPassesItsFiltersAndPrintsOneRecordPerLine() throws {
    let records = JSONValue.array([Sample.incoming, Sample.text])
    let daemon = try FakeDaemon(["History": .object(["records": records])])
    let human = chatlinkctl([
      "--socket", daemon.path, "history", "--room", "7", "--since", "41", "--limit", "2",
    ])
    XCTAssertEqual(human.status, 0, human.errors)
    XCTAssertEqual(
      human.lines,
      Format.history([try typed(Sample.incoming), try typed(Sample.text)], colour: false))
    let machine = chatlinkctl([
      "--socket", daemon.path, "history", "--json", "--since", "2026-12-02T13:00:00+01:00",
    ])
    XCTAssertEqual(machine.lines, [Sample.incoming.description, Sample.text.description])
    XCTAssertEqual(
      daemon.calls.map(\.parameters),
      [
        json(#"{"room":"7","since_seq":41,"limit":2}"#),
        json(#"{"since_time":"2026-12-02T12:00:00.000000Z"}"#),
      ])
  }

  func testFollowStreamsEventsUntilTheDaemonEndsTheStream() throws {
    let events: [JSONValue] = [
      json(
        #"{"event":"connected","time":"2026-12-02T12:00:04Z","extensions":"permessage-deflate"}"#),
      .object([
        "event": .string("message"), "time": .string("2026-12-02T12:00:05Z"),
        "record": Sample.incoming,
      ]),
      json(
        #"{"event":"disconnected","time":"2026-12-02T12:00:09Z","code":1001,"reason":"going away"}"#
      ),
    ]
    let daemon = try FakeDaemon { call in
      XCTAssertTrue(call.more)
      return events.enumerated().map { index, event in
        VarlinkReply(parameters: .object(["event": event]), continues: index < events.count - 1)
      }
    }
    let human = chatlinkctl(["--socket", daemon.path, "follow", "--room", "7"])
    XCTAssertEqual(human.status, 0, human.errors)
    XCTAssertEqual(
      human.lines,
      [
        "12:00:04 connected (extensions permessage-deflate)",
        "12:00:00 #7 bob: hi",
        "12:00:09 disconnected (1001): going away",
      ])
    let machine = chatlinkctl(["--json", "--socket", daemon.path, "follow"])
    XCTAssertEqual(machine.lines, events.map(\.description))
    XCTAssertEqual(daemon.calls.map(\.parameters), [json(#"{"room":"7"}"#), json("{}")])
  }

  func testFollowExitsOneWhenTheConnectionBreaks() throws {
    let daemon = try FakeDaemon { _ in [] }
    let run = chatlinkctl(["--socket", daemon.path, "follow"])
    XCTAssertEqual(run.status, 1)
    XCTAssertTrue(run.errors.contains("connection to chatlinkd lost"))
  }
}

/// Hands out canned answers in order, from any thread.
final class Answers: @unchecked Sendable {
  private var values: [JSONValue]
  private let lock = NSLock()

  init(_ values: [JSONValue]) {
    self.values = values
  }

  var isEmpty: Bool {
    lock.lock()
    defer { lock.unlock() }
    return values.isEmpty
  }

  func next() -> JSONValue {
    lock.lock()
    defer { lock.unlock() }
    return values.isEmpty ? .null : values.removeFirst()
  }
}

/// A stand-in daemon's outbox counter: `take(n)` hands out n consecutive counts.
final class Counter: @unchecked Sendable {
  private var next: Int64 = 1
  private let lock = NSLock()

  func take(_ n: Int64) -> Int64 {
    lock.lock()
    defer { lock.unlock() }
    defer { next += n }
    return next
  }
}
