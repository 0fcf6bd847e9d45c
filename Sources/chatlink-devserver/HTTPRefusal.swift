import WebSocket

/// An HTTP answer refusing an upgrade request, and the reason to log.
struct HTTPRefusal {
  /// The bytes to send instead of the 101.
  var response: [UInt8]
  /// Why, for the log.
  var reason: String

  /// A refusal whose body says what was wrong, so that `curl` or a browser shows it (a
  /// WebSocket client sees the status line).
  static func explained(status: Int, reason: String, text: String) -> HTTPRefusal {
    let body = text + "\n"
    var head = "HTTP/1.1 \(status) \(reason)\r\n"
    head += "Content-Type: text/plain; charset=utf-8\r\n"
    head += "Content-Length: \(body.utf8.count)\r\nConnection: close\r\n\r\n"
    return HTTPRefusal(response: Array((head + body).utf8), reason: text)
  }

  /// 401 for a missing or wrong bearer token.
  static let unauthorized = HTTPRefusal(
    response: ServerHandshake.refusal(
      status: 401, reason: "Unauthorized",
      headers: ["WWW-Authenticate": "Bearer realm=\"chatlink-devserver\""]),
    reason: "bad or missing token")
}
