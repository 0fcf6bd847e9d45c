/// `chatlinkctl rooms`.
public struct RoomsCommand: ParsableCommand {
  public static var configuration: CommandConfiguration {
    CommandConfiguration(
      commandName: "rooms", abstract: "List the rooms the daemon is in, one per line.")
  }

  @OptionGroup(title: "Global Options") public var globals: GlobalOptions

  /// The command before parsing.
  public init() {}

  public mutating func run(_ context: CommandContext) throws {
    let rooms = try globals.connect(context).rooms()
    if globals.json {
      context.write(Format.json(Format.roomsObject(rooms)))
    } else {
      for room in rooms { context.write(Format.printable(room)) }
    }
  }
}
