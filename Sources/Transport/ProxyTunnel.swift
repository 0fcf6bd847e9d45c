import EventLoop
@preconcurrency import Glibc

/// The HTTP CONNECT exchange (RFC 9110 §9.3.6) that turns a fresh connection to a proxy into a
/// tunnel to the endpoint: TLS and the WebSocket upgrade then run inside it as if the
/// connection went to the endpoint itself.
///
/// The descriptor stays the connector's: it goes on with it once the tunnel is up and closes
/// it otherwise, so this type never closes it.
final class ProxyTunnel {
  /// What the proxy's answer says so far.
  enum Answer: Equatable {
    /// The response head has not ended yet.
    case incomplete
    /// The tunnel is up.
    case established
    /// The proxy refused, or answered in a way the tunnel cannot be used after.
    case failed(String)
  }

  /// The connection to the proxy.
  let fd: Int32
  /// Where the connection goes, for status lines and errors.
  let peer: String
  private var watcher: IOWatcher?
  private var response: [UInt8] = []
  private var completion: ((Result<Void, TransportError>) -> Void)?

  /// A response head longer than this is no proxy's answer to CONNECT.
  static let maxAnswerSize = 16 * 1024

  /// Sends the CONNECT request for `host`:`port` on `fd` and waits for the answer; the
  /// completion runs once, on the loop, unless `cancel()` comes first.
  init(
    loop: EventLoop, fd: Int32, peer: String, host: String, port: Int,
    completion: @escaping (Result<Void, TransportError>) -> Void
  ) throws(TransportError) {
    self.fd = fd
    self.peer = peer
    let target = host.contains(":") ? "[\(host)]:\(port)" : "\(host):\(port)"
    let request = Array("CONNECT \(target) HTTP/1.1\r\nHost: \(target)\r\n\r\n".utf8)
    // The request is tiny and the socket fresh: the kernel takes it whole.
    let sent = request.withUnsafeBytes { send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
    guard sent == request.count else {
      throw .proxyFailed("cannot send CONNECT: \(SystemError.describe(errno))")
    }
    do {
      watcher = try loop.watch(fd: fd, events: .readable) { [unowned self] _ in
        self.readAnswer()
      }
    } catch {
      throw .system(error)
    }
    self.completion = completion
  }

  /// Stops waiting; the completion will not run.
  func cancel() {
    completion = nil
    watcher?.cancel()
    watcher = nil
  }

  private func readAnswer() {
    guard completion != nil else { return }
    var buffer = [UInt8](repeating: 0, count: 4096)
    let n = buffer.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
    if n < 0 && (errno == EAGAIN || errno == EINTR) { return }
    guard n > 0 else {
      finish(.failure(.proxyFailed("the proxy closed the connection")))
      return
    }
    response += buffer[..<n]
    switch Self.answer(response) {
    case .incomplete: return
    case .established: finish(.success(()))
    case .failed(let reason): finish(.failure(.proxyFailed(reason)))
    }
  }

  private func finish(_ result: Result<Void, TransportError>) {
    guard let completion else { return }
    cancel()
    completion(result)
  }

  /// Judges the bytes the proxy has sent so far. Only a 200 whose head is all that arrived
  /// opens the tunnel: bytes after the head have been read out of the socket, where TLS or
  /// the upgrade would never see them (and the endpoint speaks only after the client has).
  static func answer(_ response: [UInt8]) -> Answer {
    guard let end = headEnd(response) else {
      return response.count > maxAnswerSize
        ? .failed("the proxy's answer is too long") : .incomplete
    }
    let statusLine = String(decoding: response.prefix { $0 != 13 }, as: UTF8.self)
    let parts = statusLine.split(separator: " ", maxSplits: 2)
    guard parts.count >= 2, parts[0].hasPrefix("HTTP/1."), parts[1] == "200" else {
      return .failed("the proxy refused the tunnel: \(statusLine.prefix(100))")
    }
    guard end == response.count else {
      return .failed("the proxy sent data before the tunnel was up")
    }
    return .established
  }

  /// The offset just past the blank line that ends the response head, if it has arrived.
  private static func headEnd(_ bytes: [UInt8]) -> Int? {
    guard bytes.count >= 4 else { return nil }
    for i in 0...(bytes.count - 4)
    where bytes[i] == 13 && bytes[i + 1] == 10 && bytes[i + 2] == 13 && bytes[i + 3] == 10 {
      return i + 4
    }
    return nil
  }
}
