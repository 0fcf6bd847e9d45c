import ChatLinkAPI
import ChatLinkClient

/// `chatlinkctl send [--room R] [--wait] [--id ID] TEXT|-`.
public struct SendCommand: ParsableCommand {
  public static var configuration: CommandConfiguration {
    CommandConfiguration(
      commandName: "send",
      abstract: "Queue a message for the backend.",
      discussion: """
        send returns once the message is durable in the daemon's outbox; chatlinkd
        delivers it when connected, at least once and in order per room. With --wait,
        send returns only after the backend has confirmed it.

        With - as the text, every line of standard input is one message (empty lines
        are skipped), all sent over one connection as fast as the daemon takes them.
        A summary line follows; with --json, one receipt per message instead.
        """)
  }

  @OptionGroup(title: "Global Options") public var globals: GlobalOptions

  @Option(help: "The room, as the backend names it (default: the daemon's default room).")
  public var room: String?

  @Flag(help: "Wait until the backend has confirmed the message.")
  public var wait = false

  @Option(help: "The client message id; the daemon keeps one message per id (default: a new id).")
  public var id: String?

  @Argument(help: "The message, or - to send each line of standard input as a message.")
  public var text: String

  /// The command before parsing.
  public init() {}

  public mutating func validate() throws {
    if text == "-" {
      if wait { throw ValidationError("--wait sends one message; it cannot be used with '-'") }
      if id != nil { throw ValidationError("--id names one message; it cannot be used with '-'") }
    } else if text.isEmpty {
      throw ValidationError("The message is empty")
    }
  }

  public mutating func run(_ context: CommandContext) throws {
    let client = try globals.connect(context)
    guard text == "-" else {
      let receipt = try client.send(SendParameters(room: room, text: text, id: id), wait: wait)
      context.write(
        globals.json
          ? Format.json(receipt.json) : Format.receipt(receipt.value, colour: context.colour))
      return
    }
    var count = 0
    var last: SendReceipt?
    let json = globals.json
    do {
      var lines = InputLines(read: context.readInput)
      try client.sendMany(
        room: room,
        onReceipts: { batch in
          // A receipt for each message only where each is printed.
          if json {
            for receipt in batch.receipts { context.write(Format.json(receipt.json)) }
          }
          guard let lastID = batch.ids.last else { return }
          count += batch.ids.count
          last = SendReceipt(
            id: lastID, state: batch.state, count: batch.count + batch.ids.count - 1)
        }, next: { lines.next($0) })
    } catch {
      if !json, count > 0 {
        context.write(Format.sendSummary(count: count, last: last, colour: context.colour))
      }
      throw error
    }
    if !json { context.write(Format.sendSummary(count: count, last: last, colour: context.colour)) }
  }
}
