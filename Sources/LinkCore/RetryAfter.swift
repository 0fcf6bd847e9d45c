import JSON
import WebSocket

/// How long a `Retry-After` header asks us to wait (RFC 9110 §10.2.3): delay-seconds or an
/// HTTP-date, read against the wall clock time the answer arrived.
public enum RetryAfterDelay {
  /// The span to wait from `now`, or nil when the value cannot be read. A date in the past
  /// means "now" (zero).
  public static func delay(_ value: HTTPResponseHead.RetryAfter, now: Timestamp) -> Duration? {
    switch value {
    case .seconds(let seconds):
      return .seconds(seconds)
    case .date(let text):
      guard let date = HTTPDate.parse(text) else { return nil }
      return .microseconds(max(0, date.microseconds - now.microseconds))
    }
  }
}

/// HTTP-date (RFC 9110 §5.6.7): IMF-fixdate ("Sun, 06 Nov 1994 08:49:37 GMT"), and the
/// obsolete RFC 850 ("Sunday, 06-Nov-94 08:49:37 GMT") and asctime ("Sun Nov  6 08:49:37
/// 1994") forms a recipient must accept.
public enum HTTPDate {
  private static let months = [
    "jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec",
  ]

  public static func parse(_ text: String) -> Timestamp? {
    let words = text.split(whereSeparator: { $0 == " " || $0 == "\t" }).map(String.init)
    var day: Int?
    var month: Int?
    var year: Int?
    var clock: String?
    if words.count == 6, words[5] == "GMT", words[0].hasSuffix(",") {
      // IMF-fixdate: day-name "," SP day SP month SP year SP time SP "GMT"
      day = Int(words[1])
      month = monthNumber(words[2])
      year = Int(words[3])
      clock = words[4]
    } else if words.count == 4, words[3] == "GMT", words[0].hasSuffix(",") {
      // RFC 850: day-name "," SP dd-mon-yy SP time SP "GMT"
      let parts = words[1].split(separator: "-").map(String.init)
      guard parts.count == 3, let yy = Int(parts[2]) else { return nil }
      day = Int(parts[0])
      month = monthNumber(parts[1])
      // Two-digit years: RFC 9110 says a date more than 50 years ahead is in the past.
      year = parts[2].count == 2 ? (yy < 70 ? 2000 + yy : 1900 + yy) : yy
      clock = words[2]
    } else if words.count == 5 {
      // asctime: day-name SP month SP day SP time SP year
      month = monthNumber(words[1])
      day = Int(words[2])
      clock = words[3]
      year = Int(words[4])
    }
    guard let day, let month, let year, let clock, (1...31).contains(day), (0...9999).contains(year)
    else { return nil }
    let hms = clock.split(separator: ":")
    guard hms.count == 3, hms.allSatisfy({ $0.count == 2 && $0.allSatisfy(\.isNumber) }) else {
      return nil
    }
    func pad(_ n: Int, _ width: Int) -> String {
      let digits = String(n)
      return String(repeating: "0", count: max(0, width - digits.count)) + digits
    }
    // The calendar checks (days per month, leap years, ranges) are Timestamp's.
    return Timestamp(
      rfc3339: "\(pad(year, 4))-\(pad(month, 2))-\(pad(day, 2))T\(hms[0]):\(hms[1]):\(hms[2])Z")
  }

  private static func monthNumber(_ name: String) -> Int? {
    months.firstIndex(of: name.lowercased()).map { $0 + 1 }
  }
}
