import ChatLinkAPI
import JSON

extension Format {
  /// One Send answer: `queued 5f1c9a2e0b7d4e31 (count 12)`; the count is the message's
  /// outbox counter (monotonic, sent as the envelope's `count`).
  public static func receipt(_ receipt: SendReceipt, colour: Bool) -> String {
    let paint = Painter(enabled: colour)
    let style: Painter.Style =
      switch receipt.state {
      case .confirmed: .green
      case .sent: .cyan
      default: .yellow
      }
    return paint(printable(receipt.state.rawValue), style) + " "
      + paint(printable(receipt.id), .bold) + " (count \(receipt.count))"
  }

  /// The summary of `send -`: `queued 1000 messages; the last is 5f1c9a2e0b7d4e31 (count 1000)`.
  public static func sendSummary(count: Int, last: SendReceipt?, colour: Bool) -> String {
    let paint = Painter(enabled: colour)
    guard count > 0 else { return "no messages: standard input had no lines" }
    var text = paint("queued", .yellow) + " " + plural(count, "message")
    if let last {
      text += "; the last is " + paint(printable(last.id), .bold) + " (count \(last.count))"
    }
    return text
  }

  /// `chatlinkctl ping`: `round trip to the backend: 1.234 ms`.
  public static func ping(milliseconds: Double, colour: Bool) -> String {
    "round trip to the backend: " + Painter(enabled: colour)(fixed(milliseconds, 3), .bold) + " ms"
  }

  /// The --json line of `rooms`: `{"rooms":["7","ops"]}`.
  public static func roomsObject(_ rooms: [String]) -> JSONValue {
    ListRoomsReply(rooms: rooms).json
  }

  /// The --json line of `ping`: `{"rtt_ms":1.234}`.
  public static func pingObject(milliseconds: Double) -> JSONValue {
    PingReply(rttMs: milliseconds).json
  }
}
