import ChatLinkCommands
import XCTest

final class HelpTests: XCTestCase {
  private let verbs = [
    "status", "send", "join", "leave", "rooms", "history", "follow", "reconnect", "ping",
    "metrics", "instances",
  ]

  func testEveryVerbsHelpShowsItsAbstractUsageAndOptions() {
    for verb in verbs {
      for spelling in [[verb, "--help"], [verb, "-h"], ["help", verb], ["--json", verb, "-h"]] {
        let run = chatlinkctl(spelling)
        XCTAssertEqual(run.status, 0, "\(spelling)")
        XCTAssertEqual(run.errors, "", "\(spelling)")
        XCTAssertTrue(run.output.hasPrefix("OVERVIEW: "), "\(spelling)")
        XCTAssertTrue(run.output.contains("\nUSAGE: chatlinkctl \(verb)"), "\(spelling)")
        XCTAssertTrue(run.output.contains("\nOPTIONS:\n"), "\(spelling)")
        XCTAssertTrue(run.output.contains("  -h, --help              Show help information."))
        XCTAssertTrue(run.output.contains("\nGLOBAL OPTIONS:\n  --socket <path>"), "\(spelling)")
      }
    }
  }

  func testEveryVerbsHelpBeginsWithItsAbstract() {
    for verb in ChatLinkCtl.configuration.subcommands {
      let name = verb.configuration.commandName ?? ""
      let abstract = verb.configuration.abstract
      XCTAssertFalse(abstract.isEmpty, name)
      XCTAssertTrue(
        chatlinkctl([name, "--help"]).output.hasPrefix("OVERVIEW: \(abstract)\n"), name)
    }
  }

  func testTheTopHelpListsEveryVerbWithItsAbstract() {
    let help = chatlinkctl(["--help"]).output
    XCTAssertEqual(help, chatlinkctl(["-h"]).output)
    XCTAssertEqual(help, chatlinkctl(["help"]).output)
    XCTAssertTrue(
      help.hasPrefix("OVERVIEW: Control chatlinkd, the ChatLink WebSocket chat daemon.\n"))
    XCTAssertTrue(
      help.contains(
        "\nUSAGE: chatlinkctl [--socket <path>] [--instance <name>] [--json] <subcommand>\n"),
      help)
    XCTAssertTrue(help.contains("  --version               Show the version.\n"))
    XCTAssertTrue(help.contains("\nSUBCOMMANDS:\n"))
    XCTAssertTrue(
      help.contains("  status                  Show the daemon's connection, rooms and counters.\n")
    )
    XCTAssertTrue(help.contains("  send                    Queue a message for the backend.\n"))
    XCTAssertTrue(help.contains("See 'chatlinkctl help <subcommand>' for detailed help."))
    for verb in verbs { XCTAssertTrue(help.contains("\n  \(verb) "), verb) }
  }

  func testTheTopHelpDocumentsTheExitStatuses() {
    let help = chatlinkctl(["--help"]).output
    XCTAssertTrue(help.contains("EXIT STATUS:\n  0  success\n  1  failure"))
    XCTAssertTrue(help.contains("\n  2  usage error"))
    XCTAssertTrue(help.contains("\n  3  chatlinkd is unreachable"))
    XCTAssertTrue(help.contains("\n  4  permission denied"))
    XCTAssertTrue(help.contains("CHATLINK_SOCKET"))
    XCTAssertTrue(help.contains("CHATLINK_INSTANCE"))
    XCTAssertTrue(help.contains("NO_COLOR"))
  }

  func testSendsHelpIsLaidOutAsSwiftArgumentParserDoes() {
    let help = chatlinkctl(["send", "--help"]).output
    XCTAssertTrue(help.hasPrefix("OVERVIEW: Queue a message for the backend.\n\nsend returns once"))
    XCTAssertTrue(
      help.contains(
        """

        USAGE: chatlinkctl send [--socket <path>] [--instance <name>] [--json]
               [--room <room>] [--wait] [--id <id>] <text>

        ARGUMENTS:
          <text>                  The message, or - to send each line of standard input
                                  as a message.

        OPTIONS:
          --room <room>           The room, as the backend names it (default: the
                                  daemon's default room).
          --wait                  Wait until the backend has confirmed the message.
        """), help)
  }

  func testNoHelpLineIsWiderThanEightyColumns() {
    for arguments in [["--help"]] + verbs.map({ [$0, "--help"] }) {
      for line in chatlinkctl(arguments).output.split(separator: "\n") {
        XCTAssertLessThanOrEqual(line.count, 80, "\(arguments): \(line)")
      }
    }
  }

  func testHelpForAnUnknownVerbIsAUsageError() {
    let run = chatlinkctl(["help", "frob"])
    XCTAssertEqual(run.status, 2)
    XCTAssertTrue(run.errors.hasPrefix("Error: Unknown subcommand 'frob'"))
  }
}
