import EventLoop
import Transport
import WebSocket

/// A WebSocket backend on loopback for client and driver tests, served on the test's own
/// loop: it accepts, upgrades, answers pings (unless told to play dead), records every text
/// frame, and sends or closes on request.
public final class TestBackend {
  /// The listening socket (its `port` is the URL's).
  public let listener: Listener
  /// Every connection accepted, oldest first.
  public private(set) var connections: [Connection] = []
  /// Every text frame received, across connections, in order.
  public var received: [String] { connections.flatMap(\.received) }
  /// Called with each text frame as it arrives.
  public var onText: ((String) -> Void)?
  /// While false, connections accepted play dead from the start: no upgrade ever comes.
  public var answersUpgrades = true

  /// Listens on 127.0.0.1, on a port of the kernel's choosing.
  public init(loop: EventLoop) throws {
    var accept: ((SocketStream) -> Void)?
    listener = try Listener(loop: loop, host: "127.0.0.1", port: 0) { accept?($0) }
    accept = { [unowned self] stream in
      let connection = Connection(backend: self, stream: stream)
      connection.playsDead = !self.answersUpgrades
      self.connections.append(connection)
    }
  }

  /// ws://127.0.0.1:PORT/chat.
  public var url: WebSocketURL {
    // A loopback URL of our own making always parses.
    (try? WebSocketURL(parsing: "ws://127.0.0.1:\(listener.port)/chat"))!
  }

  /// The newest connection.
  public var current: Connection? { connections.last }

  /// One accepted client.
  public final class Connection: ByteStreamDelegate {
    unowned let backend: TestBackend
    /// The accepted socket.
    public let stream: SocketStream
    private var handshake = ServerHandshake()
    private var session: FrameSession?
    /// The text frames received on this connection, in order.
    public private(set) var received: [String] = []
    /// The payloads of the pongs received, in order.
    public private(set) var pongs: [[UInt8]] = []
    /// Whether the connection is over (closed by either side).
    public private(set) var isClosed = false
    /// While true, nothing the client sends is read: no upgrade, no pongs, no close replies.
    public var playsDead = false

    init(backend: TestBackend, stream: SocketStream) {
      self.backend = backend
      self.stream = stream
      stream.delegate = self
    }

    /// Sends a text frame.
    public func send(_ text: String) {
      guard let session else { return }
      try? session.send(.text(Array(text.utf8)))
      stream.write(session.takeOutbound())
    }

    /// Sends several text frames in one write, so the client reads them together.
    public func sendTogether(_ texts: [String]) {
      guard let session else { return }
      for text in texts { try? session.send(.text(Array(text.utf8))) }
      stream.write(session.takeOutbound())
    }

    /// Sends a ping.
    public func ping(_ payload: [UInt8]) {
      guard let session else { return }
      try? session.ping(payload)
      stream.write(session.takeOutbound())
    }

    /// Starts the closing handshake with `code`.
    public func close(_ code: CloseCode) {
      guard let session else { return }
      try? session.close(code: code, reason: "test")
      stream.write(session.takeOutbound())
    }

    public func stream(_ stream: any ByteStream, didReceive bytes: UnsafeRawBufferPointer) {
      guard !playsDead else { return }
      if let session {
        session.receive(bytes)
        drain(session)
        return
      }
      guard let (request, remainder) = try? handshake.append(bytes),
        let accepted = try? ServerHandshake.accept(request, deflate: false),
        let session = try? FrameSession(
          role: .server, limits: ClientConnection.Limits(), encoder: FrameEncoder(),
          compression: nil)
      else { return }
      self.session = session
      stream.write(accepted.response)
      remainder.withUnsafeBytes { session.receive($0) }
      drain(session)
    }

    private func drain(_ session: FrameSession) {
      while let event = session.nextEvent() {
        if case .message(.text(let bytes)) = event {
          let text = String(decoding: bytes, as: UTF8.self)
          received.append(text)
          backend.onText?(text)
        }
        if case .pong(let payload) = event { pongs.append(payload) }
        if case .closed = event {
          stream.write(session.takeOutbound())
          stream.close()
          isClosed = true
          return
        }
      }
      if session.hasOutbound { stream.write(session.takeOutbound()) }
    }

    public func streamDidDrain(_ stream: any ByteStream) {}

    public func stream(_ stream: any ByteStream, didCloseWith error: TransportError?) {
      isClosed = true
    }
  }
}
