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
    // No Foundation here: find "://" by hand.
    guard let colon = text.firstIndex(of: ":"), text[colon...].hasPrefix("://") else {
      throw .unsupportedScheme(text)
    }
    let scheme = text[..<colon].lowercased()
    let afterScheme = text.index(colon, offsetBy: 3)
    switch scheme {
    case "ws": secure = false
    case "wss": secure = true
    default: throw .unsupportedScheme(scheme)
    }
    var rest = text[afterScheme...]
    if rest.contains("#") { throw .fragmentNotAllowed }
    let authorityEnd = rest.firstIndex { $0 == "/" || $0 == "?" } ?? rest.endIndex
    let authority = rest[..<authorityEnd]
    rest = rest[authorityEnd...]
    if authority.contains("@") { throw .userInfoNotAllowed }

    var hostPart = Substring(authority)
    var portPart: Substring?
    if hostPart.hasPrefix("[") {
      guard let close = hostPart.firstIndex(of: "]") else { throw .missingHost }
      let afterBracket = hostPart[hostPart.index(after: close)...]
      if !afterBracket.isEmpty {
        guard afterBracket.hasPrefix(":") else { throw .invalidPort(String(afterBracket)) }
        portPart = afterBracket.dropFirst()
      }
      hostPart = hostPart[hostPart.index(after: hostPart.startIndex)..<close]
      guard !hostPart.isEmpty else { throw .missingHost }
      // Brackets hold an IPv6 literal (RFC 3986 §3.2.2), and only one.
      guard hostPart.contains(":"), !hostPart.contains("[") else {
        throw .invalidHost("[\(hostPart)]")
      }
    } else {
      if let colon = hostPart.lastIndex(of: ":") {
        portPart = hostPart[hostPart.index(after: colon)...]
        hostPart = hostPart[..<colon]
      }
      // Outside brackets a host is a name or an IPv4 address: a colon or a bracket left here
      // is an IPv6 address written without brackets, or a typo.
      guard !hostPart.contains(where: { $0 == ":" || $0 == "[" || $0 == "]" }) else {
        throw .invalidHost(String(hostPart))
      }
    }
    guard !hostPart.isEmpty else { throw .missingHost }
    host = hostPart.lowercased()
    if let portPart {
      guard !portPart.isEmpty, portPart.count <= 5, portPart.allSatisfy(\.isASCII),
        let value = Int(portPart), (1...65535).contains(value)
      else { throw .invalidPort(String(portPart)) }
      port = value
    } else {
      port = secure ? 443 : 80
    }
    if rest.isEmpty {
      resource = "/"
    } else if rest.hasPrefix("?") {
      resource = "/" + rest
    } else {
      resource = String(rest)
    }
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
