/// `chatlinkctl join ROOM`.
public struct JoinCommand: ParsableCommand {
  public static var configuration: CommandConfiguration {
    CommandConfiguration(
      commandName: "join",
      abstract: "Join a room.",
      discussion: "chatlinkd joins the room on the backend, and again after every reconnect.")
  }

  @OptionGroup(title: "Global Options") public var globals: GlobalOptions

  @Argument(help: "The room, as the backend names it (e.g. 7 or ops).")
  public var room: String

  /// The command before parsing.
  public init() {}

  public mutating func run(_ context: CommandContext) throws {
    try globals.connect(context).join(room)
    context.write(globals.json ? "{}" : "joined " + Format.roomLabel(.string(room)))
  }
}
