import ChatLinkAPI
import ChatLinkCommands
import XCTest

final class StatusFormatTests: XCTestCase {
  func testAConnectedStatusIsAnAlignedKeyValueBlock() throws {
    XCTAssertEqual(
      Format.status(try typed(Sample.openStatus), colour: false),
      """
           State: open
          Status: Connected to ws://127.0.0.1:8765/ (2 rooms) · 12 in, 3 out · outbox 0
             URL: ws://127.0.0.1:8765/
        Protocol: envelope
           Rooms: 7, ops
      Extensions: permessage-deflate
        Received: 12
            Sent: 3
       Confirmed: 3
          Outbox: 0
        Connects: 1
        Last seq: 42 (durable 42)
           Store: /var/lib/chatlink/messages.jsonl
         Version: 0.1.0
      """)
  }

  func testRoomsCatchingUpAreListedWithWhatTheirHistoryBroughtSoFar() throws {
    var status: DaemonStatus = try typed(Sample.openStatus)
    status.catchingUp = [
      CatchUpProgress(room: "a@conference.example.org", caughtUp: 50),
      CatchUpProgress(room: "b@conference.example.org", caughtUp: 0),
    ]
    XCTAssertTrue(
      Format.status(status, colour: false).contains(
        "\nCatching up: a@conference.example.org (50 so far), b@conference.example.org (0 so far)\n"
      ), Format.status(status, colour: false))
  }

  func testAWaitingStatusShowsTheRetryAndTheErrors() throws {
    XCTAssertEqual(
      Format.status(try typed(Sample.waitingStatus), colour: false),
      """
            State: waiting
           Status: Reconnecting to ws://127.0.0.1:8765/ in 2.5 s · 12 in, 3 out · outbox 1 · last error: connection refused
              URL: ws://127.0.0.1:8765/
         Protocol: envelope
            Rooms: none
         Retry in: 2.5 s
       Last error: connection refused
      Store error: No space left on device
         Received: 12
             Sent: 3
        Confirmed: 3
           Outbox: 1
         Connects: 4
         Last seq: 42 (durable 41)
            Store: /var/lib/chatlink/messages.jsonl
          Version: 0.1.0
      """)
  }

  func testASocketIOStatusShowsTheSessionAndTheRefusedMessages() throws {
    var status: DaemonStatus = try typed(Sample.openStatus)
    status.`protocol` = "socketio"
    status.session = "n1"
    status.namespace = "/chat"
    status.failed = 2
    status.lastFailure = "a1: muted"
    let text = Format.status(status, colour: false)
    XCTAssertTrue(text.contains("\n    Protocol: socketio\n"), text)
    XCTAssertTrue(text.contains("\n     Session: n1 (namespace /chat)\n"), text)
    XCTAssertTrue(text.contains("\nLast refused: a1: muted\n"), text)
    XCTAssertTrue(text.contains("\n     Refused: 2\n"), text)
  }

  func testAnMQTTSessionShowsWhatTheBrokerGrantedLessThanAsked() throws {
    var status: DaemonStatus = try typed(Sample.openStatus)
    status.`protocol` = "mqtt"
    status.session = "chatlink-1"
    status.sessionNote = "QoS 2 asked, broker granted 1 for chat/7"
    let text = Format.status(status, colour: false)
    XCTAssertTrue(text.contains("\n     Session: chatlink-1\n"), text)
    XCTAssertTrue(
      text.contains("\nSession note: QoS 2 asked, broker granted 1 for chat/7\n"), text)
  }

  func testColourMarksTheStateAndTheErrors() throws {
    let open = Format.status(try typed(Sample.openStatus), colour: true)
    XCTAssertTrue(open.hasPrefix("     State: \u{1B}[32mopen\u{1B}[0m\n"), open)
    let waiting = Format.status(try typed(Sample.waitingStatus), colour: true)
    XCTAssertTrue(waiting.contains("State: \u{1B}[31mwaiting\u{1B}[0m\n"), waiting)
    XCTAssertTrue(waiting.contains("Last error: \u{1B}[31mconnection refused\u{1B}[0m\n"))
    XCTAssertTrue(waiting.contains("Store error: \u{1B}[31;1mNo space left on device\u{1B}[0m\n"))
  }

  func testWithoutColourThereAreNoEscapeSequences() throws {
    XCTAssertFalse(Format.status(try typed(Sample.waitingStatus), colour: false).contains("\u{1B}"))
  }

  func testTheJSONStatusIsTheGetStatusObjectOnOneLine() {
    let line = Format.json(Sample.openStatus)
    XCTAssertFalse(line.contains("\n"))
    XCTAssertTrue(line.hasPrefix(#"{"state":"open","text":"Connected to ws://127.0.0.1:8765/"#))
    XCTAssertTrue(
      line.hasSuffix(#""store_path":"/var/lib/chatlink/messages.jsonl","version":"0.1.0"}"#))
  }

  func testAWatchLineShowsTheTimeTheStateAndTheStatusLine() throws {
    XCTAssertEqual(
      Format.statusChange(try typed(Sample.openStatus), at: 1_796_212_805_000_000, colour: false),
      "12:00:05 open       Connected to ws://127.0.0.1:8765/ (2 rooms) · 12 in, 3 out · outbox 0")
    XCTAssertEqual(
      Format.watchFailure("cannot connect", at: 1_796_212_805_000_000, colour: false),
      "12:00:05 down       cannot connect")
  }

  func testAStatusFromAHostileDaemonCannotDriveTheTerminal() throws {
    var status: DaemonStatus = try typed(Sample.openStatus)
    status.text = "evil \u{1B}[2J\nsecond line"
    XCTAssertTrue(
      Format.status(status, colour: false).contains(#"Status: evil \u{1b}[2J\nsecond line"#))
  }
}
