/// `chatlinkctl ping`.
public struct PingCommand: ParsableCommand {
  public static var configuration: CommandConfiguration {
    CommandConfiguration(
      commandName: "ping",
      abstract: "Measure the round trip from chatlinkd to the backend.",
      discussion: "Fails with status 1 when chatlinkd is not connected.")
  }

  @OptionGroup(title: "Global Options") public var globals: GlobalOptions

  /// The command before parsing.
  public init() {}

  public mutating func run(_ context: CommandContext) throws {
    let milliseconds = try globals.connect(context).ping()
    context.write(
      globals.json
        ? Format.json(Format.pingObject(milliseconds: milliseconds))
        : Format.ping(milliseconds: milliseconds, colour: context.colour))
  }
}
