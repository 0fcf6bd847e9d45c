import EventLoop
@preconcurrency import Glibc

/// A TCP listener on loopback for tests, accepting on the loop.
final class LoopbackListener {
  let fd: Int32
  let port: Int
  private var watcher: IOWatcher?
  private(set) var accepted: [Int32] = []

  /// Binds to `host` ("127.0.0.1" or "::1") on an ephemeral port.
  init(host: String = "127.0.0.1", backlog: Int32 = 16) throws {
    let v6 = host.contains(":")
    let fd = socket(v6 ? AF_INET6 : AF_INET, Int32(SOCK_STREAM.rawValue), 0)
    self.fd = fd
    var one: Int32 = 1
    setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, socklen_t(MemoryLayout<Int32>.size))
    var rc: Int32
    if v6 {
      var addr = sockaddr_in6()
      addr.sin6_family = sa_family_t(AF_INET6)
      inet_pton(AF_INET6, host, &addr.sin6_addr)
      rc = withUnsafePointer(to: &addr) {
        $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
          bind(fd, $0, socklen_t(MemoryLayout<sockaddr_in6>.size))
        }
      }
    } else {
      var addr = sockaddr_in()
      addr.sin_family = sa_family_t(AF_INET)
      inet_pton(AF_INET, host, &addr.sin_addr)
      rc = withUnsafePointer(to: &addr) {
        $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
          bind(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
        }
      }
    }
    guard rc == 0, listen(fd, backlog) == 0 else { throw SystemError.last("bind/listen") }
    var storage = sockaddr_storage()
    var length = socklen_t(MemoryLayout<sockaddr_storage>.size)
    _ = withUnsafeMutablePointer(to: &storage) {
      $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(fd, $0, &length) }
    }
    port = withUnsafeBytes(of: &storage) { raw in
      v6
        ? Int(UInt16(bigEndian: raw.load(fromByteOffset: 2, as: UInt16.self)))
        : Int(UInt16(bigEndian: raw.load(fromByteOffset: 2, as: UInt16.self)))
    }
  }

  /// Accepts connections on the loop and calls `handler` with each fd.
  func acceptOnLoop(_ loop: EventLoop, handler: @escaping (Int32) -> Void = { _ in }) throws {
    watcher = try loop.watch(fd: fd, events: .readable) { [unowned self] _ in
      let client = accept(self.fd, nil, nil)
      if client >= 0 {
        self.accepted.append(client)
        handler(client)
      }
    }
  }

  deinit {
    watcher?.cancel()
    for client in accepted { close(client) }
    close(fd)
  }
}
