import JSON

/// The pure formatting of chatlinkctl's output: every function takes the daemon's JSON and a
/// colour flag and returns text, so the output is golden-tested without a daemon.
///
/// Human output escapes control characters (a backend could otherwise send terminal escape
/// sequences); `--json` output is each object's compact JSON text, one per line.
public enum Format {
  /// The compact JSON text of one `--json` line.
  public static func json(_ value: JSONValue) -> String {
    value.description
  }

  /// `text` with control characters and bidirectional overrides made visible (`\n`, `\t`,
  /// `\u{1b}`), so one record stays one line and cannot drive the terminal.
  public static func printable(_ text: String) -> String {
    guard text.unicodeScalars.contains(where: needsEscape) else { return text }
    var out = ""
    for scalar in text.unicodeScalars {
      guard needsEscape(scalar) else {
        out.unicodeScalars.append(scalar)
        continue
      }
      switch scalar {
      case "\n": out += "\\n"
      case "\r": out += "\\r"
      case "\t": out += "\\t"
      default: out += "\\u{" + String(scalar.value, radix: 16) + "}"
      }
    }
    return out
  }

  private static func needsEscape(_ scalar: Unicode.Scalar) -> Bool {
    switch scalar.value {
    case 0..<0x20, 0x7F..<0xA0, 0x202A...0x202E, 0x2066...0x2069: true
    default: false
    }
  }

  /// `value` with `digits` digits after the point, rounded: fixed(1.2345, 2) is "1.23".
  public static func fixed(_ value: Double, _ digits: Int) -> String {
    guard value.isFinite else { return "\(value)" }
    var scale = 1.0
    for _ in 0..<digits { scale *= 10 }
    let scaled = (abs(value) * scale).rounded()
    guard scaled < 9e15 else { return "\(value)" }
    let units = Int64(scaled)
    let divisor = Int64(scale)
    let sign = value < 0 && units != 0 ? "-" : ""
    guard digits > 0 else { return sign + String(units) }
    var fraction = String(units % divisor)
    while fraction.count < digits { fraction = "0" + fraction }
    return sign + String(units / divisor) + "." + fraction
  }

  /// `text` padded with spaces on the right to `width` characters.
  static func padRight(_ text: String, _ width: Int) -> String {
    text.count >= width ? text : text + String(repeating: " ", count: width - text.count)
  }

  /// `text` padded with spaces on the left to `width` characters.
  static func padLeft(_ text: String, _ width: Int) -> String {
    text.count >= width ? text : String(repeating: " ", count: width - text.count) + text
  }

  /// "1 message", "2 messages".
  static func plural(_ count: Int, _ noun: String) -> String {
    "\(count) \(noun)\(count == 1 ? "" : "s")"
  }
}

/// ANSI SGR styles for human output; a painter with `enabled == false` returns text as is.
struct Painter {
  enum Style: String {
    case bold = "1"
    case dim = "2"
    case red = "31"
    case green = "32"
    case yellow = "33"
    case blue = "34"
    case magenta = "35"
    case cyan = "36"
  }

  let enabled: Bool

  func callAsFunction(_ text: String, _ styles: Style...) -> String {
    guard enabled, !styles.isEmpty, !text.isEmpty else { return text }
    return "\u{1B}[" + styles.map(\.rawValue).joined(separator: ";") + "m" + text + "\u{1B}[0m"
  }
}
