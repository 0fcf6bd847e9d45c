import JSON

/// A WebSocket client connection as a pure state machine, with no I/O (RFC 6455).
///
/// The owner writes `takeOutbound()` to the socket, passes received bytes to `receive`,
/// then calls `nextEvent()` until it answers nil. Pings are answered and close frames
/// echoed here, so every caller gets the protocol right; the owner only adds timers.
public final class ClientConnection {
  /// Limits for one connection.
  public struct Limits: Sendable, Hashable {
    /// The largest frame payload accepted; larger ones fail with 1009.
    public var maxFrameSize: Int
    /// The largest message accepted after decompression; larger ones fail with 1009.
    public var maxMessageSize: Int
    /// The largest handshake response head accepted.
    public var maxResponseHeadSize: Int

    /// Creates limits; 16 MiB by default, as Autobahn's largest cases need.
    public init(
      maxFrameSize: Int = 16 << 20, maxMessageSize: Int = 16 << 20,
      maxResponseHeadSize: Int = 64 << 10
    ) {
      self.maxFrameSize = maxFrameSize
      self.maxMessageSize = maxMessageSize
      self.maxResponseHeadSize = maxResponseHeadSize
    }
  }

  /// The connection's lifecycle (RFC 6455 §4, §7).
  public enum State: Sendable, Hashable {
    /// The request is sent or about to be; waiting for the 101.
    case handshaking
    /// Messages flow both ways.
    case open
    /// A close frame was sent; waiting for the peer's.
    case closing
    /// Done; the transport should be closed once the server has closed its end.
    case closed
  }

  /// Something the owner must know about.
  public enum Event: Sendable, Hashable {
    /// The handshake succeeded.
    case opened(ClientHandshake.Result)
    /// The handshake failed; the transport should be closed now.
    case handshakeFailed(HandshakeError)
    /// A complete data message.
    case message(Message)
    /// A ping arrived; its pong is already queued.
    case ping([UInt8])
    /// A pong arrived.
    case pong([UInt8])
    /// The connection is closed.
    case closed(CloseInfo)
  }

  /// Why a send was refused.
  public enum SendError: Error, Sendable, Hashable, CustomStringConvertible {
    /// The connection is not open.
    case notOpen(State)
    /// A control payload exceeds 125 bytes (RFC 6455 §5.5).
    case controlPayloadTooLong(Int)
    /// The close code may not be sent (1005, 1006, 1015 and unassigned ranges).
    case invalidCloseCode(UInt16)
    /// A text message is not UTF-8.
    case invalidUTF8
    /// Compression failed.
    case compression(DeflateError)

    public var description: String {
      switch self {
      case .notOpen(let state): "the connection is not open (\(state))"
      case .controlPayloadTooLong(let n): "control payload of \(n) bytes exceeds 125"
      case .invalidCloseCode(let code): "close code \(code) may not be sent"
      case .invalidUTF8: "text is not valid UTF-8"
      case .compression(let error): "compression failed: \(error)"
      }
    }
  }

  /// The current state.
  public var state: State {
    if handshakeFailed { return .closed }
    guard let session else { return .handshaking }
    switch session.state {
    case .open: return .open
    case .closing: return .closing
    case .closed: return .closed
    }
  }

  /// What the server agreed to, once open.
  public private(set) var negotiated: ClientHandshake.Result?

  private let handshake: ClientHandshake
  private let limits: Limits
  private var responseParser: HTTPResponseParser
  private var encoder: FrameEncoder
  // Unchecked exclusivity (the session, its unretained twin and the pending events): read for every
  // frame, by the one thread that drives the connection, never through overlapping accesses.
  @exclusivity(unchecked) private var session: FrameSession? {
    didSet { frameSession = session.map(Unmanaged.passUnretained) }
  }
  /// The session, for the calls every frame makes: `session` holds it from the handshake on
  /// and never lets it go, so these calls need not count a reference to it (each load of
  /// `session` for a call did, atomically).
  @exclusivity(unchecked) private var frameSession: Unmanaged<FrameSession>?
  private var request: [UInt8]
  @exclusivity(unchecked) private var pendingEvents: [Event] = []
  private var handshakeFailed = false

  /// Creates a connection for `handshake`; `random` supplies the masking keys.
  public init(
    handshake: ClientHandshake, limits: Limits = Limits(),
    random: some RandomNumberGenerator = SecureRandomGenerator()
  ) {
    self.handshake = handshake
    self.limits = limits
    responseParser = HTTPResponseParser(limit: limits.maxResponseHeadSize)
    encoder = FrameEncoder(masking: random)
    request = handshake.requestBytes
  }

  /// Whether bytes are waiting to be written.
  public var hasOutbound: Bool { !request.isEmpty || (session?.hasOutbound ?? false) }

  /// The number of bytes waiting to be written.
  public var outboundCount: Int { request.count + (session?.outboundCount ?? 0) }

  /// Takes the bytes to write, in order.
  public func takeOutbound() -> [UInt8] {
    let bytes = request + (session?.takeOutbound() ?? [])
    request = []
    return bytes
  }

  /// Hands the bytes to write to `write`, in order, without copying them out (see
  /// `FrameSession.writeOutbound`).
  public func writeOutbound(_ write: (UnsafeRawBufferPointer) -> Void) {
    if !request.isEmpty {
      request.withUnsafeBytes { write($0) }
      request = []
    }
    session?.writeOutbound(write)
  }

  /// Passes received bytes in; then call `nextEvent()` until nil.
  public func receive(_ bytes: UnsafeRawBufferPointer) {
    if let session {
      session.receive(bytes)
      return
    }
    guard !handshakeFailed else { return }
    do {
      guard let (head, remainder) = try responseParser.append(bytes) else { return }
      let result = try handshake.validate(head)
      let session = try startSession(result)
      self.session = session
      negotiated = result
      pendingEvents.append(.opened(result))
      remainder.withUnsafeBytes { session.receive($0) }
    } catch {
      handshakeFailed = true
      pendingEvents.append(.handshakeFailed(error))
    }
  }

  /// Takes back the payload of a received message its consumer is done with
  /// (`FrameSession.recycle`).
  public func recycle(_ payload: consuming [UInt8]) {
    guard let frameSession else { return }
    // Moved through the closure, not copied into it.
    var spent = Optional(consume payload)
    frameSession._withUnsafeGuaranteedRef { session in
      if let payload = spent.take() { session.recycle(payload) }
    }
  }

  /// Passes received bytes in.
  public func receive(_ bytes: [UInt8]) {
    bytes.withUnsafeBytes { receive($0) }
  }

  private func startSession(_ result: ClientHandshake.Result) throws(HandshakeError) -> FrameSession
  {
    var compression: FrameSession.Compression?
    if let deflate = result.deflate, let options = handshake.deflate {
      compression = FrameSession.Compression(
        outgoingWindowBits: deflate.clientMaxWindowBits,
        outgoingNoContextTakeover: deflate.clientNoContextTakeover,
        incomingNoContextTakeover: deflate.serverNoContextTakeover,
        threshold: options.compressionThreshold, level: options.compressionLevel)
    }
    do {
      return try FrameSession(
        role: .client, limits: limits, encoder: encoder, compression: compression)
    } catch {
      throw .invalidExtension("permessage-deflate: \(error)")
    }
  }

  /// The next event, or nil when more input is needed.
  public func nextEvent() -> Event? {
    if !pendingEvents.isEmpty { return pendingEvents.removeFirst() }
    guard let event = frameSession?._withUnsafeGuaranteedRef({ $0.nextEvent() }) else {
      return nil
    }
    return Self.event(event)
  }

  // Consumed: a message's payload moves into the event without a reference count.
  private static func event(_ event: consuming FrameSession.Event) -> Event {
    switch consume event {
    case .message(let m): .message(consume m)
    case .ping(let p): .ping(p)
    case .pong(let p): .pong(p)
    case .closed(let info): .closed(info)
    }
  }

  /// The transport closed (EOF, error or the owner's close timeout). Returns the final
  /// event if the connection had not already reported one.
  public func transportClosed() -> Event? {
    if let session { return session.transportClosed().map(Self.event) }
    guard !handshakeFailed else { return nil }
    handshakeFailed = true
    return .handshakeFailed(.malformedResponse("connection closed before the handshake response"))
  }

  // MARK: Sending

  /// Queues a text message; `text` must be UTF-8.
  public func send(text: UnsafeRawBufferPointer) throws(SendError) {
    try openSession().send(text: text)
  }

  /// Queues a text message (a Swift string is always valid UTF-8).
  public func send(text: String) throws(SendError) {
    var copy = text
    let session = try openSession()
    try copy.withUTF8 { buffer in
      Result { () throws(SendError) in try session.sendData(.text, UnsafeRawBufferPointer(buffer)) }
    }.get()
  }

  /// Queues a binary message.
  public func send(binary: UnsafeRawBufferPointer) throws(SendError) {
    try openSession().send(binary: binary)
  }

  /// Queues a message.
  public func send(_ message: Message) throws(SendError) {
    try openSession().send(message)
  }

  /// Queues messages, in order, counting them in `queued` (see `FrameSession.send(contentsOf:)`).
  public func send(contentsOf messages: [Message], queued: inout Int) throws(SendError) {
    try openSession().send(contentsOf: messages, queued: &queued)
  }

  /// Queues text messages kept in one buffer, in order (see `FrameSession.send(texts:)`).
  public func send(texts: PackedStrings, queued: inout Int) throws(SendError) {
    try openSession().send(texts: texts, queued: &queued)
  }

  /// Queues a ping.
  public func ping(_ payload: [UInt8] = []) throws(SendError) {
    try openSession().ping(payload)
  }

  /// Starts the closing handshake (RFC 6455 §7.1.2); the reason is cut to fit 123 bytes.
  public func close(code: CloseCode = .normalClosure, reason: String = "") throws(SendError) {
    try openSession().close(code: code, reason: reason)
  }

  private func openSession() throws(SendError) -> FrameSession {
    guard let session, session.state == .open else { throw .notOpen(state) }
    return session
  }
}
