import JSON

extension Format {
  /// One Send answer: `queued 5f1c9a2e0b7d4e31 (count 12)`; the count is the message's
  /// outbox counter (monotonic, sent as the envelope's `count`).
  public static func receipt(_ receipt: JSONValue, colour: Bool) -> String {
    let paint = Painter(enabled: colour)
    let state = printable(receipt["state"]?.stringValue ?? "queued")
    let id = printable(receipt["id"]?.stringValue ?? "?")
    let count = receipt["count"]?.intValue ?? 0
    let style: Painter.Style =
      switch state {
      case "confirmed": .green
      case "sent": .cyan
      default: .yellow
      }
    return paint(state, style) + " " + paint(id, .bold) + " (count \(count))"
  }

  /// The summary of `send -`: `queued 1000 messages; the last is 5f1c9a2e0b7d4e31 (count 1000)`.
  public static func sendSummary(count: Int, last: JSONValue?, colour: Bool) -> String {
    let paint = Painter(enabled: colour)
    guard count > 0 else { return "no messages: standard input had no lines" }
    var text = paint("queued", .yellow) + " " + plural(count, "message")
    if let last, let id = last["id"]?.stringValue {
      text += "; the last is " + paint(printable(id), .bold)
      if let counter = last["count"]?.intValue { text += " (count \(counter))" }
    }
    return text
  }

  /// `chatlinkctl ping`: `round trip to the backend: 1.234 ms`.
  public static func ping(milliseconds: Double, colour: Bool) -> String {
    "round trip to the backend: " + Painter(enabled: colour)(fixed(milliseconds, 3), .bold) + " ms"
  }

  /// The --json line of `rooms`: `{"rooms":["7","ops"]}`.
  public static func roomsObject(_ rooms: [String]) -> JSONValue {
    .object(["rooms": .array(rooms.map(JSONValue.string))])
  }

  /// The --json line of `ping`: `{"rtt_ms":1.234}`.
  public static func pingObject(milliseconds: Double) -> JSONValue {
    .object(["rtt_ms": .double(milliseconds)])
  }
}
