import ChatLinkClient
import ChatLinkCommands
import XCTest

final class ArgumentParsingTests: XCTestCase {
  func testStatusParsesWithAndWithoutWatch() throws {
    XCTAssertFalse(try parse(["status"], as: StatusCommand.self).watch)
    XCTAssertTrue(try parse(["status", "--watch"], as: StatusCommand.self).watch)
  }

  func testSendParsesRoomWaitIdAndText() throws {
    let send = try parse(
      ["send", "--room", "7", "--wait", "--id", "abc", "deploy finished"], as: SendCommand.self)
    XCTAssertEqual(send.room, "7")
    XCTAssertTrue(send.wait)
    XCTAssertEqual(send.id, "abc")
    XCTAssertEqual(send.text, "deploy finished")
  }

  func testSendTakesADashAsStandardInput() throws {
    let send = try parse(["send", "--room", "ops", "-"], as: SendCommand.self)
    XCTAssertEqual(send.text, "-")
    XCTAssertNil(send.id)
    XCTAssertFalse(send.wait)
  }

  func testOptionValuesMayFollowAnEqualsSign() throws {
    let send = try parse(["send", "--room=7", "--id=x=y", "hi"], as: SendCommand.self)
    XCTAssertEqual(send.room, "7")
    XCTAssertEqual(send.id, "x=y")
  }

  func testADoubleDashMakesTheRestPositional() throws {
    XCTAssertEqual(
      try parse(["send", "--", "--not-an-option"], as: SendCommand.self).text, "--not-an-option")
  }

  func testJoinAndLeaveTakeARoom() throws {
    XCTAssertEqual(try parse(["join", "7"], as: JoinCommand.self).room, "7")
    XCTAssertEqual(try parse(["leave", "ops"], as: LeaveCommand.self).room, "ops")
  }

  func testRoomsReconnectAndPingTakeNoArguments() throws {
    _ = try parse(["rooms"], as: RoomsCommand.self)
    _ = try parse(["reconnect"], as: ReconnectCommand.self)
    _ = try parse(["ping"], as: PingCommand.self)
  }

  func testHistoryReadsAnIntegerSinceAsASeq() throws {
    let history = try parse(
      ["history", "--room", "7", "--since", "42", "--limit", "5"], as: HistoryCommand.self)
    XCTAssertEqual(history.room, "7")
    XCTAssertEqual(history.since, .seq(42))
    XCTAssertEqual(history.limit, 5)
  }

  func testHistoryReadsAnyOtherSinceAsAnRFC3339Time() throws {
    let history = try parse(
      ["history", "--since", "2026-12-02T14:00:00.5+02:00"], as: HistoryCommand.self)
    guard case .time(let time) = history.since else {
      return XCTFail("\(String(describing: history.since))")
    }
    XCTAssertEqual(time.utcText, "2026-12-02T12:00:00.500000Z")
    XCTAssertNil(try parse(["history"], as: HistoryCommand.self).since)
  }

  func testFollowTakesAnOptionalRoom() throws {
    XCTAssertEqual(try parse(["follow", "--room", "7"], as: FollowCommand.self).room, "7")
    XCTAssertNil(try parse(["follow"], as: FollowCommand.self).room)
  }

  func testGlobalOptionsAreAcceptedBeforeTheVerb() throws {
    let status = try parse(["--socket", "/tmp/x.sock", "--json", "status"], as: StatusCommand.self)
    XCTAssertEqual(status.globals.socket, "/tmp/x.sock")
    XCTAssertTrue(status.globals.json)
  }

  func testGlobalOptionsAreAcceptedAfterTheVerb() throws {
    let history = try parse(
      ["history", "--limit", "3", "--json", "--socket=/tmp/y.sock"], as: HistoryCommand.self)
    XCTAssertEqual(history.globals.socket, "/tmp/y.sock")
    XCTAssertTrue(history.globals.json)
  }

  func testAGlobalOptionAfterTheVerbWinsOverOneBefore() throws {
    let rooms = try parse(["--socket", "/a", "rooms", "--socket", "/b"], as: RoomsCommand.self)
    XCTAssertEqual(rooms.globals.socket, "/b")
  }

  func testTheSocketDefaultsToTheEnvironmentThenTheStandardPath() throws {
    let globals = try parse(["rooms"], as: RoomsCommand.self).globals
    let context = CommandContext(output: StringSink(), errors: StringSink())
    XCTAssertEqual(try globals.socketPath(context), "/run/chatlink/control.sock")
    var withVariable = context
    withVariable.environment = ["CHATLINK_SOCKET": "/tmp/env.sock"]
    XCTAssertEqual(try globals.socketPath(withVariable), "/tmp/env.sock")
    let explicit = try parse(["rooms", "--socket", "/tmp/arg.sock"], as: RoomsCommand.self)
    XCTAssertEqual(try explicit.globals.socketPath(withVariable), "/tmp/arg.sock")
  }

  func testAnInstanceSelectsItsSocketAndTheCommandLineBeatsTheEnvironment() throws {
    var context = CommandContext(output: StringSink(), errors: StringSink())
    let short = try parse(["-i", "prod", "status"], as: StatusCommand.self)
    XCTAssertEqual(try short.globals.socketPath(context), "/run/chatlink/prod.sock")
    let long = try parse(["rooms", "--instance", "staging"], as: RoomsCommand.self)
    context.environment = ["CHATLINK_SOCKET": "/tmp/env.sock", "CHATLINK_INSTANCE": "other"]
    XCTAssertEqual(try long.globals.socketPath(context), "/run/chatlink/staging.sock")
    let plain = try parse(["rooms"], as: RoomsCommand.self)
    XCTAssertEqual(try plain.globals.socketPath(context), "/tmp/env.sock")
    context.environment = ["CHATLINK_INSTANCE": "other"]
    XCTAssertEqual(try plain.globals.socketPath(context), "/run/chatlink/other.sock")
  }

  func testABadInstanceNameOrTwoSocketsAreUsageErrors() throws {
    let context = CommandContext(output: StringSink(), errors: StringSink())
    let bad = try parse(["rooms", "-i", "../x"], as: RoomsCommand.self)
    XCTAssertThrowsError(try bad.globals.socketPath(context)) { error in
      XCTAssertEqual((error as? ClientError).map(ExitStatus.code), ExitStatus.usage)
      XCTAssertTrue("\(error)".hasPrefix("--instance: invalid instance name '../x'"), "\(error)")
    }
    let both = try parse(["rooms", "-i", "a", "--socket", "/s"], as: RoomsCommand.self)
    XCTAssertThrowsError(try both.globals.socketPath(context)) { error in
      XCTAssertEqual("\(error)", "--socket and --instance both name a socket; give one of them")
    }
  }

  func testUsageErrorsExitWithStatusTwoAndTheVerbsUsage() {
    let cases: [(arguments: [String], message: String)] = [
      (["frob"], "Error: Unknown subcommand 'frob'"),
      (["status", "--wat"], "Error: Unknown option '--wat'"),
      (["status", "extra"], "Error: Unexpected argument 'extra'"),
      (["send"], "Error: Missing expected argument '<text>'"),
      (["send", "--room"], "Error: Missing value for '--room <room>'"),
      (["send", "--wait", "-"], "Error: --wait sends one message; it cannot be used with '-'"),
      (["send", "--id", "a", "-"], "Error: --id names one message; it cannot be used with '-'"),
      (["send", ""], "Error: The message is empty"),
      (["join"], "Error: Missing expected argument '<room>'"),
      (["leave", "7", "8"], "Error: Unexpected argument '8'"),
      (["rooms", "-x"], "Error: Unknown option '-x'"),
      (["history", "--limit", "ten"], "Error: The value 'ten' is invalid for '--limit <n>'"),
      (["history", "--limit", "0"], "Error: --limit must be at least 1"),
      (
        ["history", "--since", "yesterday"],
        "Error: The value 'yesterday' is invalid for '--since <seq|time>'; give a seq (an integer) or an RFC 3339 time such as 2026-12-02T12:00:00Z"
      ),
      (["history", "--since", "2026-02-30"], "Error: The value '2026-02-30' is invalid"),
      (["follow", "--room"], "Error: Missing value for '--room <room>'"),
      (["reconnect", "now"], "Error: Unexpected argument 'now'"),
      (["ping", "--json=yes"], "Error: The option '--json' takes no value"),
      (["status", "--version"], "Error: Unknown option '--version'"),
    ]
    for (arguments, message) in cases {
      let run = chatlinkctl(arguments)
      XCTAssertEqual(run.status, 2, "\(arguments)")
      XCTAssertTrue(run.errors.hasPrefix(message), "\(arguments): \(run.errors)")
      XCTAssertTrue(run.errors.contains("Usage: chatlinkctl"), "\(arguments): \(run.errors)")
      XCTAssertEqual(run.output, "", "\(arguments)")
    }
  }

  func testAUsageErrorNamesTheVerbsHelp() {
    let run = chatlinkctl(["send"])
    XCTAssertEqual(
      run.errors,
      """
      Error: Missing expected argument '<text>'
      Usage: chatlinkctl send [--socket <path>] [--instance <name>] [--json]
             [--room <room>] [--wait] [--id <id>] <text>
        See 'chatlinkctl send --help' for more information.

      """)
  }

  func testNoVerbPrintsTheHelpToStandardErrorWithStatusTwo() {
    let run = chatlinkctl([])
    XCTAssertEqual(run.status, 2)
    XCTAssertTrue(run.errors.hasPrefix("OVERVIEW: Control chatlinkd"))
    XCTAssertEqual(run.output, "")
  }

  func testVersionPrintsTheVersion() {
    let run = chatlinkctl(["--version"])
    XCTAssertEqual(run.status, 0)
    XCTAssertEqual(run.output, "chatlinkctl 0.1.0\n")
  }
}
