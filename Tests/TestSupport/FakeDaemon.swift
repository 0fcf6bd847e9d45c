@preconcurrency import Glibc
import JSON
import Synchronization
import Varlink
import XCTest

/// A stand-in for chatlinkd's control socket, on threads of its own: answers each Varlink call
/// with the replies its handler returns; an empty answer closes the connection.
public final class FakeDaemon: Sendable {
  /// The socket's path, in a directory of its own.
  public let path: String
  private let directory = TemporaryDirectory(prefix: "chatlink-fake-daemon")
  private let listener: Int32
  private let state: State

  /// Every call received so far, across connections.
  public var calls: [VarlinkCall] { state.calls.withLock { $0 } }

  /// Listens at once; `handler` is called on a connection's thread for each call.
  public init(handler: @escaping @Sendable (VarlinkCall) -> [VarlinkReply]) throws {
    path = directory.file("control.sock")
    let state = State(handler: handler)
    self.state = state
    listener = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
    var address = sockaddr_un()
    address.sun_family = sa_family_t(AF_UNIX)
    withUnsafeMutableBytes(of: &address.sun_path) { raw in
      for (i, byte) in path.utf8.enumerated() { raw[i] = byte }
    }
    let bound = withUnsafePointer(to: &address) {
      $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
        bind(listener, $0, socklen_t(MemoryLayout<sockaddr_un>.size))
      }
    }
    guard bound == 0, listen(listener, 16) == 0 else {
      throw XCTSkip("cannot listen on \(path): errno \(errno)")
    }
    let fd = listener
    // The accept loop holds only the state: deinit shuts the listener down, which ends it.
    detachThread {
      while true {
        let connection = accept(fd, nil, nil)
        guard connection >= 0 else { return }
        detachThread { state.serve(connection) }
      }
    }
  }

  /// Answers every method of io.chatlink.Daemon from a table of reply parameters by method
  /// name ("GetStatus"); any other method is not found.
  public convenience init(_ table: [String: JSONValue]) throws {
    try self.init { call in
      let method = String(call.method.split(separator: ".").last ?? "")
      guard let parameters = table[method] else {
        return [VarlinkReply(.methodNotFound(call.method))]
      }
      return [VarlinkReply(parameters: parameters)]
    }
  }

  deinit {
    shutdown(listener, Int32(SHUT_RDWR))
    close(listener)
  }

  /// What the connection threads share.
  private final class State: Sendable {
    let handler: @Sendable (VarlinkCall) -> [VarlinkReply]
    let calls = Mutex<[VarlinkCall]>([])

    init(handler: @escaping @Sendable (VarlinkCall) -> [VarlinkReply]) {
      self.handler = handler
    }

    func serve(_ connection: Int32) {
      defer { close(connection) }
      var framer = VarlinkFramer(limit: 1 << 20)
      var buffer = [UInt8](repeating: 0, count: 65536)
      while true {
        let n = buffer.withUnsafeMutableBytes { recv(connection, $0.baseAddress, $0.count, 0) }
        guard n > 0 else { return }
        let messages: [[UInt8]]
        do {
          messages = try buffer.withUnsafeBytes { raw in
            try Result { () throws(VarlinkError) in
              try framer.append(UnsafeRawBufferPointer(rebasing: raw[..<n]))
            }.get()
          }
        } catch {
          return
        }
        for message in messages {
          guard let call = try? VarlinkCall.decode(message) else { return }
          calls.withLock { $0.append(call) }
          let replies = handler(call)
          if replies.isEmpty { return }
          for reply in replies where !write(reply.encoded, to: connection) { return }
        }
      }
    }

    private func write(_ bytes: [UInt8], to connection: Int32) -> Bool {
      var offset = 0
      while offset < bytes.count {
        let sent = bytes.withUnsafeBytes {
          send(connection, $0.baseAddress! + offset, $0.count - offset, Int32(MSG_NOSIGNAL))
        }
        guard sent > 0 else { return false }
        offset += sent
      }
      return true
    }
  }
}

/// Runs `body` on a new thread nobody joins.
private func detachThread(_ body: @escaping @Sendable () -> Void) {
  let box = Unmanaged.passRetained(ThreadBody(body)).toOpaque()
  var thread = pthread_t()
  let made = pthread_create(
    &thread, nil,
    { raw in
      Unmanaged<ThreadBody>.fromOpaque(raw!).takeRetainedValue().body()
      return nil
    }, box)
  precondition(made == 0, "pthread_create: \(made)")
  pthread_detach(thread)
}

/// A thread's work, handed through pthread_create's one pointer.
private final class ThreadBody: Sendable {
  let body: @Sendable () -> Void
  init(_ body: @escaping @Sendable () -> Void) { self.body = body }
}
