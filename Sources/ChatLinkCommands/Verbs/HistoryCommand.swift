import ChatLinkAPI
import ChatLinkClient

/// `chatlinkctl history [--room R] [--since SEQ|TIME] [--limit N]`.
public struct HistoryCommand: ParsableCommand {
  public static var configuration: CommandConfiguration {
    CommandConfiguration(
      commandName: "history",
      abstract: "Show stored messages, newest last.",
      discussion: """
        --since takes a seq (an integer: the records after it) or an RFC 3339 time
        (the records received after it), e.g. 2026-12-02T12:00:00Z,
        2026-12-02T14:00:00+02:00 or 2026-12-02.

        Each line shows the seq, the local time, the room and "sender: text"; an
        arrow marks messages we sent. Data that is not a chat message is shown raw.
        With --json, each line is the record as messages.jsonl holds it.
        """)
  }

  @OptionGroup(title: "Global Options") public var globals: GlobalOptions

  @Option(help: "Only this room's messages.")
  public var room: String?

  @Option(help: "Only records after this seq or time.", valueName: "seq|time")
  public var since: HistoryPosition?

  @Option(help: "At most this many records, the newest (default: 100).", valueName: "n")
  public var limit: Int?

  /// The command before parsing.
  public init() {}

  public mutating func validate() throws {
    if let limit, limit < 1 { throw ValidationError("--limit must be at least 1") }
  }

  public mutating func run(_ context: CommandContext) throws {
    let records = try globals.connect(context).history(
      HistoryParameters(
        room: room, sinceSeq: since?.seq, sinceTime: since?.time?.utcText, limit: limit))
    if globals.json {
      for record in records { context.write(Format.json(record.json)) }
    } else {
      let lines = Format.history(
        records.map(\.value), colour: context.colour, time: context.timeDisplay)
      for line in lines {
        context.write(line)
      }
    }
  }
}

/// The value of `--since`: a seq or an instant.
public enum HistoryPosition: ExpressibleByArgument, Hashable, Sendable {
  /// The records after this seq (History's since_seq).
  case seq(Int)
  /// The records received after this instant (History's since_time).
  case time(RFC3339Time)

  /// An integer is a seq; anything else must be an RFC 3339 time or date.
  public init?(argument: String) {
    if let seq = Int(argument, radix: 10) {
      guard seq >= 0 else { return nil }
      self = .seq(seq)
    } else if let time = RFC3339Time(parsing: argument) {
      self = .time(time)
    } else {
      return nil
    }
  }

  public static var argumentHint: String? {
    "give a seq (an integer) or an RFC 3339 time such as 2026-12-02T12:00:00Z"
  }

  var seq: Int? {
    if case .seq(let seq) = self { return seq }
    return nil
  }

  var time: RFC3339Time? {
    if case .time(let time) = self { return time }
    return nil
  }
}
