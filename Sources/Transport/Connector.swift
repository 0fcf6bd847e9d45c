import EventLoop
@preconcurrency import Glibc

/// Where to connect, and whether to wrap the connection in TLS.
public struct Endpoint: Sendable, Hashable {
  /// Host name or IP literal (IPv6 without brackets).
  public var host: String
  /// TCP port.
  public var port: Int
  /// Whether to use TLS, verifying the certificate for `host`.
  public var useTLS: Bool
  /// An HTTP proxy to tunnel through with CONNECT (RFC 9110 §9.3.6), if any.
  public var proxy: ProxyAddress?

  /// Creates an endpoint.
  public init(host: String, port: Int, useTLS: Bool, proxy: ProxyAddress? = nil) {
    self.host = host
    self.port = port
    self.useTLS = useTLS
    self.proxy = proxy
  }
}

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

/// Opens a stream to an endpoint: DNS off the loop, staggered TCP attempts across all
/// addresses (RFC 8305 "Happy Eyeballs"), then the TLS handshake, all within one deadline.
public final class Connector {
  /// How long to wait for an attempt before starting the next address in parallel
  /// (RFC 8305 §5 recommends 250 ms).
  public static let attemptDelay: Microseconds = 250_000

  private let loop: EventLoop
  private let resolver: Resolver
  private let tlsContext: TLSContext?
  private let endpoint: Endpoint
  private let timeout: Microseconds
  private var completion: ((Result<SocketStream, TransportError>) -> Void)?

  private var deadlineTimer: Timer?
  private var staggerTimer: Timer?
  private var addresses: [SocketAddress] = []
  private var nextAddress = 0
  private var attempts: [Attempt] = []
  private var failures: [String] = []
  private var phase = Phase.resolving {
    didSet { onPhaseChange?(phase) }
  }
  private var handshake: (fd: Int32, session: TLSSession, watcher: IOWatcher, peer: String)?

  private final class Attempt {
    let fd: Int32
    let address: SocketAddress
    var watcher: IOWatcher?
    init(fd: Int32, address: SocketAddress) {
      self.fd = fd
      self.address = address
    }
  }

  /// Prepares a connection; `tlsContext` is required when the endpoint uses TLS.
  public init(
    loop: EventLoop, resolver: Resolver, endpoint: Endpoint, tlsContext: TLSContext?,
    timeout: Microseconds
  ) {
    self.loop = loop
    self.resolver = resolver
    self.endpoint = endpoint
    self.tlsContext = tlsContext
    self.timeout = timeout
  }

  deinit {
    cancel()
  }

  /// What a connector is doing.
  public enum Phase: String, Sendable, Hashable, CustomStringConvertible {
    case resolving
    case connecting
    case proxyConnect = "proxy CONNECT"
    case tlsHandshake = "TLS handshake"

    public var description: String { rawValue }
  }

  /// What the connector is doing now.
  public var currentPhase: Phase { phase }
  /// Called as the connector moves from phase to phase (for status lines), on the loop.
  public var onPhaseChange: ((Phase) -> Void)?

  /// Starts; the completion runs once on the loop, unless `cancel()` comes first.
  public func start(completion: @escaping (Result<SocketStream, TransportError>) -> Void) {
    self.completion = completion
    if endpoint.useTLS && tlsContext == nil {
      finish(.failure(.tlsConfiguration("no TLS context for a wss:// endpoint")))
      return
    }
    do {
      deadlineTimer = try loop.makeTimer { [unowned self] in
        self.finish(
          .failure(.timedOut(phase: self.phase.rawValue, seconds: Double(self.timeout) / 1_000_000))
        )
      }
      deadlineTimer?.schedule(after: timeout)
      staggerTimer = try loop.makeTimer { [unowned self] in self.startNextAttempt() }
    } catch {
      finish(.failure(.system(error)))
      return
    }
    let dial = endpoint.proxy.map { ($0.host, $0.port) } ?? (endpoint.host, endpoint.port)
    resolver.resolve(host: dial.0, port: dial.1) { [weak self] result in
      guard let self, self.completion != nil else { return }
      switch result {
      case .success(let list):
        self.addresses = SocketAddress.interleaved(list)
        self.phase = .connecting
        self.startNextAttempt()
      case .failure(let error):
        self.finish(.failure(error))
      }
    }
  }

  /// Abandons the connection; the completion will not run.
  public func cancel() {
    completion = nil
    cleanUp(keeping: nil)
  }

  private func startNextAttempt() {
    guard completion != nil, handshake == nil else { return }
    while nextAddress < addresses.count {
      let address = addresses[nextAddress]
      nextAddress += 1
      switch openSocket(to: address) {
      case .success(let attempt):
        attempts.append(attempt)
        if nextAddress < addresses.count { staggerTimer?.schedule(after: Self.attemptDelay) }
        return
      case .failure(let error):
        failures.append("\(address): \(error.message)")
      }
    }
    if attempts.isEmpty {
      let dial = endpoint.proxy.map { ($0.host, $0.port) } ?? (endpoint.host, endpoint.port)
      finish(.failure(.connectFailed(host: dial.0, port: dial.1, attempts: failures)))
    }
  }

  private func openSocket(to address: SocketAddress) -> Result<Attempt, SystemError> {
    let fd = socket(
      address.family,
      Int32(SOCK_STREAM.rawValue) | Int32(SOCK_NONBLOCK.rawValue)
        | Int32(SOCK_CLOEXEC.rawValue), 0)
    guard fd >= 0 else { return .failure(.last("socket")) }
    var one: Int32 = 1
    // Chat messages are small and latency matters more than packet count.
    setsockopt(fd, Int32(IPPROTO_TCP), TCP_NODELAY, &one, socklen_t(MemoryLayout<Int32>.size))
    let rc = address.withSockaddr { connect(fd, $0, $1) }
    if rc != 0 && errno != EINPROGRESS {
      let error = SystemError.last("connect")
      Glibc.close(fd)
      return .failure(error)
    }
    let attempt = Attempt(fd: fd, address: address)
    do {
      attempt.watcher = try loop.watch(fd: fd, events: .writable) {
        [unowned self, unowned attempt] _ in
        self.attemptBecameWritable(attempt)
      }
    } catch {
      Glibc.close(fd)
      return .failure(error)
    }
    return .success(attempt)
  }

  private func attemptBecameWritable(_ attempt: Attempt) {
    var error: Int32 = 0
    var length = socklen_t(MemoryLayout<Int32>.size)
    getsockopt(attempt.fd, SOL_SOCKET, SO_ERROR, &error, &length)
    attempt.watcher?.cancel()
    if error != 0 {
      failures.append("\(attempt.address): \(SystemError.describe(error))")
      attempts.removeAll { $0 === attempt }
      Glibc.close(attempt.fd)
      // A failed attempt starts the next one at once rather than after the delay.
      staggerTimer?.disarm()
      startNextAttempt()
      return
    }
    // The first connected attempt wins; the others are closed.
    cleanUp(keeping: attempt)
    connected(fd: attempt.fd, peer: attempt.address.description)
  }

  private func connected(fd: Int32, peer: String) {
    if let proxy = endpoint.proxy, !tunnelEstablished {
      startTunnel(fd: fd, peer: "\(peer) via proxy \(proxy)")
      return
    }
    guard endpoint.useTLS, let tlsContext else {
      makeStream(fd: fd, tls: nil, peer: peer)
      return
    }
    phase = .tlsHandshake
    do {
      let session = try TLSSession(context: tlsContext, fd: fd, host: endpoint.host)
      let watcher = try loop.watch(fd: fd, events: .writable) { [unowned self] _ in
        self.continueHandshake()
      }
      handshake = (fd, session, watcher, peer)
      continueHandshake()
    } catch let error as TransportError {
      Glibc.close(fd)
      finish(.failure(error))
    } catch {
      Glibc.close(fd)
      finish(.failure(.tlsHandshakeFailed("\(error)")))
    }
  }

  // MARK: HTTP CONNECT

  private var tunnel: (fd: Int32, watcher: IOWatcher, response: [UInt8], peer: String)?

  /// Asks the proxy for a tunnel to the endpoint; TLS and the upgrade then run inside it.
  private func startTunnel(fd: Int32, peer: String) {
    phase = .proxyConnect
    let target =
      endpoint.host.contains(":")
      ? "[\(endpoint.host)]:\(endpoint.port)" : "\(endpoint.host):\(endpoint.port)"
    let request = Array("CONNECT \(target) HTTP/1.1\r\nHost: \(target)\r\n\r\n".utf8)
    // The request is tiny and the socket fresh: the kernel takes it whole.
    let sent = request.withUnsafeBytes { send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
    guard sent == request.count else {
      Glibc.close(fd)
      finish(.failure(.proxyFailed("cannot send CONNECT: \(SystemError.describe(errno))")))
      return
    }
    do {
      let watcher = try loop.watch(fd: fd, events: .readable) { [unowned self] _ in
        self.readTunnelResponse()
      }
      tunnel = (fd, watcher, [], peer)
    } catch {
      Glibc.close(fd)
      finish(.failure(.system(error)))
    }
  }

  private func readTunnelResponse() {
    guard var current = tunnel else { return }
    var buffer = [UInt8](repeating: 0, count: 4096)
    let n = buffer.withUnsafeMutableBytes { recv(current.fd, $0.baseAddress, $0.count, 0) }
    if n < 0 && (errno == EAGAIN || errno == EINTR) { return }
    guard n > 0 else {
      failTunnel("the proxy closed the connection")
      return
    }
    current.response += buffer[..<n]
    tunnel = current
    guard let end = Self.headEnd(current.response) else {
      if current.response.count > 16 * 1024 { failTunnel("the proxy's answer is too long") }
      return
    }
    let statusLine = String(decoding: current.response.prefix { $0 != 13 }, as: UTF8.self)
    let parts = statusLine.split(separator: " ", maxSplits: 2)
    guard parts.count >= 2, parts[0].hasPrefix("HTTP/1."), parts[1] == "200" else {
      failTunnel("the proxy refused the tunnel: \(statusLine.prefix(100))")
      return
    }
    guard end == current.response.count else {
      failTunnel("the proxy sent data before the tunnel was up")
      return
    }
    current.watcher.cancel()
    tunnel = nil
    tunnelEstablished = true
    connected(fd: current.fd, peer: current.peer)
  }

  private var tunnelEstablished = false

  private func failTunnel(_ reason: String) {
    guard let current = tunnel else { return }
    current.watcher.cancel()
    Glibc.close(current.fd)
    tunnel = nil
    finish(.failure(.proxyFailed(reason)))
  }

  private static func headEnd(_ bytes: [UInt8]) -> Int? {
    guard bytes.count >= 4 else { return nil }
    for i in 0...(bytes.count - 4)
    where bytes[i] == 13 && bytes[i + 1] == 10 && bytes[i + 2] == 13 && bytes[i + 3] == 10 {
      return i + 4
    }
    return nil
  }

  private func continueHandshake() {
    guard let handshake else { return }
    switch handshake.session.handshake() {
    case .done:
      handshake.watcher.cancel()
      self.handshake = nil
      makeStream(fd: handshake.fd, tls: handshake.session, peer: handshake.peer)
    case .wantRead:
      handshake.watcher.events = .readable
    case .wantWrite:
      handshake.watcher.events = .writable
    case .closed:
      failHandshake(.tlsHandshakeFailed("the server closed the connection during the handshake"))
    case .failed(let error):
      failHandshake(error)
    }
  }

  private func failHandshake(_ error: TransportError) {
    guard let handshake else { return }
    handshake.watcher.cancel()
    self.handshake = nil
    Glibc.close(handshake.fd)
    finish(.failure(error))
  }

  private func makeStream(fd: Int32, tls: TLSSession?, peer: String) {
    do {
      finish(.success(try SocketStream(loop: loop, fd: fd, tls: tls, peer: peer)))
    } catch {
      Glibc.close(fd)
      finish(.failure(.system(error)))
    }
  }

  private func finish(_ result: Result<SocketStream, TransportError>) {
    guard let completion else {
      if case .success(let stream) = result { stream.close() }
      return
    }
    self.completion = nil
    cleanUp(keeping: nil)
    completion(result)
  }

  /// Closes every attempt but `keeping`, and stops the timers.
  private func cleanUp(keeping: Attempt?) {
    for attempt in attempts where attempt !== keeping {
      attempt.watcher?.cancel()
      Glibc.close(attempt.fd)
    }
    attempts.removeAll()
    staggerTimer?.disarm()
    if keeping == nil {
      deadlineTimer?.cancel()
      deadlineTimer = nil
      staggerTimer?.cancel()
      staggerTimer = nil
      if let handshake {
        handshake.watcher.cancel()
        Glibc.close(handshake.fd)
        self.handshake = nil
      }
      if let tunnel {
        tunnel.watcher.cancel()
        Glibc.close(tunnel.fd)
        self.tunnel = nil
      }
    }
  }
}
