import ChatLinkAPI
import JSON

extension Format {
  /// One Subscribe event as one line of `chatlinkctl follow`:
  ///
  ///     12:00:01 #7 bob: hello
  ///     12:00:04 connected (subprotocol chat, extensions permessage-deflate)
  ///     12:00:09 disconnected (1006): connection reset by peer
  ///     12:00:09 error: the backend refused the credentials (HTTP 401)
  ///     12:00:09 failed 5f1c9a2e #7: not allowed
  ///     12:00:10 status: Reconnecting to ws://… in 1.2 s
  ///
  /// Messages use the stored record's own time; other events the event's time.
  public static func event(_ event: DaemonEvent, colour: Bool, time: TimeDisplay = .utc) -> String {
    let paint = Painter(enabled: colour)
    var clock: String { paint(timeText(event.time, clock: .time, time: time), .dim) + " " }
    switch event {
    case .message(_, let record, _, _):
      return message(record, colour: colour, clock: .time, time: time)
    case .connected(_, let subprotocol, let extensions):
      var agreed: [String] = []
      if let subprotocol { agreed.append("subprotocol \(printable(subprotocol))") }
      if let extensions { agreed.append("extensions \(printable(extensions))") }
      let detail = agreed.isEmpty ? "" : " (" + agreed.joined(separator: ", ") + ")"
      return clock + paint("connected", .green, .bold) + detail
    case .disconnected(_, let reason, let code):
      var text = paint("disconnected", .yellow, .bold)
      if let code { text += " (\(code))" }
      if !reason.isEmpty { text += ": " + printable(reason) }
      return clock + text
    case .sent(_, let id, let room), .confirmed(_, let id, let room):
      var text = paint(event.name, .dim) + " " + printable(id)
      if let room { text += " " + paint(roomLabel(.string(room)), .cyan) }
      return clock + text
    case .failed(_, let id, let room, let reason):
      var text = paint("failed", .red, .bold) + " " + printable(id)
      if let room { text += " " + paint(roomLabel(.string(room)), .cyan) }
      return clock + text + ": " + paint(printable(reason), .red)
    case .error(_, let text):
      return clock + paint("error", .red, .bold) + ": " + paint(printable(text), .red)
    case .status(_, let text):
      return clock + paint("status", .dim) + ": " + printable(text)
    case .unknown(let name, _, let fields):
      return clock + paint(printable(name.isEmpty ? "event" : name), .magenta) + " "
        + printable(fields.description)
    }
  }
}
