import ChatLinkAPI

/// `chatlinkctl follow [--room R]`.
public struct FollowCommand: ParsableCommand {
  public static var configuration: CommandConfiguration {
    CommandConfiguration(
      commandName: "follow",
      abstract: "Stream live messages and events, like tail -f.",
      discussion: """
        Prints every message as chatlinkd stores it, and the connected, disconnected,
        sent, confirmed, error and status events, until interrupted (Ctrl-C) or the
        daemon ends the stream. With --room, only that room's events.
        With --json, each line is one event object; a message event carries the
        stored record, as messages.jsonl holds it.
        """)
  }

  @OptionGroup(title: "Global Options") public var globals: GlobalOptions

  @Option(help: "Only this room's events.")
  public var room: String?

  /// The command before parsing.
  public init() {}

  public mutating func run(_ context: CommandContext) throws {
    let client = try globals.connect(context)
    let json = globals.json
    try client.subscribe(SubscribeParameters(room: room)) { event in
      context.write(
        json
          ? Format.json(event.json)
          : Format.event(event.value, colour: context.colour, time: context.timeDisplay))
      context.output.flush()
      return true
    }
  }
}
