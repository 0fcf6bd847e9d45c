/// Why the opening handshake failed (RFC 6455 §4.1, §4.2.2).
public enum HandshakeError: Error, Sendable, Hashable, CustomStringConvertible {
  /// The server answered with a status other than 101: refused (401, 403), unavailable
  /// (503, maybe with Retry-After), redirected (3xx with Location), or anything else.
  case unexpectedStatus(HTTPResponseHead)
  /// The response is not HTTP/1.1 as RFC 9112 defines it.
  case malformedResponse(String)
  /// The response head exceeded the limit before its blank line.
  case responseTooLarge(limit: Int)
  /// `Upgrade: websocket` missing or different.
  case missingUpgradeHeader(found: String?)
  /// `Connection: Upgrade` missing.
  case missingConnectionUpgrade(found: String?)
  /// `Sec-WebSocket-Accept` absent or not the digest of our key.
  case invalidAccept(expected: String, found: String?)
  /// The server picked a subprotocol we did not offer.
  case unexpectedSubprotocol(String)
  /// The server named an extension we did not offer.
  case unsupportedExtension(String)
  /// An extension's parameters break its negotiation rules.
  case invalidExtension(String)
  /// A header we were asked to send is not valid HTTP.
  case invalidRequestHeader(String)

  /// The HTTP status for `unexpectedStatus`, else nil.
  public var status: Int? {
    if case .unexpectedStatus(let head) = self { return head.status }
    return nil
  }

  public var description: String {
    switch self {
    case .unexpectedStatus(let head):
      var text = "server answered \(head.status) \(head.reason)"
      if let retry = head.headers[first: "Retry-After"] { text += " (Retry-After: \(retry))" }
      if let location = head.headers[first: "Location"] { text += " (Location: \(location))" }
      return text
    case .malformedResponse(let why): return "malformed handshake response: \(why)"
    case .responseTooLarge(let limit): return "handshake response exceeds \(limit) bytes"
    case .missingUpgradeHeader(let found):
      return "response lacks 'Upgrade: websocket' (found \(found.map { "'\($0)'" } ?? "none"))"
    case .missingConnectionUpgrade(let found):
      return "response lacks 'Connection: Upgrade' (found \(found.map { "'\($0)'" } ?? "none"))"
    case .invalidAccept(let expected, let found):
      return
        "Sec-WebSocket-Accept is \(found.map { "'\($0)'" } ?? "missing"), expected '\(expected)'"
    case .unexpectedSubprotocol(let p):
      return "server chose subprotocol '\(p)' that was not offered"
    case .unsupportedExtension(let e): return "server chose extension '\(e)' that was not offered"
    case .invalidExtension(let why): return "invalid extension response: \(why)"
    case .invalidRequestHeader(let why): return "invalid request header: \(why)"
    }
  }
}
