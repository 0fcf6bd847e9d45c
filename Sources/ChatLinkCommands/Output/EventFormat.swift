import JSON

extension Format {
  /// One Subscribe event as one line of `chatlinkctl follow`:
  ///
  ///     12:00:01 #7 bob: hello
  ///     12:00:04 connected (subprotocol chat, extensions permessage-deflate)
  ///     12:00:09 disconnected (1006): connection reset by peer
  ///     12:00:09 error: the backend refused the credentials (HTTP 401)
  ///     12:00:10 status: Reconnecting to ws://… in 1.2 s
  ///
  /// Messages use the stored record's own time; other events the event's time.
  public static func event(_ event: JSONValue, colour: Bool, time: TimeDisplay = .utc) -> String {
    let paint = Painter(enabled: colour)
    let name = event["event"]?.stringValue ?? ""
    func field(_ key: String) -> String? {
      guard let value = event[key], !value.isNull else { return nil }
      return printable(value.stringValue ?? value.description)
    }
    if name == "message", let record = event["record"], record.objectValue != nil {
      return message(record, colour: colour, clock: .time, time: time)
    }
    let clock = paint(timeText(event["time"], clock: .time, time: time), .dim) + " "
    switch name {
    case "connected":
      var agreed: [String] = []
      if let subprotocol = field("subprotocol") { agreed.append("subprotocol \(subprotocol)") }
      if let extensions = field("extensions") { agreed.append("extensions \(extensions)") }
      let detail = agreed.isEmpty ? "" : " (" + agreed.joined(separator: ", ") + ")"
      return clock + paint("connected", .green, .bold) + detail
    case "disconnected":
      var text = paint("disconnected", .yellow, .bold)
      if let code = field("code") { text += " (\(code))" }
      if let reason = field("reason"), !reason.isEmpty { text += ": " + reason }
      return clock + text
    case "sent", "confirmed":
      var text = paint(name, .dim) + " " + (field("id") ?? "?")
      if let room = event["room"], !room.isNull { text += " " + paint(roomLabel(room), .cyan) }
      return clock + text
    case "error":
      return clock + paint("error", .red, .bold) + ": " + paint(field("text") ?? "", .red)
    case "status":
      return clock + paint("status", .dim) + ": " + (field("text") ?? "")
    default:
      var rest = event
      if case .object(let members) = event {
        rest = .object(members.filter { $0.key != "event" && $0.key != "time" })
      }
      return clock + paint(printable(name.isEmpty ? "event" : name), .magenta) + " "
        + printable(rest.description)
    }
  }
}
