import ChatLinkAPI
import JSON
import TestSupport
import XCTest

final class DaemonStatusTests: XCTestCase {
  private func status(_ state: DaemonState = .open, rooms: Int = 3) -> DaemonStatus {
    DaemonStatus(
      state: state, url: "wss://chat.example/ws", rooms: (0..<rooms).map(String.init),
      received: 120, sent: 4, confirmed: 4, connects: 1, outbox: 0, lastSeq: 130,
      durableSeq: 130, storePath: "/var/lib/chatlink/messages.jsonl", version: "0.1.0")
  }

  func testStatusLineReadsLikeSystemdStatus() {
    var line = status()
    XCTAssertEqual(
      line.summary, "Connected to wss://chat.example/ws (3 rooms) · 120 in, 4 out · outbox 0")
    line.state = .waiting
    line.retryIn = 2.5
    line.lastError = "HTTP 503"
    line.rooms = ["7"]
    XCTAssertEqual(
      line.summary,
      "Reconnecting to wss://chat.example/ws in 2.5 s (1 room) · 120 in, 4 out · outbox 0 · last error: HTTP 503"
    )
    line.storeError = "No space left on device"
    XCTAssertTrue(line.summary.contains("STORE DEGRADED: No space left on device"))
  }

  func testTheStatusLineSaysWhatTheSessionFallsShortOfWhileConnected() throws {
    var line = status()
    line.sessionNote = "QoS 2 asked, broker granted 1 for chat/7"
    XCTAssertEqual(
      line.summary,
      "Connected to wss://chat.example/ws (3 rooms) · 120 in, 4 out · outbox 0 · "
        + "QoS 2 asked, broker granted 1 for chat/7")
    line.text = line.summary
    XCTAssertEqual(line.json["session_note"], .string("QoS 2 asked, broker granted 1 for chat/7"))
    XCTAssertEqual(try DaemonStatus(json: line.json), line)
    XCTAssertNil(status().json["session_note"])
    line.state = .waiting
    XCTAssertFalse(line.summary.contains("QoS"), "no session, nothing it falls short of")
  }

  func testAnInstancesStatusLineAndObjectNameIt() throws {
    var line = status()
    line.instance = "staging"
    XCTAssertEqual(
      line.summary,
      "staging: Connected to wss://chat.example/ws (3 rooms) · 120 in, 4 out · outbox 0")
    line.text = line.summary
    XCTAssertEqual(line.json["instance"], .string("staging"))
    XCTAssertEqual(try DaemonStatus(json: line.json), line)
    XCTAssertNil(status().json["instance"], "left out for the plain service")
    XCTAssertNil(try DaemonStatus(json: status().json).instance)
  }

  func testTheTextOfANewStatusIsItsSummaryUnlessGiven() {
    XCTAssertEqual(status().text, status().summary)
    let given = DaemonStatus(
      state: .open, text: "as the daemon said", url: "", rooms: [], received: 0, sent: 0,
      confirmed: 0, connects: 0, outbox: 0, lastSeq: 0, durableSeq: 0, storePath: "",
      version: "")
    XCTAssertEqual(given.text, "as the daemon said")
  }

  func testEveryStateHasItsOwnHead() {
    let heads: [(DaemonState, String)] = [
      (.idle, "Idle · "), (.connecting, "Connecting to wss://chat.example/ws · "),
      (.tls, "TLS handshake with wss://chat.example/ws · "),
      (.upgrading, "Upgrading to WebSocket at wss://chat.example/ws · "),
      (.closing, "Closing the connection to wss://chat.example/ws · "),
      (.waiting, "Reconnecting to wss://chat.example/ws in 0 s · "),
      (DaemonState(rawValue: "hibernating"), "hibernating wss://chat.example/ws · "),
    ]
    for (state, head) in heads {
      XCTAssertTrue(status(state, rooms: 0).summary.hasPrefix(head), "\(state)")
    }
  }

  func testTheLastErrorShowsOnlyWhileNotConnected() {
    var line = status()
    line.lastError = "HTTP 503"
    XCTAssertFalse(line.summary.contains("last error"))
    line.state = .connecting
    XCTAssertTrue(line.summary.hasSuffix(" · last error: HTTP 503"))
  }

  func testDuplicatesAndHistoryGapsAreInTheLineOnceThereAreAny() {
    var line = status()
    line.duplicatesDropped = 12
    XCTAssertTrue(line.summary.hasSuffix(" · outbox 0 · 12 duplicates dropped"), line.summary)
    line.historyGaps = 1
    XCTAssertTrue(
      line.summary.hasSuffix(" · 12 duplicates dropped · 1 history gap (messages may be missing)"),
      line.summary)
  }

  func testStatusFromAnOlderDaemonWithoutTheNewFieldsReadsAsNone() throws {
    var object = try XCTUnwrap(status().json.objectValue)
    object.removeAll { ["duplicates_dropped", "history_gaps"].contains($0.key) }
    let read = try DaemonStatus(json: .object(object))
    XCTAssertEqual(read.duplicatesDropped, 0)
    XCTAssertEqual(read.historyGaps, 0)
    XCTAssertNil(read.delivery)
  }

  func testSecondsKeepOneDecimalAndSurviveAnyNumberFromTheWire() {
    XCTAssertEqual(DaemonStatus.seconds(2.5), "2.5")
    XCTAssertEqual(DaemonStatus.seconds(2.96), "3")
    XCTAssertEqual(DaemonStatus.seconds(0), "0")
    XCTAssertEqual(DaemonStatus.seconds(.infinity), "inf")
    XCTAssertEqual(DaemonStatus.seconds(1e300), "1e+300")
    XCTAssertEqual(DaemonStatus.seconds(.nan), "nan")
  }

  func testTheJSONLeavesUnsetFieldsOutAndReadsBack() throws {
    let json = status().json
    XCTAssertEqual(
      json.description,
      #"{"state":"open","text":"Connected to wss://chat.example/ws (3 rooms) · 120 in, 4 out · outbox 0","url":"wss://chat.example/ws","protocol":"envelope","rooms":["0","1","2"],"received":120,"duplicates_dropped":0,"history_gaps":0,"sent":4,"confirmed":4,"failed":0,"connects":1,"outbox":0,"last_seq":130,"durable_seq":130,"store_path":"/var/lib/chatlink/messages.jsonl","version":"0.1.0"}"#
    )
    XCTAssertEqual(try DaemonStatus(json: json), status())
    // Null is as good as absent.
    var members = try XCTUnwrap(json.objectValue)
    members.append(("last_error", .null))
    XCTAssertEqual(try DaemonStatus(json: .object(members)), status())
  }

  func testAWrongOrMissingFieldIsNamedInTheError() throws {
    var members = try XCTUnwrap(status().json.objectValue)
    members[members.firstIndex { $0.key == "received" }!].value = .string("many")
    XCTAssertThrowsError(try DaemonStatus(json: .object(members))) { error in
      XCTAssertEqual(
        error as? APIDecodingError,
        APIDecodingError(field: "received", reason: "must be an integer"))
    }
    members.removeAll { $0.key == "url" }
    XCTAssertThrowsError(try DaemonStatus(json: .object(members))) { error in
      XCTAssertEqual("\(error)", "url is required")
    }
    XCTAssertThrowsError(try DaemonStatus(json: .array([]))) { error in
      XCTAssertEqual("\(error)", "the value must be an object")
    }
    XCTAssertThrowsError(try GetStatusReply(json: json(#"{"status":{"state":7}}"#))) { error in
      XCTAssertEqual("\(error)", "status.state must be a string")
    }
  }

  func testTheRoomsCatchingUpTravelAsObjectsAndAreLeftOutWhenNone() throws {
    var caughtUp = status()
    caughtUp.catchingUp = [
      CatchUpProgress(room: "lobby@conference.example.org", caughtUp: 150)
    ]
    let json = caughtUp.json
    XCTAssertTrue(
      json.description.contains(
        #""catching_up":[{"room":"lobby@conference.example.org","caught_up":150}]"#),
      json.description)
    XCTAssertEqual(try DaemonStatus(json: json), caughtUp)
    XCTAssertFalse(status().json.description.contains("catching_up"))
    var members = try XCTUnwrap(json.objectValue)
    members[members.firstIndex { $0.key == "catching_up" }!].value = .array([
      .object([("room", .string("r")), ("caught_up", .string("lots"))])
    ])
    XCTAssertThrowsError(try DaemonStatus(json: .object(members))) { error in
      XCTAssertEqual("\(error)", "catching_up[0].caught_up must be an integer")
    }
  }
}
