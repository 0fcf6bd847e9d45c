/// A histogram with fixed upper bounds: counts per bucket, the sum and the count. (The
/// metrics' renderer makes the buckets cumulative and adds `+Inf`.)
///
/// Pure and small: observing is an array walk over a handful of bounds, so it can sit on the
/// loop's paths without a cost worth measuring.
public struct Histogram: Sendable, Hashable {
  /// The upper bounds, ascending; `+Inf` is implied after the last.
  public let bounds: [Double]
  /// Observations per bucket, not cumulative; one more than `bounds` (the `+Inf` bucket).
  public private(set) var counts: [Int]
  /// The sum of every observation.
  public private(set) var sum: Double = 0
  /// How many observations.
  public private(set) var count = 0

  /// An empty histogram with `bounds` (sorted here; duplicates dropped).
  public init(bounds: [Double]) {
    self.bounds = Array(Set(bounds.filter(\.isFinite))).sorted()
    counts = Array(repeating: 0, count: self.bounds.count + 1)
  }

  /// Adds one observation. A NaN is ignored: it belongs to no bucket and would poison the sum.
  public mutating func observe(_ value: Double) {
    guard !value.isNaN else { return }
    let index = bounds.firstIndex { value <= $0 } ?? bounds.count
    counts[index] += 1
    sum += value
    count += 1
  }

  /// Adds a span, in seconds.
  public mutating func observe(_ span: Duration) {
    let parts = span.components
    observe(Double(parts.seconds) + Double(parts.attoseconds) / 1e18)
  }

  /// Bounds for round trips and disk syncs: a quarter of a millisecond to ten seconds.
  public static let latencyBounds: [Double] = [
    0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10,
  ]
}
