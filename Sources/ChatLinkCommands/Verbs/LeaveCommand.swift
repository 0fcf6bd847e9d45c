/// `chatlinkctl leave ROOM`.
public struct LeaveCommand: ParsableCommand {
  public static var configuration: CommandConfiguration {
    CommandConfiguration(commandName: "leave", abstract: "Leave a room.")
  }

  @OptionGroup(title: "Global Options") public var globals: GlobalOptions

  @Argument(help: "The room, as the backend names it (e.g. 7 or ops).")
  public var room: String

  /// The command before parsing.
  public init() {}

  public mutating func run(_ context: CommandContext) throws {
    try globals.connect(context).leave(room)
    context.write(globals.json ? "{}" : "left " + Format.roomLabel(.string(room)))
  }
}
