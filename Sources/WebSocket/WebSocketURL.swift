/// A parsed `ws://` or `wss://` URL (RFC 6455 §3).
public struct WebSocketURL: Sendable, Hashable, CustomStringConvertible {
  /// Whether the connection uses TLS (`wss`).
  public var secure: Bool
  /// The host name or IP literal, without IPv6 brackets.
  public var host: String
  /// The TCP port; 80 or 443 when the URL gives none.
  public var port: Int
  /// The request target: path and query, never empty.
  public var resource: String

  /// Why a URL was refused.
  public enum ParseError: Error, Sendable, Hashable, CustomStringConvertible {
    case unsupportedScheme(String)
    case missingHost
    case invalidHost(String)
    case invalidPort(String)
    case userInfoNotAllowed
    case fragmentNotAllowed
    case invalidCharacter

    public var description: String {
      switch self {
      case .unsupportedScheme(let s): "unsupported scheme '\(s)' (use ws:// or wss://)"
      case .missingHost: "the URL has no host"
      case .invalidHost(let h):
        "invalid host '\(h)' (an IPv6 address goes in brackets, as in ws://[::1]:9001/)"
      case .invalidPort(let p): "invalid port '\(p)'"
      case .userInfoNotAllowed: "user:password@ is not allowed in a WebSocket URL"
      case .fragmentNotAllowed: "a WebSocket URL may not have a #fragment (RFC 6455 §3)"
      case .invalidCharacter: "the URL contains spaces or control characters"
      }
    }
  }

  /// Parses a URL such as `wss://chat.example.com/ws?room=7` or `ws://[::1]:9001/`.
  public init(parsing text: String) throws(ParseError) {
    guard text.unicodeScalars.allSatisfy({ $0.value > 0x20 && $0.value != 0x7F }) else {
      throw .invalidCharacter
    }
    var rest: Substring
    (secure, rest) = try Self.scheme(of: text)
    if rest.contains("#") { throw .fragmentNotAllowed }
    let authorityEnd = rest.firstIndex { $0 == "/" || $0 == "?" } ?? rest.endIndex
    let authority = rest[..<authorityEnd]
    rest = rest[authorityEnd...]
    if authority.contains("@") { throw .userInfoNotAllowed }
    let (hostPart, portPart) = try Self.hostAndPort(of: authority)
    guard !hostPart.isEmpty else { throw .missingHost }
    host = hostPart.lowercased()
    port = try portPart.map(Self.port) ?? (secure ? 443 : 80)
    if rest.isEmpty {
      resource = "/"
    } else if rest.hasPrefix("?") {
      resource = "/" + rest
    } else {
      resource = String(rest)
    }
  }

  /// Whether the scheme is `wss`, and what follows its `://`.
  private static func scheme(of text: String) throws(ParseError) -> (
    secure: Bool, rest: Substring
  ) {
    // No Foundation here: find "://" by hand.
    guard let colon = text.firstIndex(of: ":"), text[colon...].hasPrefix("://") else {
      throw .unsupportedScheme(text)
    }
    let rest = text[text.index(colon, offsetBy: 3)...]
    switch text[..<colon].lowercased() {
    case "ws": return (false, rest)
    case "wss": return (true, rest)
    case let scheme: throw .unsupportedScheme(scheme)
    }
  }

  /// The authority's host (without brackets) and port text, if it has a port.
  private static func hostAndPort(of authority: Substring) throws(ParseError) -> (
    host: Substring, port: Substring?
  ) {
    guard authority.hasPrefix("[") else {
      var host = authority
      var port: Substring?
      if let colon = host.lastIndex(of: ":") {
        port = host[host.index(after: colon)...]
        host = host[..<colon]
      }
      // Outside brackets a host is a name or an IPv4 address: a colon or a bracket left here
      // is an IPv6 address written without brackets, or a typo.
      guard !host.contains(where: { $0 == ":" || $0 == "[" || $0 == "]" }) else {
        throw .invalidHost(String(host))
      }
      return (host, port)
    }
    guard let close = authority.firstIndex(of: "]") else { throw .missingHost }
    let afterBracket = authority[authority.index(after: close)...]
    var port: Substring?
    if !afterBracket.isEmpty {
      guard afterBracket.hasPrefix(":") else { throw .invalidPort(String(afterBracket)) }
      port = afterBracket.dropFirst()
    }
    let host = authority[authority.index(after: authority.startIndex)..<close]
    guard !host.isEmpty else { throw .missingHost }
    // Brackets hold an IPv6 literal (RFC 3986 §3.2.2), and only one.
    guard host.contains(":"), !host.contains("[") else { throw .invalidHost("[\(host)]") }
    return (host, port)
  }

  /// A port number: 1 to 65535 in at most five ASCII digits.
  private static func port(_ text: Substring) throws(ParseError) -> Int {
    guard !text.isEmpty, text.count <= 5, text.allSatisfy(\.isASCII),
      let value = Int(text), (1...65535).contains(value)
    else { throw .invalidPort(String(text)) }
    return value
  }

  /// Whether the port is the scheme's default, so the Host header may leave it out.
  public var hasDefaultPort: Bool { port == (secure ? 443 : 80) }

  /// Whether `host` is an IPv6 literal.
  public var hostIsIPv6Literal: Bool { host.contains(":") }

  /// The Host header value (RFC 9110 §7.2): brackets for IPv6, port unless default.
  public var hostHeader: String {
    let name = hostIsIPv6Literal ? "[\(host)]" : host
    return hasDefaultPort ? name : "\(name):\(port)"
  }

  /// The URL in canonical form.
  public var description: String {
    "\(secure ? "wss" : "ws")://\(hostHeader)\(resource)"
  }
}
