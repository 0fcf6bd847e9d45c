/// Writes metric families as OpenMetrics 1.0 text (`# TYPE`, `# UNIT`, `# HELP`, the samples,
/// `# EOF` at the end), or as Prometheus' classic text format 0.0.4, which promtool and older
/// scrapers read: there a counter's metadata names the `_total` series, and there is no UNIT
/// and no EOF.
///
/// `constantLabels` go first on every sample (an `instance` label, say): the one place where a
/// label that all of a daemon's metrics share is added.
public struct OpenMetricsRenderer: Sendable {
  /// The two expositions.
  public enum Format: String, Sendable, CaseIterable {
    case openMetrics = "openmetrics"
    case prometheus

    /// The media type, for an HTTP response.
    public var contentType: String {
      switch self {
      case .openMetrics: "application/openmetrics-text; version=1.0.0; charset=utf-8"
      case .prometheus: "text/plain; version=0.0.4; charset=utf-8"
      }
    }
  }

  /// Labels put on every sample, before its own.
  public var constantLabels: [MetricLabel]
  public var format: Format

  /// A renderer of `format` that adds `constantLabels` to every sample.
  public init(format: Format = .openMetrics, constantLabels: [MetricLabel] = []) {
    self.format = format
    self.constantLabels = constantLabels
  }

  /// The exposition of `families`, in their order.
  public func render(_ families: [MetricFamily]) -> String {
    let open = format == .openMetrics
    var text = ""
    for family in families {
      // The classic format knows no families: its metadata names the series itself.
      let described = !open && family.kind == .counter ? family.name + "_total" : family.name
      text += "# TYPE \(described) \(family.kind.rawValue)\n"
      if open, let unit = family.unit { text += "# UNIT \(described) \(unit)\n" }
      text += "# HELP \(described) \(Self.escaped(family.help, quotes: open))\n"
      for sample in family.samples {
        text += family.name + sample.suffix
        text += Self.labelSet(constantLabels + sample.labels)
        text += " " + Self.number(sample.value) + "\n"
      }
    }
    return open ? text + "# EOF\n" : text
  }

  /// `{a="1",b="2"}`, or nothing without labels.
  static func labelSet(_ labels: [MetricLabel]) -> String {
    guard !labels.isEmpty else { return "" }
    return "{" + labels.map { "\($0.name)=\"\(escaped($0.value))\"" }.joined(separator: ",") + "}"
  }

  /// A label value or help text escaped as OpenMetrics requires: backslash, double quote and
  /// line feed. (The classic format's HELP escapes no quote: `quotes: false`.)
  public static func escaped(_ text: String, quotes: Bool = true) -> String {
    guard text.contains(where: { $0 == "\\" || ($0 == "\"" && quotes) || $0 == "\n" }) else {
      return text
    }
    var out = ""
    for character in text {
      switch character {
      case "\\": out += "\\\\"
      case "\"" where quotes: out += "\\\""
      case "\n": out += "\\n"
      default: out.append(character)
      }
    }
    return out
  }

  /// A value as OpenMetrics spells it: whole numbers without a fraction, `+Inf`, `-Inf`,
  /// `NaN`.
  public static func number(_ value: Double) -> String {
    if value.isNaN { return "NaN" }
    if value.isInfinite { return value > 0 ? "+Inf" : "-Inf" }
    // Below 2^53 every whole number is exact: print it as an integer.
    if value == value.rounded(), abs(value) < 9_007_199_254_740_992 {
      return String(Int64(value))
    }
    return value.description
  }
}
