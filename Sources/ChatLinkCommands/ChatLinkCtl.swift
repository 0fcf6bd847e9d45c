import ChatLinkAPI
import ChatLinkClient
import Varlink

/// The `chatlinkctl` command: the root of the verbs.
public struct ChatLinkCtl: ParsableCommand {
  public static var configuration: CommandConfiguration {
    CommandConfiguration(
      commandName: "chatlinkctl",
      abstract: "Control chatlinkd, the ChatLink WebSocket chat daemon.",
      discussion: """
        chatlinkctl talks to chatlinkd over its Varlink control socket. Output is for
        people by default; with --json every line is one compact JSON object with
        stable field names. --socket, --instance and --json may go before or after
        the verb.

        EXIT STATUS:
          0  success
          1  failure: chatlinkd refused or failed the request (e.g. OutboxFull,
             NotConnected; the reason is on standard error), or the connection broke
          2  usage error: unknown verb or option, missing or invalid value
          3  chatlinkd is unreachable: it is not running (systemctl start chatlinkd)
             or --socket/--instance names the wrong one
          4  permission denied: the socket or the daemon refused this user (join the
             socket's group, e.g. chatlink)

        ENVIRONMENT:
          CHATLINK_SOCKET    the control socket when neither --socket nor --instance
                             is given
          CHATLINK_INSTANCE  the instance (chatlinkd@NAME) when neither is given and
                             CHATLINK_SOCKET is not set
          NO_COLOR           never colour the output (colour is used only on a terminal)

        EXAMPLES:
          chatlinkctl status --watch
          chatlinkctl -i staging status
          chatlinkctl instances
          chatlinkctl send --room 7 "deploy finished"
          make 2>&1 | chatlinkctl send --room ops -
          chatlinkctl follow --room 7 --json | jq .
          chatlinkctl history --since 2026-12-02T00:00:00Z --limit 20
        """,
      version: "chatlinkctl \(ChatLinkVersion.current)",
      subcommands: [
        StatusCommand.self, SendCommand.self, JoinCommand.self, LeaveCommand.self,
        RoomsCommand.self, HistoryCommand.self, FollowCommand.self, ReconnectCommand.self,
        PingCommand.self, MetricsCommand.self, InstancesCommand.self,
      ])
  }

  @OptionGroup public var globals: GlobalOptions

  /// The command before parsing.
  public init() {}

  /// Client errors become exit statuses 1, 3 and 4 with a message on standard error.
  public static func exitStatus(for error: any Error, context: CommandContext) -> Int32 {
    if let error = error as? ClientError {
      context.writeError("chatlinkctl: " + ExitStatus.message(for: error))
      return ExitStatus.code(for: error)
    }
    context.writeError("chatlinkctl: \(error)")
    return ExitStatus.failure
  }
}
