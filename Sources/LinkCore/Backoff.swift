/// Reconnect delays: exponential backoff with full jitter, bounded below and above.
///
/// The n-th consecutive failure waits a uniform random time between `minimum` and
/// `min(maximum, minimum · 2ⁿ)`, so a fleet of daemons does not reconnect in lockstep after a
/// backend restart ("full jitter").
public struct Backoff: Sendable {
  /// The smallest delay.
  public var minimum: Duration
  /// The largest delay.
  public var maximum: Duration
  /// Consecutive failures since the last stable connection.
  public private(set) var failures = 0
  private var random: any RandomNumberGenerator & Sendable

  /// Creates a policy; `random` is injectable so tests are deterministic.
  public init(
    minimum: Duration, maximum: Duration,
    random: any RandomNumberGenerator & Sendable = SystemRandomNumberGenerator()
  ) {
    self.minimum = minimum
    self.maximum = maximum
    self.random = random
  }

  /// The ceiling of the next delay.
  public var ceiling: Duration {
    min(maximum, minimum * (1 << min(failures, 30)))
  }

  /// The delay before the next attempt, counting one more failure.
  public mutating func nextDelay() -> Duration {
    let top = ceiling
    failures += 1
    guard top > minimum else { return minimum }
    return jittered(minimum, top)
  }

  /// A delay that does not count as a failure: a jittered short wait, e.g. after the server
  /// said it is restarting (close 1012).
  public mutating func shortDelay() -> Duration {
    jittered(minimum, minimum * 2)
  }

  /// Forgets past failures, after a connection stayed up.
  public mutating func reset() {
    failures = 0
  }

  private mutating func jittered(_ low: Duration, _ high: Duration) -> Duration {
    .seconds(Double.random(in: low.inSeconds...high.inSeconds, using: &random))
  }
}
