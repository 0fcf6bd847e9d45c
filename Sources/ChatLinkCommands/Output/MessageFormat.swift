import ChatLinkAPI
import JSON

extension Format {
  /// How a message line shows its time.
  public enum Clock: Sendable, Hashable {
    /// "12:00:01", for follow.
    case time
    /// "2026-12-02 12:00:01", for history.
    case dateAndTime
  }

  /// The parts of a stored record that a human line shows.
  struct MessageParts {
    var room: String
    var outgoing: Bool
    /// Set when the data is the chat envelope: {"event":…,"data":{"room_id","message","sender"}}.
    var sender: String?
    var text: String
    var isEnvelope: Bool
  }

  static func parts(of record: StoredRecord) -> MessageParts {
    let data = record.data
    var room = roomLabel(record.room)
    let outgoing = record.direction == .outbound
    if data["event"]?.stringValue != nil, let inner = data["data"], let message = inner["message"] {
      if room == "-" { room = roomLabel(inner["room_id"]) }
      let sender = inner["sender"].flatMap { $0.isNull ? nil : ($0.stringValue ?? $0.description) }
      return MessageParts(
        room: room, outgoing: outgoing, sender: sender.map(printable),
        text: printable(message.stringValue ?? message.description), isEnvelope: true)
    }
    if let event = socketIOEvent(record, room: room, outgoing: outgoing) { return event }
    let text: String
    switch record.type {
    case .binary:
      let base64 = data.stringValue ?? ""
      let padding = base64.reversed().prefix { $0 == "=" }.count
      let size = base64.count / 4 * 3 - padding
      let shown = base64.count > 48 ? String(base64.prefix(48)) + "…" : base64
      text = "[binary, \(plural(max(size, 0), "byte"))] \(shown)"
    default:
      text = printable(data.stringValue ?? data.description)
    }
    return MessageParts(room: room, outgoing: outgoing, sender: nil, text: text, isEnvelope: false)
  }

  /// A Socket.IO event record, {"event":…,"args":[…]}: a chat message when its first argument
  /// carries one (`bob: hello`), else the event's name and arguments (`typing ["bob"]`).
  private static func socketIOEvent(_ record: StoredRecord, room: String, outgoing: Bool)
    -> MessageParts?
  {
    guard record.type == .json, let name = record.data["event"]?.stringValue,
      let args = record.data["args"]?.arrayValue
    else { return nil }
    let first = args.first
    var room = room
    if room == "-" { room = roomLabel(first?["room_id"]) }
    if let message = first?["message"] {
      let sender = first?["sender"].flatMap { $0.isNull ? nil : ($0.stringValue ?? $0.description) }
      return MessageParts(
        room: room, outgoing: outgoing, sender: sender.map(printable),
        text: printable(message.stringValue ?? message.description), isEnvelope: true)
    }
    let text = printable(name) + " " + printable(JSONValue.array(args).description)
    return MessageParts(room: room, outgoing: outgoing, sender: nil, text: text, isEnvelope: false)
  }

  /// "#7", "#ops", or "-" for a record without a room.
  static func roomLabel(_ room: JSONValue?) -> String {
    guard let room, !room.isNull else { return "-" }
    return "#" + printable(room.stringValue ?? room.description)
  }

  /// One stored record as one line: `12:00:01 #7 bob: hello`. Outgoing messages show an arrow
  /// before the sender (`#7 → ops-bot: deploy finished`); data that is not the chat envelope
  /// is shown raw (text as is, JSON compact, binary as base64).
  ///
  /// `seqWidth` (history) puts the right-aligned seq first; `roomWidth` pads the room column.
  public static func message(
    _ record: StoredRecord, colour: Bool, clock: Clock = .time, time: TimeDisplay = .utc,
    seqWidth: Int? = nil, roomWidth: Int = 0
  ) -> String {
    let paint = Painter(enabled: colour)
    let parts = parts(of: record)
    var line = ""
    if let seqWidth {
      line += paint(padLeft(String(record.seq), seqWidth), .dim)
      line += " "
    }
    line += paint(timeText(record.time, clock: clock, time: time), .dim) + " "
    line += paint(padRight(parts.room, roomWidth), .cyan) + " "
    if parts.outgoing { line += paint("→", .green) + " " }
    if let sender = parts.sender {
      line += paint(sender, .bold) + ": " + parts.text
    } else {
      line += parts.text
    }
    return line
  }

  /// `chatlinkctl history`: one line per record, seq and room columns aligned across records.
  public static func history(_ records: [StoredRecord], colour: Bool, time: TimeDisplay = .utc)
    -> [String]
  {
    let seqWidth = records.map { String($0.seq).count }.max() ?? 1
    let roomWidth = records.map { parts(of: $0).room.count }.max() ?? 1
    return records.map {
      message(
        $0, colour: colour, clock: .dateAndTime, time: time, seqWidth: seqWidth,
        roomWidth: roomWidth)
    }
  }

  /// An RFC 3339 time as the clock shows it; unreadable times are shown as they are.
  static func timeText(_ text: String, clock: Clock, time: TimeDisplay) -> String {
    guard let instant = RFC3339Time(parsing: text) else { return printable(text) }
    let (date, hms) = instant.dateAndTime(in: time)
    return clock == .time ? hms : "\(date) \(hms)"
  }
}
