@preconcurrency import Glibc

/// An HTTP proxy's address, parsed from `http://host:port` (as in https_proxy).
public struct ProxyAddress: Sendable, Hashable, CustomStringConvertible {
  public var host: String
  public var port: Int

  /// Creates an address.
  public init(host: String, port: Int) {
    self.host = host
    self.port = port
  }

  /// Parses `http://host[:port][/]`; nil for anything else (credentials are not supported).
  public init?(url: String) {
    var rest = Substring(url)
    if rest.hasPrefix("http://") {
      rest = rest.dropFirst(7)
    } else if rest.contains("://") {
      return nil
    }
    while rest.hasSuffix("/") { rest = rest.dropLast() }
    guard !rest.isEmpty, !rest.contains("@"), !rest.contains("/") else { return nil }
    var host = rest
    var port = 80
    if rest.hasPrefix("["), let close = rest.firstIndex(of: "]") {
      host = rest[rest.index(after: rest.startIndex)..<close]
      let after = rest[rest.index(after: close)...]
      if after.hasPrefix(":") {
        guard let p = Int(after.dropFirst()), (1...65535).contains(p) else { return nil }
        port = p
      } else if !after.isEmpty {
        return nil
      }
      // Brackets hold an IPv6 literal, as in WebSocketURL.
      guard host.contains(":"), !host.contains("[") else { return nil }
    } else {
      if let colon = rest.lastIndex(of: ":") {
        guard let p = Int(rest[rest.index(after: colon)...]), (1...65535).contains(p) else {
          return nil
        }
        port = p
        host = rest[..<colon]
      }
      guard !host.contains(where: { $0 == ":" || $0 == "[" || $0 == "]" }) else { return nil }
    }
    guard !host.isEmpty else { return nil }
    self.init(host: String(host), port: port)
  }

  /// The proxy that applies to `host` from the environment: https_proxy for TLS, http_proxy
  /// otherwise (either case), unless no_proxy lists the host or a parent domain, or "*".
  public static func fromEnvironment(
    for host: String, secure: Bool,
    environment: (String) -> String? = { name in
      getenv(name).map { String(cString: $0) }
    }
  ) -> ProxyAddress? {
    let names = secure ? ["https_proxy", "HTTPS_PROXY"] : ["http_proxy", "HTTP_PROXY"]
    guard let value = names.lazy.compactMap(environment).first(where: { !$0.isEmpty }) else {
      return nil
    }
    let exclusions = (environment("no_proxy") ?? environment("NO_PROXY") ?? "").split(
      separator: ",")
    let target = host.lowercased()
    for raw in exclusions {
      var entry = raw.trimmingCharacters(in: " ").lowercased()
      if entry == "*" { return nil }
      if entry.hasPrefix(".") { entry.removeFirst() }
      if let colon = entry.lastIndex(of: ":"), !entry.contains("]"),
        entry.filter({ $0 == ":" }).count == 1
      {
        entry = String(entry[..<colon])
      }
      if !entry.isEmpty && (target == entry || target.hasSuffix("." + entry)) { return nil }
    }
    return ProxyAddress(url: value)
  }

  public var description: String { "http://\(host.contains(":") ? "[\(host)]" : host):\(port)" }
}

extension Substring {
  fileprivate func trimmingCharacters(in set: Character) -> String {
    var s = self
    while s.first == set { s.removeFirst() }
    while s.last == set { s.removeLast() }
    return String(s)
  }
}
