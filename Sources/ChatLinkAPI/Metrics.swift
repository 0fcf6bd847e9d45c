import JSON

/// GetMetrics's parameters: `(format: ?string)`.
public struct GetMetricsParameters: JSONRepresentable {
  /// "openmetrics" (OpenMetrics 1.0, the default) or "prometheus" (the classic text format
  /// 0.0.4, which promtool check metrics reads).
  public var format: String?

  /// Creates the parameters.
  public init(format: String? = nil) {
    self.format = format
  }

  public init(json: JSONValue) throws(APIDecodingError) {
    format = try ObjectReader(json).optionalString("format")
  }

  public var json: JSONValue { .object(["format": format.map(JSONValue.string)]) }
}

/// GetMetrics's reply: `(text: string)`, the OpenMetrics exposition.
public struct GetMetricsReply: JSONRepresentable {
  /// OpenMetrics 1.0 text, ending in "# EOF\n".
  public var text: String

  /// Creates the reply.
  public init(text: String) {
    self.text = text
  }

  public init(json: JSONValue) throws(APIDecodingError) {
    text = try ObjectReader(json).string("text")
  }

  public var json: JSONValue { .object([("text", .string(text))]) }
}
