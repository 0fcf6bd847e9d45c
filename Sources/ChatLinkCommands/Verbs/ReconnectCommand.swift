/// `chatlinkctl reconnect`.
public struct ReconnectCommand: ParsableCommand {
  public static var configuration: CommandConfiguration {
    CommandConfiguration(
      commandName: "reconnect",
      abstract: "Drop the backend connection and connect again now.",
      discussion: "Unconfirmed messages stay in the outbox and are sent again.")
  }

  @OptionGroup(title: "Global Options") public var globals: GlobalOptions

  /// The command before parsing.
  public init() {}

  public mutating func run(_ context: CommandContext) throws {
    try globals.connect(context).reconnect()
    context.write(globals.json ? "{}" : "reconnecting to the backend")
  }
}
