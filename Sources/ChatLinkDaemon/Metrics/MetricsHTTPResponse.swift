/// The metrics endpoint's answer to a request head: pure, so every status is tested without
/// a socket. Only `GET /metrics` (and `HEAD`) is served; every answer closes the connection.
public enum MetricsHTTPResponse {
  /// The response bytes for `result`; `render` makes the body in the format asked for.
  public static func bytes(
    for head: MetricsRequest, render: (OpenMetricsRenderer.Format) -> String
  ) -> [UInt8] {
    guard head.method == "GET" || head.method == "HEAD" else {
      return response(405, "Method Not Allowed", extra: "Allow: GET, HEAD\r\n")
    }
    guard head.path == "/metrics" else { return response(404, "Not Found") }
    let format = format(accepting: head.accept)
    let body = render(format)
    return response(
      200, "OK", contentType: format.contentType, body: body, omitBody: head.method == "HEAD")
  }

  /// The answer to a request that could not be read.
  public static func bytes(forInvalid status: Int) -> [UInt8] {
    switch status {
    case 431: response(431, "Request Header Fields Too Large")
    case 505: response(505, "HTTP Version Not Supported")
    default: response(400, "Bad Request")
    }
  }

  /// OpenMetrics when the client asks for it (Prometheus does), else the classic text
  /// format, which every scraper and promtool read.
  static func format(accepting accept: String?) -> OpenMetricsRenderer.Format {
    guard let accept else { return .prometheus }
    for range in accept.split(separator: ",") {
      let parts = range.split(separator: ";").map { $0.trimmingCharacters() }
      guard parts.first?.lowercased() == "application/openmetrics-text" else { continue }
      // q=0 means "not acceptable".
      let refused = parts.contains { $0.hasPrefix("q=") && Double($0.dropFirst(2)) == 0 }
      if refused { continue }
      return .openMetrics
    }
    return .prometheus
  }

  private static func response(
    _ status: Int, _ reason: String, extra: String = "",
    contentType: String = "text/plain; charset=utf-8", body: String? = nil, omitBody: Bool = false
  ) -> [UInt8] {
    let content = body ?? "\(status) \(reason)\n"
    var head = "HTTP/1.1 \(status) \(reason)\r\n"
    head += "Content-Type: \(contentType)\r\nContent-Length: \(content.utf8.count)\r\n"
    head += extra + "Connection: close\r\n\r\n"
    return Array(head.utf8) + (omitBody ? [] : Array(content.utf8))
  }
}

extension Substring {
  fileprivate func trimmingCharacters() -> String {
    String(drop { $0 == " " || $0 == "\t" }.reversed().drop { $0 == " " || $0 == "\t" }.reversed())
  }
}
