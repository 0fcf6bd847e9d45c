/// A point on the monotonic clock that the event loop's timers use (CLOCK_MONOTONIC), kept as
/// the time since the clock's origin.
///
/// The link core measures every span as a `Duration` and every moment as one of these, so
/// seconds, milliseconds and microseconds never meet in one expression. The event loop's own
/// unit (microseconds) is converted at the loop's edge.
public struct MonotonicInstant: Sendable, Hashable, Comparable, CustomStringConvertible {
  /// The time since the clock's origin.
  public var sinceOrigin: Duration

  /// An instant `sinceOrigin` after the clock's origin.
  public init(sinceOrigin: Duration) {
    self.sinceOrigin = sinceOrigin
  }

  /// The clock's origin; tests count from here.
  public static let origin = MonotonicInstant(sinceOrigin: .zero)

  public static func < (lhs: MonotonicInstant, rhs: MonotonicInstant) -> Bool {
    lhs.sinceOrigin < rhs.sinceOrigin
  }

  public static func + (lhs: MonotonicInstant, rhs: Duration) -> MonotonicInstant {
    MonotonicInstant(sinceOrigin: lhs.sinceOrigin + rhs)
  }

  public static func - (lhs: MonotonicInstant, rhs: MonotonicInstant) -> Duration {
    lhs.sinceOrigin - rhs.sinceOrigin
  }

  public var description: String { "\(sinceOrigin)" }
}

extension Duration {
  /// Whole microseconds, rounded down; negative spans count as zero (timers cannot go back).
  public var wholeMicroseconds: UInt64 {
    let (seconds, attoseconds) = components
    guard seconds >= 0 else { return 0 }
    return UInt64(seconds) &* 1_000_000 &+ UInt64(attoseconds / 1_000_000_000_000)
  }

  /// The span in seconds, for arithmetic that needs a real number (jitter, JSON).
  public var inSeconds: Double {
    let (seconds, attoseconds) = components
    return Double(seconds) + Double(attoseconds) / 1e18
  }

  /// Seconds as people read them in status and logs: "10", "1.5" (tenths at most).
  public var secondsText: String {
    let tenths = (inSeconds * 10).rounded() / 10
    return tenths == tenths.rounded() ? String(Int(tenths)) : String(tenths)
  }
}
