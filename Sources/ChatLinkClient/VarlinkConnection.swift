import ChatLinkAPI
@preconcurrency import Glibc
import JSON
import Varlink

/// A blocking Varlink connection over a Unix socket, for command-line tools.
///
/// The CLI has nothing else to do while it waits, so plain blocking reads are the simple,
/// right choice here; the daemon side is fully non-blocking.
public final class VarlinkConnection {
  private let fd: Int32
  private var framer = VarlinkFramer(limit: 16 << 20)
  /// Replies received but not yet returned are `pending[next...]`: one read can bring a
  /// thousand pipelined replies, and taking each from the front must not move the rest.
  private var pending: [[UInt8]] = []
  private var next = 0
  private var buffer = [UInt8](repeating: 0, count: 64 * 1024)

  /// Connects to the socket at `path`. With a `timeout`, connecting, each write and each wait
  /// for a reply give up after it (a daemon that hangs must not hang a listing of several).
  public init(path: String, timeout: Duration? = nil) throws(ClientError) {
    let fd = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
    guard fd >= 0 else { throw .unreachable(path: path, errno: errno) }
    if let timeout {
      let (seconds, attoseconds) = timeout.components
      var limit = timeval(
        tv_sec: Int(seconds), tv_usec: Int(attoseconds / 1_000_000_000_000))
      for option in [SO_RCVTIMEO, SO_SNDTIMEO] {
        _ = setsockopt(fd, SOL_SOCKET, option, &limit, socklen_t(MemoryLayout<timeval>.size))
      }
    }
    var address = sockaddr_un()
    address.sun_family = sa_family_t(AF_UNIX)
    let bytes = Array(path.utf8)
    guard bytes.count < MemoryLayout.size(ofValue: address.sun_path) else {
      close(fd)
      throw .unreachable(path: path, errno: ENAMETOOLONG)
    }
    withUnsafeMutableBytes(of: &address.sun_path) { raw in
      for (i, b) in bytes.enumerated() { raw[i] = b }
      raw[bytes.count] = 0
    }
    let rc = withUnsafePointer(to: &address) {
      $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
        connect(fd, $0, socklen_t(MemoryLayout<sockaddr_un>.size))
      }
    }
    guard rc == 0 else {
      let error = errno
      close(fd)
      throw .unreachable(path: path, errno: error)
    }
    self.fd = fd
  }

  deinit {
    close(fd)
  }

  /// Sends a call without waiting.
  public func send(_ call: VarlinkCall) throws(ClientError) {
    try write(call.encoded)
  }

  /// Sends raw bytes (tests use this for malformed requests).
  public func write(_ bytes: [UInt8]) throws(ClientError) {
    var offset = 0
    while offset < bytes.count {
      let n = bytes.withUnsafeBytes {
        Glibc.send(fd, $0.baseAddress! + offset, $0.count - offset, Int32(MSG_NOSIGNAL))
      }
      if n < 0 {
        if errno == EINTR { continue }
        throw .connectionLost("write: \(String(cString: strerror(errno)))")
      }
      offset += n
    }
  }

  /// Reads the next reply; throws the reply's error as `ClientError.varlink`.
  public func receive() throws(ClientError) -> VarlinkReply {
    while next == pending.count {
      pending.removeAll(keepingCapacity: true)
      next = 0
      let n = buffer.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
      if n < 0 {
        if errno == EINTR { continue }
        if errno == EAGAIN || errno == EWOULDBLOCK {
          throw .connectionLost("chatlinkd did not answer in time")
        }
        throw .connectionLost("read: \(String(cString: strerror(errno)))")
      }
      if n == 0 { throw .connectionLost("the daemon closed the connection") }
      do {
        pending += try buffer.withUnsafeBytes { raw in
          Result { () throws(VarlinkError) in
            try framer.append(UnsafeRawBufferPointer(rebasing: raw[..<n]))
          }
        }.get()
      } catch {
        throw .protocolError("\(error)")
      }
    }
    let reply: VarlinkReply
    do {
      let message = pending[next]
      pending[next] = []
      next += 1
      reply = try VarlinkReply.decode(message)
    } catch {
      throw .protocolError("\(error)")
    }
    if let name = reply.error {
      throw .varlink(VarlinkError(name: name, parameters: reply.parameters))
    }
    return reply
  }

  /// Calls a method and returns its single reply's parameters.
  public func call(_ method: String, _ parameters: JSONValue = .object([])) throws(ClientError)
    -> JSONValue
  {
    try send(VarlinkCall(method: method, parameters: parameters))
    return try receive().parameters
  }

  /// The file descriptor, for callers that poll (e.g. follow with a timeout).
  public var fileDescriptor: Int32 { fd }
}

/// Why a call failed.
public enum ClientError: Error, Sendable, Hashable, CustomStringConvertible {
  /// The unit that serves `path`: chatlinkd@NAME for an instance's socket.
  private func unit(_ path: String) -> String {
    let prefix = Instance.runtimeDirectory + "/"
    guard path.hasPrefix(prefix), path.hasSuffix(".sock"), path != Instance.defaultSocket else {
      return "chatlinkd"
    }
    let name = String(path.dropFirst(prefix.count).dropLast(5))
    return (try? Instance(name)).map { "chatlinkd@\($0.name)" } ?? "chatlinkd"
  }

  /// The socket could not be reached: the daemon is not running, or no permission.
  case unreachable(path: String, errno: Int32)
  /// The daemon answered with a Varlink error.
  case varlink(VarlinkError)
  /// The connection broke.
  case connectionLost(String)
  /// The daemon sent something that is not Varlink.
  case protocolError(String)
  /// The socket to use could not be chosen: an invalid instance name, or two options naming
  /// different sockets. A usage error, found before connecting.
  case badSocketChoice(String)

  public var description: String {
    switch self {
    case .unreachable(let path, let code):
      let reason = String(cString: strerror(code))
      if code == EACCES {
        return
          "cannot connect to \(path): \(reason) (are you in the socket's group, e.g. chatlink?)"
      }
      return
        "cannot connect to \(path): \(reason); is chatlinkd running? "
        + "(systemctl start \(unit(path)))"
    case .varlink(let error): return "\(error)"
    case .connectionLost(let why): return "connection to chatlinkd lost: \(why)"
    case .protocolError(let why): return "unexpected answer from chatlinkd: \(why)"
    case .badSocketChoice(let why): return why
    }
  }
}
