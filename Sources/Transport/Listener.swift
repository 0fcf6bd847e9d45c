import EventLoop
@preconcurrency import Glibc

/// A listening TCP socket on the loop; each accepted connection becomes a `SocketStream`.
/// Used by the demo server and tests: the daemon itself only connects out.
public final class Listener {
  /// The bound port (useful when asked for port 0).
  public let port: Int
  private let fd: Int32
  private let loop: EventLoop
  private var watcher: IOWatcher?

  /// Binds `host` (an IP literal) and `port`, and starts accepting.
  public init(
    loop: EventLoop, host: String, port: Int, accepted: @escaping (SocketStream) -> Void
  ) throws(TransportError) {
    guard let address = SocketAddress(ipLiteral: host, port: port) else {
      throw .resolutionFailed(host: host, reason: "listen address must be an IP literal")
    }
    let fd = socket(
      address.family,
      Int32(SOCK_STREAM.rawValue) | Int32(SOCK_NONBLOCK.rawValue)
        | Int32(SOCK_CLOEXEC.rawValue), 0)
    guard fd >= 0 else { throw .system(.last("socket")) }
    var one: Int32 = 1
    setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, socklen_t(MemoryLayout<Int32>.size))
    if address.family == AF_INET6 {
      setsockopt(fd, Int32(IPPROTO_IPV6), IPV6_V6ONLY, &one, socklen_t(MemoryLayout<Int32>.size))
    }
    guard address.withSockaddr({ bind(fd, $0, $1) }) == 0, listen(fd, 512) == 0 else {
      let error = SystemError.last("bind \(address)")
      Glibc.close(fd)
      throw .system(error)
    }
    var storage = sockaddr_storage()
    var length = socklen_t(MemoryLayout<sockaddr_storage>.size)
    _ = withUnsafeMutablePointer(to: &storage) {
      $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(fd, $0, &length) }
    }
    self.port = withUnsafeBytes(of: &storage) {
      Int(UInt16(bigEndian: $0.load(fromByteOffset: 2, as: UInt16.self)))
    }
    self.fd = fd
    self.loop = loop
    do {
      watcher = try loop.watch(fd: fd, events: .readable) { [unowned self] _ in
        self.acceptAll(accepted)
      }
    } catch {
      Glibc.close(fd)
      throw .system(error)
    }
  }

  deinit {
    watcher?.cancel()
    Glibc.close(fd)
  }

  private func acceptAll(_ accepted: (SocketStream) -> Void) {
    while true {
      var storage = sockaddr_storage()
      var length = socklen_t(MemoryLayout<sockaddr_storage>.size)
      let client = withUnsafeMutablePointer(to: &storage) {
        $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
          accept(fd, $0, &length)
        }
      }
      guard client >= 0 else { return }
      _ = fcntl(client, F_SETFL, fcntl(client, F_GETFL) | O_NONBLOCK)
      _ = fcntl(client, F_SETFD, FD_CLOEXEC)
      var one: Int32 = 1
      setsockopt(client, Int32(IPPROTO_TCP), TCP_NODELAY, &one, socklen_t(MemoryLayout<Int32>.size))
      let peer = withUnsafePointer(to: &storage) {
        $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { SocketAddress($0, length: length) }
      }
      do {
        accepted(try SocketStream(loop: loop, fd: client, tls: nil, peer: peer?.description ?? "?"))
      } catch {
        Glibc.close(client)
      }
    }
  }
}
