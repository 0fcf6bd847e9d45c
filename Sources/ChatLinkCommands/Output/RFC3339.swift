@preconcurrency import Glibc

/// An instant read from RFC 3339 text, as the store and the daemon's events write it.
public struct RFC3339Time: Sendable, Hashable {
  /// Seconds since 1970-01-01T00:00:00Z.
  public var seconds: Int64
  /// Microseconds within the second.
  public var microseconds: Int

  /// Creates an instant.
  public init(seconds: Int64, microseconds: Int = 0) {
    self.seconds = seconds
    self.microseconds = microseconds
  }

  /// Parses an RFC 3339 date-time ("2026-12-02T12:00:00Z", "2026-12-02 14:00:00.5+02:00") or
  /// a full date ("2026-12-02", midnight UTC). Returns nil for anything else.
  public init?(parsing text: String) {
    let b = Array(text.utf8)
    func number(_ from: Int, _ length: Int) -> Int? {
      guard from + length <= b.count else { return nil }
      var value = 0
      for byte in b[from..<(from + length)] {
        guard byte >= UInt8(ascii: "0"), byte <= UInt8(ascii: "9") else { return nil }
        value = value * 10 + Int(byte - UInt8(ascii: "0"))
      }
      return value
    }
    guard b.count >= 10, b[4] == UInt8(ascii: "-"), b[7] == UInt8(ascii: "-"),
      let year = number(0, 4), let month = number(5, 2), let day = number(8, 2),
      (1...12).contains(month), day >= 1, day <= Self.daysIn(month: month, year: year)
    else { return nil }
    let days = Self.days(year: year, month: month, day: day)
    if b.count == 10 {
      self.init(seconds: days * 86400)
      return
    }
    guard b.count >= 20, [UInt8(ascii: "T"), UInt8(ascii: "t"), UInt8(ascii: " ")].contains(b[10]),
      b[13] == UInt8(ascii: ":"), b[16] == UInt8(ascii: ":"),
      let hour = number(11, 2), let minute = number(14, 2), let second = number(17, 2),
      hour < 24, minute < 60, second <= 60
    else { return nil }
    var index = 19
    var micros = 0
    if b[index] == UInt8(ascii: ".") {
      index += 1
      var digits = 0
      while index < b.count, b[index] >= UInt8(ascii: "0"), b[index] <= UInt8(ascii: "9") {
        if digits < 6 { micros = micros * 10 + Int(b[index] - UInt8(ascii: "0")) }
        digits += 1
        index += 1
      }
      guard digits > 0 else { return nil }
      for _ in min(digits, 6)..<6 { micros *= 10 }
    }
    guard index < b.count else { return nil }
    var offset = 0
    switch b[index] {
    case UInt8(ascii: "Z"), UInt8(ascii: "z"):
      guard index + 1 == b.count else { return nil }
    case UInt8(ascii: "+"), UInt8(ascii: "-"):
      guard index + 6 == b.count, b[index + 3] == UInt8(ascii: ":"),
        let hours = number(index + 1, 2), let minutes = number(index + 4, 2), hours < 24,
        minutes < 60
      else { return nil }
      offset = (hours * 60 + minutes) * 60 * (b[index] == UInt8(ascii: "-") ? -1 : 1)
    default:
      return nil
    }
    // A leap second (:60) is read as the last microsecond of :59.
    let leap = second == 60
    let secondOfDay = Int64(hour * 3600 + minute * 60 + (leap ? 59 : second))
    self.init(
      seconds: days * 86400 + secondOfDay - Int64(offset), microseconds: leap ? 999_999 : micros)
  }

  /// "2026-12-02T12:00:00.000000Z": the store's own spelling, so the daemon compares like with
  /// like.
  public var utcText: String {
    let (date, time) = Self.civil(seconds: seconds)
    var fraction = String(microseconds)
    while fraction.count < 6 { fraction = "0" + fraction }
    return "\(date)T\(time).\(fraction)Z"
  }

  /// "2026-12-02" and "12:00:00" in `display`'s time zone.
  public func dateAndTime(in display: TimeDisplay) -> (date: String, time: String) {
    switch display {
    case .utc:
      return Self.civil(seconds: seconds)
    case .local:
      var t = time_t(seconds)
      var parts = tm()
      guard localtime_r(&t, &parts) != nil else { return Self.civil(seconds: seconds) }
      return Self.civil(seconds: seconds + Int64(parts.tm_gmtoff))
    }
  }

  private static func two(_ value: Int) -> String {
    value < 10 ? "0\(value)" : "\(value)"
  }

  private static func civil(seconds: Int64) -> (date: String, time: String) {
    let days = seconds >= 0 ? seconds / 86400 : (seconds - 86399) / 86400
    let secondOfDay = Int(seconds - days * 86400)
    // Howard Hinnant's civil_from_days.
    let z = days + 719_468
    let era = (z >= 0 ? z : z - 146_096) / 146_097
    let doe = z - era * 146_097
    let yoe = (doe - doe / 1460 + doe / 36524 - doe / 146_096) / 365
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100)
    let mp = (5 * doy + 2) / 153
    let day = Int(doy - (153 * mp + 2) / 5 + 1)
    let month = Int(mp < 10 ? mp + 3 : mp - 9)
    let year = Int(yoe + era * 400) + (month <= 2 ? 1 : 0)
    var yearText = String(year)
    while yearText.count < 4 { yearText = "0" + yearText }
    let date = "\(yearText)-\(two(month))-\(two(day))"
    let time =
      "\(two(secondOfDay / 3600)):\(two(secondOfDay / 60 % 60)):\(two(secondOfDay % 60))"
    return (date, time)
  }

  private static func days(year: Int, month: Int, day: Int) -> Int64 {
    // Howard Hinnant's days_from_civil.
    let y = Int64(month <= 2 ? year - 1 : year)
    let era = (y >= 0 ? y : y - 399) / 400
    let yoe = y - era * 400
    let m = Int64(month)
    let doy = (153 * (m > 2 ? m - 3 : m + 9) + 2) / 5 + Int64(day) - 1
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy
    return era * 146_097 + doe - 719_468
  }

  private static func daysIn(month: Int, year: Int) -> Int {
    switch month {
    case 2: (year % 4 == 0 && year % 100 != 0) || year % 400 == 0 ? 29 : 28
    case 4, 6, 9, 11: 30
    default: 31
    }
  }
}
