import ChatLinkAPI
import ChatLinkClient

/// `chatlinkctl instances`.
public struct InstancesCommand: ParsableCommand {
  public static var configuration: CommandConfiguration {
    CommandConfiguration(
      commandName: "instances",
      abstract: "List every chatlinkd on this host with its state, URL and outbox.",
      discussion: """
        Looks for control sockets in \(Instance.runtimeDirectory): control.sock is the
        plain chatlinkd.service (shown as "-"), NAME.sock the instance chatlinkd@NAME.
        Each is asked for its status, waiting at most --timeout seconds; one that
        cannot answer is listed with why: not running (a socket left behind),
        permission denied, or not answering. With --json, one object per line:
        instance (null for chatlinkd.service), socket, reachable, then status (as
        GetStatus returns it) or problem and error.
        """)
  }

  @OptionGroup(title: "Global Options") public var globals: GlobalOptions

  @Option(help: "Where the control sockets are.", valueName: "path")
  public var runtimeDirectory: String = Instance.runtimeDirectory

  @Option(help: "How long to wait for each daemon, in seconds.", valueName: "seconds")
  public var timeout: Double = 2

  /// The command before parsing.
  public init() {}

  public mutating func validate() throws {
    guard timeout > 0, timeout <= 60 else {
      throw ValidationError("--timeout must be more than 0 and at most 60 seconds")
    }
  }

  public mutating func run(_ context: CommandContext) throws {
    let reports = InstanceProbe.probe(
      directory: runtimeDirectory, timeout: .milliseconds(Int(timeout * 1000)))
    if globals.json {
      for report in reports { context.write(Format.json(report.json)) }
    } else {
      context.write(
        Format.instances(reports, directory: runtimeDirectory, colour: context.colour))
    }
  }
}
