import ChatLinkAPI
import JSON

extension Format {
  /// `chatlinkctl status`: an aligned key/value block of the GetStatus status, keys
  /// right-aligned as `systemctl status` does. Optional fields appear only when set.
  public static func status(_ status: DaemonStatus, colour: Bool) -> String {
    let paint = Painter(enabled: colour)
    let state = printable(status.state.rawValue)
    var rows: [(key: String, value: String)] = []
    if let instance = status.instance { rows.append(("Instance", printable(instance))) }
    rows += [
      ("State", paint(state, stateStyle(status.state, failing: status.lastError != nil))),
      ("Status", printable(status.text)),
      ("URL", printable(status.url)),
      ("Protocol", printable(status.protocol)),
      (
        "Rooms", status.rooms.isEmpty ? "none" : status.rooms.map(printable).joined(separator: ", ")
      ),
    ]
    if let subprotocol = status.subprotocol { rows.append(("Subprotocol", printable(subprotocol))) }
    if let extensions = status.extensions { rows.append(("Extensions", printable(extensions))) }
    if let session = status.session {
      let namespace = status.namespace.map { " (namespace \(printable($0)))" } ?? ""
      rows.append(("Session", printable(session) + namespace))
    }
    if let note = status.sessionNote { rows.append(("Session note", printable(note))) }
    if let retry = status.retryIn { rows.append(("Retry in", fixed(retry, 1) + " s")) }
    if let error = status.lastError { rows.append(("Last error", paint(printable(error), .red))) }
    if let failure = status.lastFailure {
      rows.append(("Last refused", paint(printable(failure), .red)))
    }
    if let error = status.storeError {
      rows.append(("Store error", paint(printable(error), .red, .bold)))
    }
    if let delivery = status.delivery { rows.append(("Inbound", printable(delivery))) }
    rows.append(("Received", String(status.received)))
    if status.duplicatesDropped > 0 {
      rows.append(("Duplicates", "\(status.duplicatesDropped) dropped"))
    }
    if status.historyGaps > 0 {
      rows.append(("History gaps", paint("\(status.historyGaps) (messages may be missing)", .red)))
    }
    if !status.catchingUp.isEmpty {
      let rooms = status.catchingUp.map { "\(printable($0.room)) (\($0.caughtUp) so far)" }
      rows.append(("Catching up", rooms.joined(separator: ", ")))
    }
    rows.append(("Sent", String(status.sent)))
    rows.append(("Confirmed", String(status.confirmed)))
    if status.failed > 0 { rows.append(("Refused", String(status.failed))) }
    rows += [
      ("Outbox", String(status.outbox)),
      ("Connects", String(status.connects)),
      ("Last seq", "\(status.lastSeq) (durable \(status.durableSeq))"),
      ("Store", printable(status.storePath)),
      ("Version", printable(status.version)),
    ]
    let width = rows.map(\.key.count).max() ?? 0
    return rows.map { padLeft($0.key, width) + ": " + $0.value }.joined(separator: "\n")
  }

  /// One line of `status --watch`: the local time of the poll, the state and the status text.
  public static func statusChange(
    _ status: DaemonStatus, at microseconds: Int64, colour: Bool, time: TimeDisplay = .utc
  ) -> String {
    let paint = Painter(enabled: colour)
    let state = printable(status.state.rawValue)
    let clock = clockText(microseconds: microseconds, time: time)
    return paint(clock, .dim) + " "
      + paint(padRight(state, 10), stateStyle(status.state, failing: status.lastError != nil))
      + " " + printable(status.text)
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

  static func stateStyle(_ state: DaemonState, failing: Bool) -> Painter.Style {
    switch state {
    case .open: .green
    case .waiting: failing ? .red : .yellow
    case .connecting, .tls, .upgrading, .closing: .yellow
    default: .dim
    }
  }
}
