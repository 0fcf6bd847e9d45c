import EventLoop
@preconcurrency import Glibc

/// A listening TCP socket on the loop, bound to a numeric IPv4 or IPv6 address (no name
/// lookup: binding must not block the loop, and an operator's address is exact).
///
/// Accepted connections are non-blocking `SocketStream`s. How many may be open at once is the
/// owner's policy: it closes the ones it does not want.
public final class TCPListener {
  private let fd: Int32
  private let loop: EventLoop
  private var watcher: IOWatcher?
  private var resumeTimer: Timer?

  /// Binds `host` (a numeric address: "127.0.0.1", "::1") and `port`; errors name the address
  /// (EADDRINUSE for a busy port, EADDRNOTAVAIL for an address this host does not have).
  public init(
    loop: EventLoop, host: String, port: UInt16, accepted: @escaping (SocketStream) -> Void
  ) throws(SystemError) {
    let display = host.contains(":") ? "[\(host)]:\(port)" : "\(host):\(port)"
    var storage = sockaddr_storage()
    var length: socklen_t
    let family: Int32
    var v4 = in_addr()
    var v6 = in6_addr()
    if inet_pton(AF_INET, host, &v4) == 1 {
      family = AF_INET
      length = socklen_t(MemoryLayout<sockaddr_in>.size)
      withUnsafeMutableBytes(of: &storage) { raw in
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = port.bigEndian
        address.sin_addr = v4
        raw.storeBytes(of: address, as: sockaddr_in.self)
      }
    } else if inet_pton(AF_INET6, host, &v6) == 1 {
      family = AF_INET6
      length = socklen_t(MemoryLayout<sockaddr_in6>.size)
      withUnsafeMutableBytes(of: &storage) { raw in
        var address = sockaddr_in6()
        address.sin6_family = sa_family_t(AF_INET6)
        address.sin6_port = port.bigEndian
        address.sin6_addr = v6
        raw.storeBytes(of: address, as: sockaddr_in6.self)
      }
    } else {
      throw SystemError("bind \(display) (not a numeric address)", errno: EINVAL)
    }
    let fd = socket(
      family,
      Int32(SOCK_STREAM.rawValue) | Int32(SOCK_NONBLOCK.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
    guard fd >= 0 else { throw .last("socket") }
    var one: Int32 = 1
    // A restart must not wait for the old connections' TIME_WAIT; a live listener still
    // makes bind fail with EADDRINUSE.
    setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, socklen_t(MemoryLayout<Int32>.size))
    if family == AF_INET6 {
      setsockopt(fd, Int32(IPPROTO_IPV6), IPV6_V6ONLY, &one, socklen_t(MemoryLayout<Int32>.size))
    }
    let rc = withUnsafePointer(to: &storage) {
      $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, length) }
    }
    guard rc == 0, listen(fd, 16) == 0 else {
      let error = SystemError.last("bind \(display)")
      Glibc.close(fd)
      throw error
    }
    self.fd = fd
    self.loop = loop
    resumeTimer = try loop.makeTimer(accuracy: 10_000) { [unowned self] in
      self.watcher?.isEnabled = true
    }
    watcher = try loop.watch(fd: fd, events: .readable) { [unowned self] _ in
      self.acceptAll(accepted)
    }
  }

  /// The port bound (useful when 0 asked the kernel for one).
  public var port: UInt16 {
    var storage = sockaddr_storage()
    var length = socklen_t(MemoryLayout<sockaddr_storage>.size)
    let rc = withUnsafeMutablePointer(to: &storage) {
      $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(fd, $0, &length) }
    }
    guard rc == 0 else { return 0 }
    return withUnsafeBytes(of: &storage) { raw in
      // sin_port and sin6_port sit at the same offset, right after the family.
      UInt16(bigEndian: raw.load(fromByteOffset: 2, as: UInt16.self))
    }
  }

  private func acceptAll(_ accepted: (SocketStream) -> Void) {
    while true {
      let client = accept(fd, nil, nil)
      guard client >= 0 else {
        if errno == EMFILE || errno == ENFILE {
          // No descriptor to take the client with: try again shortly rather than spin.
          watcher?.isEnabled = false
          resumeTimer?.schedule(after: 100_000)
        }
        return
      }
      _ = fcntl(client, F_SETFL, fcntl(client, F_GETFL) | O_NONBLOCK)
      _ = fcntl(client, F_SETFD, FD_CLOEXEC)
      do {
        accepted(try SocketStream(loop: loop, fd: client, tls: nil, peer: "tcp peer"))
      } catch {
        Glibc.close(client)
      }
    }
  }

  deinit {
    resumeTimer?.cancel()
    watcher?.cancel()
    Glibc.close(fd)
  }
}
