@preconcurrency import Glibc

/// Wall-clock time in microseconds since the Unix epoch, formatted as RFC 3339 UTC.
public struct Timestamp: Sendable, Hashable, Comparable {
  /// Microseconds since 1970-01-01T00:00:00Z.
  public var microseconds: Int64

  /// Creates a timestamp.
  public init(microseconds: Int64) {
    self.microseconds = microseconds
  }

  /// The current wall-clock time (CLOCK_REALTIME).
  public static func now() -> Timestamp {
    var ts = timespec()
    clock_gettime(CLOCK_REALTIME, &ts)
    return Timestamp(microseconds: Int64(ts.tv_sec) * 1_000_000 + Int64(ts.tv_nsec) / 1000)
  }

  public static func < (lhs: Timestamp, rhs: Timestamp) -> Bool {
    lhs.microseconds < rhs.microseconds
  }

  /// Appends "2026-12-02T12:34:56.123456Z".
  public func append(to out: inout [UInt8]) {
    let seconds =
      microseconds >= 0 ? microseconds / 1_000_000 : (microseconds - 999_999) / 1_000_000
    let fraction = Int(microseconds - seconds * 1_000_000)
    let days = seconds >= 0 ? seconds / 86400 : (seconds - 86399) / 86400
    let secondOfDay = Int(seconds - days * 86400)
    let (year, month, day) = Self.civil(fromDays: Int(days))
    func digits(_ value: Int, _ width: Int) {
      var divisor = 1
      for _ in 1..<width { divisor *= 10 }
      var v = value
      while divisor > 0 {
        out.append(UInt8(ascii: "0") + UInt8(v / divisor % 10))
        v %= divisor
        divisor /= 10
      }
    }
    digits(year, 4)
    out.append(UInt8(ascii: "-"))
    digits(month, 2)
    out.append(UInt8(ascii: "-"))
    digits(day, 2)
    out.append(UInt8(ascii: "T"))
    digits(secondOfDay / 3600, 2)
    out.append(UInt8(ascii: ":"))
    digits(secondOfDay / 60 % 60, 2)
    out.append(UInt8(ascii: ":"))
    digits(secondOfDay % 60, 2)
    out.append(UInt8(ascii: "."))
    digits(fraction, 6)
    out.append(UInt8(ascii: "Z"))
  }

  /// The RFC 3339 text.
  public var rfc3339: String {
    var out: [UInt8] = []
    append(to: &out)
    return String(decoding: out, as: UTF8.self)
  }

  /// Parses an RFC 3339 date-time ("2026-12-02T12:00:00Z", "2026-12-02 14:00:00.5+02:00",
  /// any number of fraction digits, kept to microseconds) or a full date ("2026-12-02",
  /// midnight UTC). Calendar dates are checked (no 2025-02-29); a leap second (:60) reads as
  /// the last microsecond of :59.
  public init?(rfc3339 text: String) {
    let b = Array(text.utf8)
    func number(_ from: Int, _ length: Int) -> Int? {
      guard from + length <= b.count else { return nil }
      var value = 0
      for byte in b[from..<(from + length)] {
        guard byte.isDigit else { return nil }
        value = value * 10 + Int(byte - UInt8(ascii: "0"))
      }
      return value
    }
    guard b.count >= 10, b[4] == UInt8(ascii: "-"), b[7] == UInt8(ascii: "-"),
      let year = number(0, 4), let month = number(5, 2), let day = number(8, 2),
      (1...12).contains(month), day >= 1, day <= Self.daysIn(month: month, year: year)
    else { return nil }
    let days = Int64(Self.days(fromCivil: year, month, day))
    if b.count == 10 {
      microseconds = days * 86_400_000_000
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
      while index < b.count, b[index].isDigit {
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
    let leap = second == 60
    let secondOfDay = Int64(hour * 3600 + minute * 60 + (leap ? 59 : second))
    let seconds = days * 86400 + secondOfDay - Int64(offset)
    microseconds = seconds * 1_000_000 + Int64(leap ? 999_999 : micros)
  }

  /// The calendar date and time of day in UTC shifted by `offsetSeconds` (e.g. a local
  /// time zone's offset), for display.
  public func civil(offsetSeconds: Int64 = 0) -> (
    year: Int, month: Int, day: Int, hour: Int, minute: Int, second: Int, microsecond: Int
  ) {
    let shifted = microseconds + offsetSeconds * 1_000_000
    let seconds = shifted >= 0 ? shifted / 1_000_000 : (shifted - 999_999) / 1_000_000
    let days = seconds >= 0 ? seconds / 86400 : (seconds - 86399) / 86400
    let secondOfDay = Int(seconds - days * 86400)
    let (year, month, day) = Self.civil(fromDays: Int(days))
    return (
      year, month, day, secondOfDay / 3600, secondOfDay / 60 % 60, secondOfDay % 60,
      Int(shifted - seconds * 1_000_000)
    )
  }

  static func daysIn(month: Int, year: Int) -> Int {
    switch month {
    case 2: (year % 4 == 0 && year % 100 != 0) || year % 400 == 0 ? 29 : 28
    case 4, 6, 9, 11: 30
    default: 31
    }
  }

  /// Howard Hinnant's days-from-civil algorithm (proleptic Gregorian calendar).
  static func days(fromCivil year: Int, _ month: Int, _ day: Int) -> Int {
    let y = month <= 2 ? year - 1 : year
    let era = (y >= 0 ? y : y - 399) / 400
    let yoe = y - era * 400
    let doy = (153 * (month + (month > 2 ? -3 : 9)) + 2) / 5 + day - 1
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy
    return era * 146097 + doe - 719468
  }

  /// The inverse of `days(fromCivil:)`.
  static func civil(fromDays days: Int) -> (Int, Int, Int) {
    let z = days + 719468
    let era = (z >= 0 ? z : z - 146096) / 146097
    let doe = z - era * 146097
    let yoe = (doe - doe / 1460 + doe / 36524 - doe / 146096) / 365
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100)
    let mp = (5 * doy + 2) / 153
    let day = doy - (153 * mp + 2) / 5 + 1
    let month = mp < 10 ? mp + 3 : mp - 9
    return (yoe + era * 400 + (month <= 2 ? 1 : 0), month, day)
  }
}

/// Formats timestamps quickly: the whole text of the last time written is kept, and while
/// the microsecond stays the same (the store stamps every message of one socket read with the
/// read's time) it is copied as it is; otherwise the "YYYY-MM-DDTHH:MM:SS." part is reused
/// while the second stays the same, which at a few hundred thousand records a second is
/// nearly every record.
///
/// The text lives inline (a SIMD vector used as 32 bytes of storage), not in an array: a
/// write then costs no reference counting and no heap access besides the copy.
public struct TimestampFormatter: Sendable {
  private var second: Int64 = .min
  private var micros: Int64 = .min
  /// The text of `micros` (`length` bytes), valid once `micros` is set.
  private var text = SIMD32<UInt8>()

  /// Creates a formatter with an empty cache.
  public init() {}

  /// The length of what `write` writes.
  public static let length = 27

  /// Appends `time` as RFC 3339 UTC with microseconds.
  public mutating func append(_ time: Timestamp, to out: inout [UInt8]) {
    out.append(maxCount: Self.length) { write(time, to: &$0) }
  }

  /// Writes `time` as RFC 3339 UTC with microseconds (`length` bytes).
  public mutating func write(_ time: Timestamp, to writer: inout ByteWriter) {
    let micros = time.microseconds
    if micros != self.micros { format(micros, time) }
    withUnsafeBytes(of: &text) {
      writer.write(UnsafeRawBufferPointer(rebasing: $0[..<Self.length]))
    }
  }

  /// Puts the text of `time` (whose microseconds are `micros`) into the cache.
  private mutating func format(_ micros: Int64, _ time: Timestamp) {
    let second = micros >= 0 ? micros / 1_000_000 : (micros - 999_999) / 1_000_000
    withUnsafeMutableBytes(of: &text) { raw in
      let start = raw.baseAddress!.assumingMemoryBound(to: UInt8.self)
      if second != self.second {
        var full: [UInt8] = []
        time.append(to: &full)
        full.withUnsafeBytes { raw.copyMemory(from: UnsafeRawBufferPointer(rebasing: $0[..<20])) }
      }
      var tail = ByteWriter(start + 20)
      tail.writeDecimal(Int(micros - second * 1_000_000), width: 6)
      tail.write(UInt8(ascii: "Z"))
    }
    self.second = second
    self.micros = micros
  }
}
