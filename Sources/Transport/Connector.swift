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

/// Opens a stream to an endpoint: DNS off the loop, staggered TCP attempts across all
/// addresses (RFC 8305 "Happy Eyeballs"), the proxy's tunnel if there is one (`ProxyTunnel`),
/// then the TLS handshake, all within one deadline.
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

  private var tunnel: ProxyTunnel?
  private var tunnelEstablished = false

  /// Asks the proxy for a tunnel to the endpoint; TLS and the upgrade then run inside it.
  private func startTunnel(fd: Int32, peer: String) {
    phase = .proxyConnect
    do {
      tunnel = try ProxyTunnel(
        loop: loop, fd: fd, peer: peer, host: endpoint.host, port: endpoint.port
      ) { [unowned self] result in
        self.tunnelFinished(result)
      }
    } catch {
      Glibc.close(fd)
      finish(.failure(error))
    }
  }

  private func tunnelFinished(_ result: Result<Void, TransportError>) {
    guard let tunnel else { return }
    self.tunnel = nil
    switch result {
    case .success:
      tunnelEstablished = true
      connected(fd: tunnel.fd, peer: tunnel.peer)
    case .failure(let error):
      Glibc.close(tunnel.fd)
      finish(.failure(error))
    }
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
        tunnel.cancel()
        Glibc.close(tunnel.fd)
        self.tunnel = nil
      }
    }
  }
}
