@preconcurrency import Glibc

/// `[Metrics] Listen=`'s value: a numeric address and a port. "9105" alone means
/// 127.0.0.1:9105 (loopback unless an address is named); IPv6 goes in brackets, "[::1]:9105".
/// Addresses are checked as the kernel will read them (inet_pton), so a bad one is a config
/// error, not a surprise at bind time; names are never looked up.
public struct MetricsListenAddress: Sendable, Hashable, CustomStringConvertible {
  public var host: String
  public var port: UInt16

  /// Creates an address.
  public init(host: String, port: UInt16) {
    self.host = host
    self.port = port
  }

  /// Reads `text`, or says why it is not an address.
  public static func parse(_ text: String) -> Result<MetricsListenAddress, ParseError> {
    var host = "127.0.0.1"
    var portText = Substring(text)
    if text.hasPrefix("[") {
      guard let close = text.firstIndex(of: "]"), text[text.index(after: close)...].hasPrefix(":")
      else {
        return .failure(ParseError("'\(text)' is not [IPv6]:PORT"))
      }
      host = String(text[text.index(after: text.startIndex)..<close])
      portText = text[text.index(close, offsetBy: 2)...]
      var address = in6_addr()
      guard inet_pton(AF_INET6, host, &address) == 1 else {
        return .failure(ParseError("'\(host)' is not a numeric IPv6 address"))
      }
    } else if let colon = text.lastIndex(of: ":") {
      host = String(text[..<colon])
      portText = text[text.index(after: colon)...]
      var address = in_addr()
      guard inet_pton(AF_INET, host, &address) == 1 else {
        return .failure(
          ParseError(
            "'\(host)' is not a numeric IPv4 address (names are not looked up; IPv6 needs [ ])"))
      }
    }
    guard (1...5).contains(portText.count), portText.allSatisfy({ ("0"..."9").contains($0) }),
      let port = UInt16(portText), port > 0
    else {
      return .failure(ParseError("'\(portText)' is not a port from 1 to 65535"))
    }
    return .success(MetricsListenAddress(host: host, port: port))
  }

  public var description: String { host.contains(":") ? "[\(host)]:\(port)" : "\(host):\(port)" }

  /// Why a value is not an address.
  public struct ParseError: Error, Sendable, Equatable {
    public var message: String
    init(_ message: String) { self.message = message }
  }
}
