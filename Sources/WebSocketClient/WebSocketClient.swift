import EventLoop
import JSON
import Transport
import WebSocket

/// One WebSocket connection over TCP or TLS, driven by the event loop.
///
/// It glues a `Connector` (transport), a `ClientConnection` (protocol) and timers. A client
/// connects once; reconnecting means making a new one, so no state leaks between connections.
public final class WebSocketClient: ByteStreamDelegate {
  /// What to connect to and how.
  public struct Configuration: Sendable {
    /// The server.
    public var url: WebSocketURL
    /// Extra handshake headers (Authorization, Origin, …).
    public var headers: HTTPHeaders
    /// Subprotocols to offer.
    public var subprotocols: [String]
    /// permessage-deflate to offer; nil offers none.
    public var deflate: PerMessageDeflateOptions?
    /// Frame, message and handshake size limits.
    public var limits: ClientConnection.Limits
    /// Time allowed for DNS, TCP, TLS and the upgrade together.
    public var connectTimeout: Microseconds
    /// Time allowed for the peer's close frame and TCP close after a close is under way.
    public var closeTimeout: Microseconds
    /// An HTTP CONNECT proxy to tunnel through.
    public var proxy: ProxyAddress?

    /// Creates a configuration with defaults: deflate offered, 16 MiB limits, 10 s connect
    /// timeout, 3 s close timeout.
    public init(
      url: WebSocketURL, headers: HTTPHeaders = HTTPHeaders(), subprotocols: [String] = [],
      deflate: PerMessageDeflateOptions? = PerMessageDeflateOptions(),
      limits: ClientConnection.Limits = ClientConnection.Limits(),
      connectTimeout: Microseconds = 10_000_000, closeTimeout: Microseconds = 3_000_000,
      proxy: ProxyAddress? = nil
    ) {
      self.proxy = proxy
      self.url = url
      self.headers = headers
      self.subprotocols = subprotocols
      self.deflate = deflate
      self.limits = limits
      self.connectTimeout = connectTimeout
      self.closeTimeout = closeTimeout
    }
  }

  /// Why a connection ended.
  public enum Disconnect: Sendable, CustomStringConvertible {
    /// The server refused the upgrade or answered wrongly.
    case handshakeFailed(HandshakeError)
    /// DNS, TCP or TLS failed, or the connection was lost.
    case transportFailed(TransportError)
    /// The connection had opened and is now closed (cleanly or not).
    case closed(CloseInfo)
    /// `close()` gave up the attempt before it connected.
    case cancelled

    public var description: String {
      switch self {
      case .handshakeFailed(let error): "\(error)"
      case .transportFailed(let error): "\(error)"
      case .closed(let info): "\(info)"
      case .cancelled: "cancelled"
      }
    }
  }

  /// How far an attempt got before the upgrade answer.
  public enum Progress: Sendable, Hashable {
    /// TCP is up; TLS is being negotiated.
    case tlsHandshake
    /// The upgrade request went out.
    case upgrading
  }

  /// Where the client is in its life.
  public enum Phase: Sendable, Hashable {
    case idle, connecting, upgrading, open, closing, closed
  }

  public weak var delegate: (any WebSocketClientDelegate)? {
    didSet { delegateChanges &+= 1 }
  }
  /// How often `delegate` was set: a read holds the delegate once for all its messages (a weak
  /// reference costs atomic operations on every load) and takes it again after a change.
  private var delegateChanges = 0
  /// Where this connection's traffic is counted, if anywhere.
  public var traffic: TrafficMeter?
  /// A message the delegate handed back (`recycle`), for the connection to reuse its memory.
  var spentMessage: Message?
  /// The configuration in use.
  public let configuration: Configuration
  // Unchecked exclusivity: read for every message, only on the loop's thread, never through
  // overlapping accesses.
  /// The current phase.
  @exclusivity(unchecked) public private(set) var phase = Phase.idle
  /// When the bytes being delivered were read (wall clock), once per read: the messages of one
  /// read arrived together and share it.
  public var receivedAt: Timestamp { readTime }
  private var readTime = Timestamp(microseconds: 0)

  private let loop: EventLoop
  private let resolver: Resolver
  private let tlsContext: TLSContext?
  private var random: any RandomNumberGenerator
  private var connector: Connector?
  private var stream: SocketStream?
  private(set) var connection: ClientConnection?
  private var deadlineTimer: Timer?
  private var flushScheduled = false
  private var pendingDisconnect: Disconnect?

  /// Creates a client; `tlsContext` is needed for wss:// URLs.
  public init(
    loop: EventLoop, resolver: Resolver, tlsContext: TLSContext?, configuration: Configuration,
    random: some RandomNumberGenerator = SecureRandomGenerator()
  ) {
    self.loop = loop
    self.resolver = resolver
    self.tlsContext = tlsContext
    self.configuration = configuration
    self.random = random
  }

  deinit {
    connector?.cancel()
    stream?.close()
  }

  /// The peer address and TLS version, once connected.
  public var peerDescription: String? { stream?.peerDescription }

  /// Stops reading from the socket (TCP flow control pushes back on the server) or resumes.
  public var isReadingPaused: Bool {
    get { stream?.isReadingPaused ?? false }
    set { stream?.isReadingPaused = newValue }
  }

  /// Bytes queued but not yet taken by the kernel.
  public var bufferedAmount: Int {
    (connection?.outboundCount ?? 0) + (stream?.pendingWriteCount ?? 0)
  }

  /// Connects; progress arrives through the delegate.
  public func connect() {
    guard phase == .idle else { return }
    phase = .connecting
    do {
      deadlineTimer = try loop.makeTimer { [unowned self] in self.deadlineExpired() }
    } catch {
      end(.transportFailed(.system(error)))
      return
    }
    deadlineTimer?.schedule(after: configuration.connectTimeout)
    let url = configuration.url
    let connector = Connector(
      loop: loop, resolver: resolver,
      endpoint: Endpoint(
        host: url.host, port: url.port, useTLS: url.secure, proxy: configuration.proxy),
      tlsContext: tlsContext, timeout: configuration.connectTimeout)
    self.connector = connector
    connector.onPhaseChange = { [weak self] phase in
      guard let self, phase == .tlsHandshake else { return }
      self.delegate?.webSocket(self, didReach: .tlsHandshake)
    }
    connector.start { [weak self] result in
      guard let self else { return }
      self.connector = nil
      switch result {
      case .success(let stream): self.transportConnected(stream)
      case .failure(let error): self.end(.transportFailed(error))
      }
    }
  }

  private func transportConnected(_ stream: SocketStream) {
    let handshake: ClientHandshake
    do {
      handshake = try ClientHandshake(
        url: configuration.url, headers: configuration.headers,
        subprotocols: configuration.subprotocols, deflate: configuration.deflate, random: &random)
    } catch {
      stream.close()
      end(.handshakeFailed(error))
      return
    }
    phase = .upgrading
    self.stream = stream
    stream.delegate = self
    connection = ClientConnection(
      handshake: handshake, limits: configuration.limits, random: random)
    flush()
    delegate?.webSocket(self, didReach: .upgrading)
  }

  /// Starts the closing handshake; `didDisconnect` follows when it completes or times out.
  public func close(code: CloseCode = .normalClosure, reason: String = "") {
    switch phase {
    case .idle, .closed:
      return
    case .connecting, .upgrading:
      connector?.cancel()
      connector = nil
      stream?.close()
      end(.cancelled)
    case .open:
      guard let connection else { return }
      try? connection.close(code: code, reason: reason)
      beginClosing()
      flush()
    case .closing:
      return
    }
  }

  /// Drops the connection at once, without a close handshake (e.g. a dead peer).
  public func abort(_ error: TransportError) {
    connector?.cancel()
    connector = nil
    end(.transportFailed(error))
  }

  // MARK: ByteStreamDelegate

  public func stream(_ stream: any ByteStream, didReceive bytes: UnsafeRawBufferPointer) {
    guard let connection else { return }
    readTime = .now()
    traffic?.bytesReceived += bytes.count
    connection.receive(bytes)
    var receiver = delegate
    var receiverAt = delegateChanges
    // Counted here and added once: the meter is an object, and every access to it through
    // this one's property costs a reference count.
    var messages = 0
    while phase != .closed, let event = connection.nextEvent() {
      if receiverAt != delegateChanges {
        receiver = delegate
        receiverAt = delegateChanges
      }
      if case .message = event { messages += 1 }
      handle(event, receiver, connection)
      if let spent = spentMessage.take() {
        switch consume spent {
        case .text(let bytes): connection.recycle(consume bytes)
        case .binary(let bytes): connection.recycle(consume bytes)
        }
      }
    }
    if messages > 0 { traffic?.messagesReceived += messages }
    // One write per read: pongs and close replies go out together.
    flush()
  }

  public func streamDidDrain(_ stream: any ByteStream) {}

  public func stream(_ stream: any ByteStream, didCloseWith error: TransportError?) {
    self.stream = nil
    if let pendingDisconnect {
      // The closing handshake finished and the server closed TCP, as it should.
      end(pendingDisconnect)
      return
    }
    switch connection?.transportClosed() {
    case .closed(let info):
      if let error, case .transport = info.initiator {
        end(.transportFailed(error))
      } else {
        end(.closed(info))
      }
    case .handshakeFailed(let handshakeError):
      end(error.map { .transportFailed($0) } ?? .handshakeFailed(handshakeError))
    default:
      end(.transportFailed(error ?? .closedByPeer))
    }
  }

  // MARK: Internals

  private func handle(
    _ event: consuming ClientConnection.Event, _ delegate: (any WebSocketClientDelegate)?,
    _ connection: ClientConnection
  ) {
    // Consumed: a message is handed on, not copied.
    switch consume event {
    case .opened(let result):
      deadlineTimer?.disarm()
      phase = .open
      delegate?.webSocketDidOpen(self, handshake: result)
    case .handshakeFailed(let error):
      stream?.close()
      stream = nil
      end(.handshakeFailed(error))
    case .message(let message):
      delegate?.webSocket(self, didReceive: consume message)
    case .ping(let payload):
      delegate?.webSocket(self, didReceivePing: payload)
    case .pong(let payload):
      delegate?.webSocket(self, didReceivePong: payload)
    case .closed(let info):
      // The closing handshake is done (or failed). RFC 6455 §7.1.1: the server closes TCP
      // first; wait for that, briefly, before closing ourselves.
      pendingDisconnect = .closed(info)
      beginClosing()
    }
    if phase == .open, connection.state == .closing {
      // We failed the connection (protocol violation): a close frame is queued.
      beginClosing()
    }
  }

  private func beginClosing() {
    guard phase != .closing && phase != .closed else { return }
    phase = .closing
    deadlineTimer?.schedule(after: configuration.closeTimeout)
  }

  private func deadlineExpired() {
    switch phase {
    case .connecting, .upgrading:
      let what =
        phase == .connecting ? (connector?.currentPhase.rawValue ?? "connecting") : "upgrading"
      connector?.cancel()
      connector = nil
      stream?.close()
      stream = nil
      end(
        .transportFailed(
          .timedOut(phase: what, seconds: Double(configuration.connectTimeout) / 1_000_000)))
    case .closing:
      stream?.close()
      stream = nil
      if let pendingDisconnect {
        end(pendingDisconnect)
      } else if let event = connection?.transportClosed(), case .closed(let info) = event {
        end(.closed(info))
      } else {
        end(.transportFailed(.timedOut(phase: "closing", seconds: 0)))
      }
    default:
      break
    }
  }

  func scheduleFlush() {
    guard !flushScheduled else { return }
    flushScheduled = true
    // Sends made in one loop iteration leave in one write.
    loop.post { [weak self] in
      self?.flushScheduled = false
      self?.flush()
    }
  }

  private func flush() {
    guard let connection, let stream, connection.hasOutbound else { return }
    let traffic = traffic
    connection.writeOutbound { bytes in
      traffic?.bytesSent += bytes.count
      stream.write(bytes)
    }
  }

  private func end(_ reason: Disconnect) {
    guard phase != .closed else { return }
    phase = .closed
    deadlineTimer?.cancel()
    deadlineTimer = nil
    stream?.close()
    stream = nil
    delegate?.webSocket(self, didDisconnect: reason)
  }
}
