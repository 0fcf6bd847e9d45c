import EventLoop
import Transport

/// `[Metrics] Listen=`: a tiny HTTP/1.1 server on the daemon's loop that serves `GET /metrics`
/// and nothing else.
///
/// A thin driver: `MetricsRequestParser` reads the request, `MetricsHTTPResponse` answers it.
/// Everything is non-blocking and bounded, so a scraper (or anyone who can reach the port)
/// cannot stall the loop: at most `maxConnections` are open at once (more are closed as soon
/// as they are accepted), a request head is at most 8 KiB, a connection that sends no complete
/// head within `idleTimeout` is closed, and every connection closes after its one answer.
public final class MetricsServer {
  /// The most connections open at once.
  public static let maxConnections = 4
  /// How long a connection may take to send its request.
  public static let idleTimeout = Duration.seconds(5)

  private let loop: EventLoop
  private var listener: TCPListener?
  private var connections: [ObjectIdentifier: MetricsConnection] = [:]
  private let render: (OpenMetricsRenderer.Format) -> String
  /// Connections turned away because `maxConnections` were open.
  public private(set) var refused = 0

  /// Binds `address` and serves the text `render` makes; a busy port or an address this host
  /// does not have is an error here, at start.
  public init(
    loop: EventLoop, address: MetricsListenAddress,
    render: @escaping (OpenMetricsRenderer.Format) -> String
  ) throws(SystemError) {
    self.loop = loop
    self.render = render
    listener = try TCPListener(loop: loop, host: address.host, port: address.port) {
      [unowned self] stream in self.accepted(stream)
    }
  }

  /// The port bound.
  public var port: UInt16 { listener?.port ?? 0 }

  /// How many connections are open.
  public var openConnections: Int { connections.count }

  private func accepted(_ stream: SocketStream) {
    guard connections.count < Self.maxConnections else {
      refused += 1
      stream.close()
      return
    }
    do {
      let connection = try MetricsConnection(
        loop: loop, stream: stream, render: render,
        closed: { [unowned self] in self.connections[ObjectIdentifier($0)] = nil })
      connections[ObjectIdentifier(connection)] = connection
    } catch {
      stream.close()
    }
  }

  /// Stops listening and closes every connection.
  public func stop() {
    listener = nil
    for connection in connections.values { connection.close() }
    connections = [:]
  }
}

/// One client of the metrics endpoint: reads a request head, answers once, closes.
final class MetricsConnection: ByteStreamDelegate {
  private let stream: SocketStream
  private var parser = MetricsRequestParser()
  private var idleTimer: Timer?
  private let render: (OpenMetricsRenderer.Format) -> String
  private let closed: (MetricsConnection) -> Void
  private var answered = false
  private var isClosed = false

  init(
    loop: EventLoop, stream: SocketStream, render: @escaping (OpenMetricsRenderer.Format) -> String,
    closed: @escaping (MetricsConnection) -> Void
  ) throws(SystemError) {
    self.stream = stream
    self.render = render
    self.closed = closed
    idleTimer = try loop.makeTimer { [weak self] in self?.close() }
    idleTimer?.schedule(after: MetricsServer.idleTimeout)
    stream.delegate = self
  }

  func stream(_ stream: any ByteStream, didReceive bytes: UnsafeRawBufferPointer) {
    guard !answered else { return }
    switch parser.feed(bytes) {
    case .needMore: return
    case .request(let head): answer(MetricsHTTPResponse.bytes(for: head, render: render))
    case .invalid(let status): answer(MetricsHTTPResponse.bytes(forInvalid: status))
    }
  }

  func streamDidDrain(_ stream: any ByteStream) {
    if answered { close() }
  }

  func stream(_ stream: any ByteStream, didCloseWith error: TransportError?) {
    close()
  }

  private func answer(_ bytes: [UInt8]) {
    answered = true
    // Nothing more is read: the answer is the last thing on this connection.
    stream.isReadingPaused = true
    bytes.withUnsafeBytes { stream.write($0) }
    if stream.pendingWriteCount == 0 { close() }
  }

  func close() {
    guard !isClosed else { return }
    isClosed = true
    idleTimer?.cancel()
    idleTimer = nil
    stream.delegate = nil
    stream.close()
    closed(self)
  }
}
