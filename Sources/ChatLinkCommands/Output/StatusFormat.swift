import JSON

extension Format {
  /// `chatlinkctl status`: an aligned key/value block of the GetStatus `status` object, keys
  /// right-aligned as `systemctl status` does. Optional fields appear only when set.
  public static func status(_ status: JSONValue, colour: Bool) -> String {
    let paint = Painter(enabled: colour)
    func string(_ key: String) -> String? {
      guard let value = status[key], !value.isNull else { return nil }
      return printable(value.stringValue ?? value.description)
    }
    func count(_ key: String) -> String { status[key]?.intValue.map { String($0) } ?? "0" }

    let state = string("state") ?? "unknown"
    var rows: [(key: String, value: String)] = [
      ("State", paint(state, stateStyle(state, failing: string("last_error") != nil))),
      ("Status", string("text") ?? ""),
      ("URL", string("url") ?? ""),
    ]
    let rooms = status["rooms"]?.arrayValue?.map { printable($0.stringValue ?? $0.description) }
    rows.append(("Rooms", rooms.map { $0.isEmpty ? "none" : $0.joined(separator: ", ") } ?? "none"))
    if let subprotocol = string("subprotocol") { rows.append(("Subprotocol", subprotocol)) }
    if let extensions = string("extensions") { rows.append(("Extensions", extensions)) }
    if let retry = status["retry_in"]?.doubleValue {
      rows.append(("Retry in", fixed(retry, 1) + " s"))
    }
    if let error = string("last_error") { rows.append(("Last error", paint(error, .red))) }
    if let error = string("store_error") {
      rows.append(("Store error", paint(error, .red, .bold)))
    }
    rows += [
      ("Received", count("received")),
      ("Sent", count("sent")),
      ("Confirmed", count("confirmed")),
      ("Outbox", count("outbox")),
      ("Connects", count("connects")),
      ("Last seq", "\(count("last_seq")) (durable \(count("durable_seq")))"),
      ("Store", string("store_path") ?? ""),
      ("Version", string("version") ?? ""),
    ]
    let width = rows.map(\.key.count).max() ?? 0
    return rows.map { padLeft($0.key, width) + ": " + $0.value }.joined(separator: "\n")
  }

  /// One line of `status --watch`: the local time of the poll, the state and the status text.
  public static func statusChange(
    _ status: JSONValue, at microseconds: Int64, colour: Bool, time: TimeDisplay = .utc
  ) -> String {
    let paint = Painter(enabled: colour)
    let state = printable(status["state"]?.stringValue ?? "unknown")
    let failing = status["last_error"].map { !$0.isNull } ?? false
    let clock = clockText(microseconds: microseconds, time: time)
    return paint(clock, .dim) + " "
      + paint(padRight(state, 10), stateStyle(state, failing: failing)) + " "
      + printable(status["text"]?.stringValue ?? "")
  }

  /// One line of `status --watch` when the daemon cannot be reached.
  public static func watchFailure(
    _ message: String, at microseconds: Int64, colour: Bool, time: TimeDisplay = .utc
  ) -> String {
    let paint = Painter(enabled: colour)
    return paint(clockText(microseconds: microseconds, time: time), .dim) + " "
      + paint(padRight("down", 10), .red) + " " + printable(message)
  }

  static func clockText(microseconds: Int64, time: TimeDisplay) -> String {
    let seconds =
      microseconds >= 0 ? microseconds / 1_000_000 : (microseconds - 999_999) / 1_000_000
    return RFC3339Time(seconds: seconds).dateAndTime(in: time).time
  }

  private static func stateStyle(_ state: String, failing: Bool) -> Painter.Style {
    switch state {
    case "open": .green
    case "waiting": failing ? .red : .yellow
    case "connecting", "tls", "upgrading", "closing": .yellow
    default: .dim
    }
  }
}
