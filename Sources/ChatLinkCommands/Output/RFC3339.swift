@preconcurrency import Glibc
import JSON

/// An instant read from RFC 3339 text, as the store and the daemon's events write it; a thin
/// view of the shared `Timestamp`, which owns the parsing and the calendar arithmetic.
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

  /// Parses an RFC 3339 date-time or a full date (midnight UTC); nil for anything else.
  public init?(parsing text: String) {
    guard let time = Timestamp(rfc3339: text) else { return nil }
    let micros = time.microseconds
    let seconds = micros >= 0 ? micros / 1_000_000 : (micros - 999_999) / 1_000_000
    self.init(seconds: seconds, microseconds: Int(micros - seconds * 1_000_000))
  }

  private var timestamp: Timestamp {
    Timestamp(microseconds: seconds * 1_000_000 + Int64(microseconds))
  }

  /// "2026-12-02T12:00:00.000000Z": the store's own spelling, so the daemon compares like with
  /// like.
  public var utcText: String { timestamp.rfc3339 }

  /// "2026-12-02" and "12:00:00" in `display`'s time zone.
  public func dateAndTime(in display: TimeDisplay) -> (date: String, time: String) {
    var offset: Int64 = 0
    if display == .local {
      var t = time_t(seconds)
      var parts = tm()
      if localtime_r(&t, &parts) != nil { offset = Int64(parts.tm_gmtoff) }
    }
    let c = timestamp.civil(offsetSeconds: offset)
    var year = String(c.year)
    while year.count < 4 { year = "0" + year }
    return (
      "\(year)-\(Self.two(c.month))-\(Self.two(c.day))",
      "\(Self.two(c.hour)):\(Self.two(c.minute)):\(Self.two(c.second))"
    )
  }

  private static func two(_ value: Int) -> String {
    value < 10 ? "0\(value)" : "\(value)"
  }
}
