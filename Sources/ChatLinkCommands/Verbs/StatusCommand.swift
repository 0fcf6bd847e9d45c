import ChatLinkAPI
import ChatLinkClient
@preconcurrency import Glibc

/// `chatlinkctl status [--watch]`.
public struct StatusCommand: ParsableCommand {
  public static var configuration: CommandConfiguration {
    CommandConfiguration(
      commandName: "status",
      abstract: "Show the daemon's connection, rooms and counters.",
      discussion: """
        With --watch, polls every second and prints a line only when the state or the
        status line changes (the status line carries the counters), until interrupted.
        If chatlinkd stops meanwhile, --watch says so and carries on until it is back.
        With --json, each line is the GetStatus status object.
        """)
  }

  @OptionGroup(title: "Global Options") public var globals: GlobalOptions

  @Flag(help: "Poll every second; print only when the status changes.")
  public var watch = false

  /// The command before parsing.
  public init() {}

  public mutating func run(_ context: CommandContext) throws {
    let client = try globals.connect(context)
    guard watch else {
      let status = try client.status()
      context.write(
        globals.json
          ? Format.json(status.json) : Format.status(status.value, colour: context.colour))
      return
    }
    try watch(from: client, context)
  }

  private func watch(from first: ChatLinkClient, _ context: CommandContext) throws(ClientError) {
    var client: ChatLinkClient? = first
    var last: (state: DaemonState, text: String)?
    var lastFailure: String?
    repeat {
      do throws(ClientError) {
        let connected: ChatLinkClient
        if let client {
          connected = client
        } else {
          connected = try globals.connect(context)
        }
        client = connected
        let status = try connected.status()
        if last.map({ $0 != (status.state, status.text) }) ?? true {
          context.write(
            globals.json
              ? Format.json(status.json)
              : Format.statusChange(
                status.value, at: context.now(), colour: context.colour, time: context.timeDisplay))
          context.output.flush()
          last = (status.state, status.text)
          lastFailure = nil
        }
      } catch {
        switch error {
        case .unreachable(_, let code) where code != EACCES && code != EPERM: break
        case .connectionLost: break
        default: throw error
        }
        client = nil
        let message = ExitStatus.message(for: error)
        if message != lastFailure {
          if globals.json {
            context.writeError("chatlinkctl: " + message)
          } else {
            context.write(
              Format.watchFailure(
                message, at: context.now(), colour: context.colour, time: context.timeDisplay))
            context.output.flush()
          }
          lastFailure = message
          last = nil
        }
      }
    } while context.pause(1)
  }
}
