import ChatLinkAPI
import ChatLinkClient

extension Format {
  /// `chatlinkctl instances`: one row per control socket, columns aligned; an unreachable
  /// daemon's row says why in place of its state.
  public static func instances(_ reports: [InstanceReport], directory: String, colour: Bool)
    -> String
  {
    guard !reports.isEmpty else {
      return "No chatlinkd control sockets in \(printable(directory))."
    }
    let paint = Painter(enabled: colour)
    let header = ["INSTANCE", "STATE", "OUTBOX", "IN", "OUT", "URL"]
    var rows: [[(text: String, painted: String)]] = []
    for report in reports {
      let name = printable(report.instance ?? "-")
      if let status = report.status?.value {
        let state = printable(status.state.rawValue)
        let failing = status.lastError != nil || status.storeError != nil
        rows.append([
          (name, name), (state, paint(state, stateStyle(status.state, failing: failing))),
          plain(String(status.outbox)), plain(String(status.received)),
          plain(String(status.confirmed)), plain(printable(status.url)),
        ])
      } else {
        let why = printable(report.error ?? "unreachable")
        rows.append([
          (name, name), ("unreachable", paint("unreachable", .red)), plain("-"), plain("-"),
          plain("-"), (why, paint(why, .dim)),
        ])
      }
    }
    let widths = header.indices.map { column in
      max(header[column].count, rows.map { $0[column].text.count }.max() ?? 0)
    }
    let numeric: Set<Int> = [2, 3, 4]
    func line(_ cells: [(text: String, painted: String)]) -> String {
      cells.indices.map { column in
        let (text, painted) = cells[column]
        if column == cells.count - 1 { return painted }
        let gap = String(repeating: " ", count: widths[column] - text.count)
        return numeric.contains(column) ? gap + painted : painted + gap
      }.joined(separator: "  ")
    }
    return ([line(header.map(plain))] + rows.map(line)).joined(separator: "\n")
  }

  private static func plain(_ text: String) -> (text: String, painted: String) { (text, text) }
}
