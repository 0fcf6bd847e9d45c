import EventLoop
@preconcurrency import Glibc

/// An IPv4 or IPv6 socket address.
public struct SocketAddress: Sendable, Hashable, CustomStringConvertible {
  var storage: sockaddr_storage
  let length: socklen_t

  init(storage: sockaddr_storage, length: socklen_t) {
    self.storage = storage
    self.length = length
  }

  /// Copies a `sockaddr` returned by getaddrinfo or getpeername.
  init?(_ address: UnsafePointer<sockaddr>, length: socklen_t) {
    guard length <= MemoryLayout<sockaddr_storage>.size else { return nil }
    var storage = sockaddr_storage()
    withUnsafeMutableBytes(of: &storage) { dst in
      dst.copyMemory(from: UnsafeRawBufferPointer(start: address, count: Int(length)))
    }
    self.init(storage: storage, length: length)
  }

  /// Parses an IP literal (no brackets) with a port; nil if `host` is not a literal.
  public init?(ipLiteral host: String, port: Int) {
    var storage = sockaddr_storage()
    var v4 = in_addr()
    var v6 = in6_addr()
    if inet_pton(AF_INET, host, &v4) == 1 {
      withUnsafeMutableBytes(of: &storage) { raw in
        let sin = raw.baseAddress!.assumingMemoryBound(to: sockaddr_in.self)
        sin.pointee.sin_family = sa_family_t(AF_INET)
        sin.pointee.sin_port = in_port_t(UInt16(port).bigEndian)
        sin.pointee.sin_addr = v4
      }
      self.init(storage: storage, length: socklen_t(MemoryLayout<sockaddr_in>.size))
    } else if inet_pton(AF_INET6, host, &v6) == 1 {
      withUnsafeMutableBytes(of: &storage) { raw in
        let sin6 = raw.baseAddress!.assumingMemoryBound(to: sockaddr_in6.self)
        sin6.pointee.sin6_family = sa_family_t(AF_INET6)
        sin6.pointee.sin6_port = in_port_t(UInt16(port).bigEndian)
        sin6.pointee.sin6_addr = v6
      }
      self.init(storage: storage, length: socklen_t(MemoryLayout<sockaddr_in6>.size))
    } else {
      return nil
    }
  }

  /// Whether `host` is an IPv4 or IPv6 literal (such hosts get no SNI, RFC 6066 §3).
  public static func isIPLiteral(_ host: String) -> Bool {
    SocketAddress(ipLiteral: host, port: 0) != nil
  }

  /// AF_INET or AF_INET6.
  public var family: Int32 { Int32(storage.ss_family) }

  /// The address as text, IPv6 in brackets, with the port: "[::1]:9001", "127.0.0.1:80".
  public var description: String {
    var copy = storage
    return withUnsafeBytes(of: &copy) { raw -> String in
      var text = [CChar](repeating: 0, count: Int(INET6_ADDRSTRLEN) + 1)
      if family == AF_INET {
        let sin = raw.baseAddress!.assumingMemoryBound(to: sockaddr_in.self)
        var addr = sin.pointee.sin_addr
        inet_ntop(AF_INET, &addr, &text, socklen_t(text.count))
        return "\(Self.string(text)):\(UInt16(bigEndian: sin.pointee.sin_port))"
      } else {
        let sin6 = raw.baseAddress!.assumingMemoryBound(to: sockaddr_in6.self)
        var addr = sin6.pointee.sin6_addr
        inet_ntop(AF_INET6, &addr, &text, socklen_t(text.count))
        return "[\(Self.string(text))]:\(UInt16(bigEndian: sin6.pointee.sin6_port))"
      }
    }
  }

  private static func string(_ chars: [CChar]) -> String {
    String(decoding: chars.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
  }

  func withSockaddr<R>(_ body: (UnsafePointer<sockaddr>, socklen_t) -> R) -> R {
    var copy = storage
    return withUnsafeBytes(of: &copy) { raw in
      body(raw.baseAddress!.assumingMemoryBound(to: sockaddr.self), length)
    }
  }

  public static func == (lhs: SocketAddress, rhs: SocketAddress) -> Bool {
    lhs.description == rhs.description
  }

  public func hash(into hasher: inout Hasher) {
    hasher.combine(description)
  }

  /// Orders addresses for connection attempts: alternate families, starting with the one
  /// getaddrinfo preferred (RFC 8305 §4), keeping getaddrinfo's order within a family.
  public static func interleaved(_ addresses: [SocketAddress]) -> [SocketAddress] {
    guard let first = addresses.first else { return [] }
    let preferred = addresses.filter { $0.family == first.family }
    let others = addresses.filter { $0.family != first.family }
    var result: [SocketAddress] = []
    for i in 0..<max(preferred.count, others.count) {
      if i < preferred.count { result.append(preferred[i]) }
      if i < others.count { result.append(others[i]) }
    }
    return result
  }
}
