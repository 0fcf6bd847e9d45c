/// Parsers for the value syntaxes systemd uses, so chatlinkd.conf reads like a unit file.
enum ConfigValues {
  /// yes/no, true/false, on/off, 1/0 (systemd's parse_boolean).
  static func boolean(_ text: String) -> Bool? {
    switch text.lowercased() {
    case "1", "yes", "y", "true", "t", "on": true
    case "0", "no", "n", "false", "f", "off": false
    default: nil
    }
  }

  /// A time span in seconds: "10", "2.5", "500ms", "1min 30s" (systemd.time(7)).
  static func seconds(_ text: String) -> Double? {
    let units: [(String, Double)] = [
      ("usec", 1e-6), ("us", 1e-6), ("msec", 1e-3), ("ms", 1e-3), ("seconds", 1), ("second", 1),
      ("sec", 1), ("s", 1), ("minutes", 60), ("minute", 60), ("min", 60), ("m", 60),
      ("hours", 3600), ("hour", 3600), ("hr", 3600), ("h", 3600), ("days", 86400), ("day", 86400),
      ("d", 86400),
    ]
    var total = 0.0
    var rest = Substring(text.lowercased())
    var sawComponent = false
    while true {
      while rest.first == " " { rest.removeFirst() }
      if rest.isEmpty { break }
      let number = rest.prefix { $0.isNumber || $0 == "." }
      guard !number.isEmpty, let value = Double(number) else { return nil }
      rest = rest.dropFirst(number.count)
      while rest.first == " " { rest.removeFirst() }
      let unitText = rest.prefix { $0.isLetter }
      var factor = 1.0
      if !unitText.isEmpty {
        guard let unit = units.first(where: { $0.0 == unitText }) else { return nil }
        factor = unit.1
        rest = rest.dropFirst(unitText.count)
      }
      total += value * factor
      sawComponent = true
    }
    return sawComponent ? total : nil
  }

  /// A byte size with an optional K, M, G or T suffix (base 1024, as systemd).
  static func size(_ text: String) -> Int? {
    var digits = Substring(text.uppercased())
    if digits.hasSuffix("B") { digits = digits.dropLast() }
    var factor = 1
    if let last = digits.last, let power = ["K": 1, "M": 2, "G": 3, "T": 4][String(last)] {
      factor = 1 << (10 * power)
      digits = digits.dropLast()
    }
    guard !digits.isEmpty, digits.allSatisfy(\.isNumber), let value = Int(digits) else {
      return nil
    }
    let (result, overflow) = value.multipliedReportingOverflow(by: factor)
    return overflow ? nil : result
  }

  /// An octal file mode such as 0660.
  static func mode(_ text: String) -> UInt32? {
    guard !text.isEmpty, text.count <= 4, text.allSatisfy({ ("0"..."7").contains($0) }),
      let mode = UInt32(text, radix: 8)
    else { return nil }
    return mode
  }

  /// A space-separated list (commas also accepted between items).
  static func list(_ text: String) -> [String] {
    text.split(whereSeparator: { $0 == " " || $0 == "," || $0 == "\t" }).map(String.init)
  }
}
