import LinkCore

/// One metric family of the OpenMetrics exposition: its name, type, unit, help and samples.
///
/// The name is the family's: without `_total` (a counter's sample adds it) and ending in the
/// unit when there is one, as OpenMetrics requires.
public struct MetricFamily: Sendable, Equatable {
  /// The OpenMetrics types the daemon exposes.
  public enum Kind: String, Sendable {
    case counter, gauge, histogram
  }

  /// One line of the family: the suffix after the family's name ("_total", "_bucket", …),
  /// its labels in order, and its value.
  public struct Sample: Sendable, Equatable {
    public var suffix: String
    public var labels: [MetricLabel]
    public var value: Double

    /// Creates a sample.
    public init(suffix: String = "", labels: [MetricLabel] = [], value: Double) {
      self.suffix = suffix
      self.labels = labels
      self.value = value
    }
  }

  public var name: String
  public var kind: Kind
  /// The unit ("seconds", "bytes"), or nil; the name ends in it.
  public var unit: String?
  public var help: String
  public var samples: [Sample]

  /// Creates a family.
  public init(name: String, kind: Kind, unit: String? = nil, help: String, samples: [Sample]) {
    self.name = name
    self.kind = kind
    self.unit = unit
    self.help = help
    self.samples = samples
  }

  /// A counter with one value per label set (each sample's name ends in `_total`).
  public static func counter(
    _ name: String, unit: String? = nil, help: String, _ values: [([MetricLabel], Int)]
  ) -> MetricFamily {
    MetricFamily(
      name: name, kind: .counter, unit: unit, help: help,
      samples: values.map { Sample(suffix: "_total", labels: $0.0, value: Double($0.1)) })
  }

  /// A counter without labels.
  public static func counter(_ name: String, unit: String? = nil, help: String, _ value: Int)
    -> MetricFamily
  {
    counter(name, unit: unit, help: help, [([], value)])
  }

  /// A gauge without labels.
  public static func gauge(_ name: String, unit: String? = nil, help: String, _ value: Double)
    -> MetricFamily
  {
    MetricFamily(name: name, kind: .gauge, unit: unit, help: help, samples: [Sample(value: value)])
  }

  /// A histogram's family, from its buckets.
  public static func histogram(
    _ name: String, unit: String? = nil, help: String, _ histogram: Histogram
  ) -> MetricFamily {
    MetricFamily(
      name: name, kind: .histogram, unit: unit, help: help, samples: samples(of: histogram))
  }

  /// The samples: a cumulative `_bucket` per bound and `+Inf`, then `_sum` and `_count`.
  static func samples(of histogram: Histogram) -> [Sample] {
    var samples: [Sample] = []
    var cumulative = 0
    for (index, bound) in histogram.bounds.enumerated() {
      cumulative += histogram.counts[index]
      samples.append(
        .init(
          suffix: "_bucket", labels: [MetricLabel("le", OpenMetricsRenderer.number(bound))],
          value: Double(cumulative)))
    }
    samples.append(
      .init(suffix: "_bucket", labels: [MetricLabel("le", "+Inf")], value: Double(histogram.count)))
    samples.append(.init(suffix: "_sum", value: histogram.sum))
    samples.append(.init(suffix: "_count", value: Double(histogram.count)))
    return samples
  }

  /// An information family, `NAME_info{…} 1`, whose labels carry the information. A gauge
  /// rather than OpenMetrics' `info` type: Prometheus 2's classic parser (promtool check
  /// metrics) refuses that type, and a gauge of 1 is what it becomes in Prometheus anyway.
  public static func info(_ name: String, help: String, _ labels: [MetricLabel]) -> MetricFamily {
    MetricFamily(
      name: name + "_info", kind: .gauge, help: help,
      samples: [Sample(labels: labels, value: 1)])
  }
}

/// A label's name and value.
public struct MetricLabel: Sendable, Equatable {
  public var name: String
  public var value: String

  /// Creates a label.
  public init(_ name: String, _ value: String) {
    self.name = name
    self.value = value
  }
}
