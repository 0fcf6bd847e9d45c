import EventLoop
@preconcurrency import Glibc

/// Resolves host names with getaddrinfo on a background thread, so a slow DNS server never
/// stalls the event loop.
public final class Resolver {
  private let worker: BackgroundWorker

  /// Creates a resolver with its own worker thread.
  public init(loop: EventLoop) throws(SystemError) {
    worker = try BackgroundWorker(loop: loop, name: "chatlink-dns")
  }

  /// Resolves `host` for TCP to `port`; IP literals are answered without a lookup.
  /// The completion runs on the loop.
  public func resolve(
    host: String, port: Int, completion: @escaping (Result<[SocketAddress], TransportError>) -> Void
  ) {
    if let literal = SocketAddress(ipLiteral: host, port: port) {
      completion(.success([literal]))
      return
    }
    worker.submit({ Self.lookup(host: host, port: port) }, completion: completion)
  }

  /// The blocking lookup; runs on the worker thread.
  static func lookup(host: String, port: Int) -> Result<[SocketAddress], TransportError> {
    var hints = addrinfo()
    hints.ai_family = AF_UNSPEC
    hints.ai_socktype = Int32(SOCK_STREAM.rawValue)
    hints.ai_protocol = Int32(IPPROTO_TCP)
    // No AI_ADDRCONFIG: it hides ::1 on hosts whose only IPv6 address is loopback.
    var list: UnsafeMutablePointer<addrinfo>?
    let rc = getaddrinfo(host, String(port), &hints, &list)
    guard rc == 0 else {
      let reason =
        rc == EAI_SYSTEM ? SystemError.describe(errno) : String(cString: gai_strerror(rc))
      return .failure(.resolutionFailed(host: host, reason: reason))
    }
    defer { freeaddrinfo(list) }
    var addresses: [SocketAddress] = []
    var cursor = list
    while let entry = cursor {
      if let addr = entry.pointee.ai_addr,
        let address = SocketAddress(addr, length: entry.pointee.ai_addrlen),
        !addresses.contains(address)
      {
        addresses.append(address)
      }
      cursor = entry.pointee.ai_next
    }
    guard !addresses.isEmpty else {
      return .failure(.resolutionFailed(host: host, reason: "no IPv4 or IPv6 address"))
    }
    return .success(addresses)
  }
}
