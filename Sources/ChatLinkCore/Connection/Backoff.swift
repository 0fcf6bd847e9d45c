/// Reconnect delays: exponential backoff with full jitter, bounded below and above.
///
/// The n-th consecutive failure waits a uniform random time between `minimum` and
/// `min(maximum, minimum · 2ⁿ)`, so a fleet of daemons does not reconnect in lockstep after a
/// backend restart ("full jitter").
public struct Backoff: Sendable {
  /// The smallest delay, in seconds.
  public var minimum: Double
  /// The largest delay, in seconds.
  public var maximum: Double
  /// Consecutive failures since the last stable connection.
  public private(set) var failures = 0
  private var random: any RandomNumberGenerator & Sendable

  /// Creates a policy; `random` is injectable so tests are deterministic.
  public init(
    minimum: Double, maximum: Double,
    random: any RandomNumberGenerator & Sendable = SystemRandomNumberGenerator()
  ) {
    self.minimum = minimum
    self.maximum = maximum
    self.random = random
  }

  /// The ceiling of the next delay.
  public var ceiling: Double {
    min(maximum, minimum * Double(1 << min(failures, 30)))
  }

  /// The delay before the next attempt, counting one more failure.
  public mutating func nextDelay() -> Double {
    let top = ceiling
    failures += 1
    guard top > minimum else { return minimum }
    return Double.random(in: minimum...top, using: &random)
  }

  /// A delay that does not count as a failure: a jittered short wait, e.g. after the server
  /// said it is restarting (close 1012).
  public mutating func shortDelay() -> Double {
    Double.random(in: minimum...(minimum * 2), using: &random)
  }

  /// Forgets past failures, after a connection stayed up.
  public mutating func reset() {
    failures = 0
  }
}
