/// How a connection ended.
public struct CloseInfo: Sendable, Hashable, CustomStringConvertible {
  /// Who started the close.
  public enum Initiator: Sendable, Hashable {
    /// We called `close`.
    case local
    /// The server sent a close frame first.
    case peer
    /// We failed the connection because the peer broke the protocol.
    case failure(ProtocolViolation)
    /// The transport ended without a close handshake.
    case transport
  }

  /// The code that describes the close: the peer's for a peer close, ours otherwise, and
  /// 1006 when no close frame was exchanged (RFC 6455 §7.1.5).
  public var code: CloseCode
  /// The reason text that went with `code`.
  public var reason: String
  /// Who started it.
  public var initiator: Initiator
  /// Whether both close frames were exchanged (RFC 6455 §7.1.4).
  public var clean: Bool

  /// Creates close information.
  public init(code: CloseCode, reason: String, initiator: Initiator, clean: Bool) {
    self.code = code
    self.reason = reason
    self.initiator = initiator
    self.clean = clean
  }

  public var description: String {
    var text = "\(code)"
    if !reason.isEmpty { text += " \"\(reason)\"" }
    switch initiator {
    case .local: text += ", closed by us"
    case .peer: text += ", closed by the server"
    case .failure(let violation): text += ", failed: \(violation)"
    case .transport: text += ", connection lost"
    }
    return clean ? text : text + " (unclean)"
  }
}

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
  public private(set) var state = State.handshaking
  /// What the server agreed to, once open.
  public private(set) var negotiated: ClientHandshake.Result?

  private let handshake: ClientHandshake
  private let limits: Limits
  private var responseParser: HTTPResponseParser
  private var decoder: FrameDecoder
  private var assembler: MessageAssembler
  private var encoder: FrameEncoder
  private var deflater: MessageDeflater?
  private var compressionThreshold = Int.max
  private var outbound: [UInt8] = []
  private var pendingEvents: [Event] = []
  /// After a framing error the byte stream cannot be parsed any more.
  private var inputBroken = false
  /// The close we sent, to report when the handshake completes.
  private var sentClose: (code: CloseCode, reason: String, initiator: CloseInfo.Initiator)?
  private var compressScratch: [UInt8] = []

  /// Creates a connection for `handshake`; `random` supplies the masking keys.
  public init(
    handshake: ClientHandshake, limits: Limits = Limits(),
    random: some RandomNumberGenerator = SecureRandomGenerator()
  ) {
    self.handshake = handshake
    self.limits = limits
    responseParser = HTTPResponseParser(limit: limits.maxResponseHeadSize)
    decoder = FrameDecoder(role: .client, maxFrameSize: limits.maxFrameSize)
    assembler = MessageAssembler(maxMessageSize: limits.maxMessageSize)
    encoder = FrameEncoder(masking: random)
    outbound = handshake.requestBytes
  }

  /// Whether bytes are waiting to be written.
  public var hasOutbound: Bool { !outbound.isEmpty }

  /// The number of bytes waiting to be written.
  public var outboundCount: Int { outbound.count }

  /// Takes the bytes to write, in order.
  public func takeOutbound() -> [UInt8] {
    defer { outbound = [] }
    return outbound
  }

  /// Passes received bytes in; then call `nextEvent()` until nil.
  public func receive(_ bytes: UnsafeRawBufferPointer) {
    switch state {
    case .handshaking:
      do {
        guard let (head, remainder) = try responseParser.append(bytes) else { return }
        let result = try handshake.validate(head)
        try startSession(result)
        pendingEvents.append(.opened(result))
        decoder.append(remainder)
      } catch {
        state = .closed
        pendingEvents.append(.handshakeFailed(error))
      }
    case .open, .closing:
      if !inputBroken { decoder.append(bytes) }
    case .closed:
      break
    }
  }

  /// Passes received bytes in.
  public func receive(_ bytes: [UInt8]) {
    bytes.withUnsafeBytes { receive($0) }
  }

  private func startSession(_ result: ClientHandshake.Result) throws(HandshakeError) {
    if let deflate = result.deflate, let options = handshake.deflate {
      do {
        assembler = MessageAssembler(
          maxMessageSize: limits.maxMessageSize,
          inflater: try MessageInflater.make(noContextTakeover: deflate.serverNoContextTakeover))
        if deflate.canCompress {
          deflater = try MessageDeflater.make(
            windowBits: deflate.clientMaxWindowBits,
            noContextTakeover: deflate.clientNoContextTakeover, level: options.compressionLevel)
          compressionThreshold = options.compressionThreshold
        }
      } catch {
        throw .invalidExtension("permessage-deflate: \(error)")
      }
      decoder.allowsCompressedBit = true
    }
    negotiated = result
    state = .open
  }

  /// The next event, or nil when more input is needed.
  public func nextEvent() -> Event? {
    if !pendingEvents.isEmpty { return pendingEvents.removeFirst() }
    while (state == .open || state == .closing) && !inputBroken {
      let step: FrameDecoder.Step
      do {
        step = try decoder.next()
      } catch {
        // A framing error leaves the byte stream unparseable: read nothing more.
        inputBroken = true
        fail(error)
        continue
      }
      do {
        switch step {
        case .needMoreData:
          if let partial = decoder.partialFrame, !partial.header.opcode.isControl,
            state == .open
          {
            try assembler.inspect(partial: partial.header, prefix: partial.payloadPrefix)
          }
          return nil
        case .frame(let frame):
          if let event = try handle(frame) { return event }
        }
      } catch {
        // A message-level error leaves framing intact, so the peer's close reply can still
        // be read and the closing handshake completed.
        fail(error)
      }
    }
    return nil
  }

  private func handle(_ frame: Frame) throws(ProtocolViolation) -> Event? {
    switch frame.opcode {
    case .ping:
      // After sending close we may send nothing else (RFC 6455 §5.5.1).
      if state == .open { encode(.pong, frame.payload) }
      return .ping(frame.payload)
    case .pong:
      return .pong(frame.payload)
    case .close:
      return try handleClose(frame.payload)
    case .text, .binary, .continuation:
      // Data after our close frame is discarded: the application has said goodbye.
      guard state == .open else { return nil }
      return try assembler.consume(frame).map { .message($0) }
    }
  }

  private func handleClose(_ payload: [UInt8]) throws(ProtocolViolation) -> Event? {
    var code = CloseCode.noStatusReceived
    var reason = ""
    if payload.count == 1 { throw .closePayloadTooShort }
    if payload.count >= 2 {
      let raw = UInt16(payload[0]) << 8 | UInt16(payload[1])
      code = CloseCode(rawValue: raw)
      guard code.isSendable else { throw .invalidCloseCode(raw) }
      let reasonBytes = payload[2...]
      guard UTF8Validator.isValid(reasonBytes) else { throw .invalidUTF8 }
      reason = String(decoding: reasonBytes, as: UTF8.self)
    }
    if let sent = sentClose {
      // The reply to our close: the closing handshake is complete.
      state = .closed
      return .closed(
        CloseInfo(code: sent.code, reason: sent.reason, initiator: sent.initiator, clean: true))
    }
    // The peer closes: echo its code (RFC 6455 §5.5.1), or an empty close if it sent none.
    if code == .noStatusReceived {
      encode(.close, [])
    } else {
      encode(.close, [UInt8(code.rawValue >> 8), UInt8(code.rawValue & 0xFF)])
    }
    state = .closed
    return .closed(CloseInfo(code: code, reason: reason, initiator: .peer, clean: true))
  }

  /// Fails the connection (RFC 6455 §7.1.7): send a close with the violation's code.
  private func fail(_ violation: ProtocolViolation) {
    assembler.reset()
    guard sentClose == nil, state == .open else {
      // Our close is already out (or the peer's close was malformed while we were closing):
      // stop parsing and let the transport end the connection.
      inputBroken = true
      return
    }
    let reason = Self.truncate(violation.description, to: 123)
    sendClose(code: violation.closeCode, reason: reason, initiator: .failure(violation))
  }

  /// The transport closed (EOF, error or the owner's close timeout). Returns the final
  /// event if the connection had not already reported one.
  public func transportClosed() -> Event? {
    switch state {
    case .closed:
      return nil
    case .handshaking:
      state = .closed
      return .handshakeFailed(.malformedResponse("connection closed before the handshake response"))
    case .open, .closing:
      state = .closed
      if let sent = sentClose, case .failure = sent.initiator {
        // We failed the connection; report why, even though the handshake did not finish.
        return .closed(
          CloseInfo(code: sent.code, reason: sent.reason, initiator: sent.initiator, clean: false))
      }
      return .closed(
        CloseInfo(code: .abnormalClosure, reason: "", initiator: .transport, clean: false))
    }
  }

  // MARK: Sending

  /// Queues a text message; `text` must be UTF-8.
  public func send(text: UnsafeRawBufferPointer) throws(SendError) {
    var validator = UTF8Validator()
    guard validator.validate(text), validator.isComplete else { throw .invalidUTF8 }
    try sendData(.text, text)
  }

  /// Queues a text message.
  public func send(text: String) throws(SendError) {
    var copy = text
    try copy.withUTF8 { buffer in
      Result { () throws(SendError) in try sendData(.text, UnsafeRawBufferPointer(buffer)) }
    }.get()
  }

  /// Queues a binary message.
  public func send(binary: UnsafeRawBufferPointer) throws(SendError) {
    try sendData(.binary, binary)
  }

  /// Queues a message.
  public func send(_ message: Message) throws(SendError) {
    switch message {
    case .text(let bytes):
      try bytes.withUnsafeBytes { raw in
        Result { () throws(SendError) in try send(text: raw) }
      }.get()
    case .binary(let bytes):
      try bytes.withUnsafeBytes { raw in
        Result { () throws(SendError) in try sendData(.binary, raw) }
      }.get()
    }
  }

  private func sendData(_ opcode: Opcode, _ payload: UnsafeRawBufferPointer) throws(SendError) {
    guard state == .open else { throw .notOpen(state) }
    if let deflater, payload.count >= compressionThreshold {
      compressScratch.removeAll(keepingCapacity: true)
      do {
        try deflater.compress(payload, into: &compressScratch)
      } catch {
        throw .compression(error)
      }
      compressScratch.withUnsafeBytes {
        encoder.encode(opcode: opcode, rsv1: true, payload: $0, into: &outbound)
      }
    } else {
      encoder.encode(opcode: opcode, payload: payload, into: &outbound)
    }
  }

  /// Queues a ping.
  public func ping(_ payload: [UInt8] = []) throws(SendError) {
    guard state == .open else { throw .notOpen(state) }
    guard payload.count <= 125 else { throw .controlPayloadTooLong(payload.count) }
    encode(.ping, payload)
  }

  /// Starts the closing handshake (RFC 6455 §7.1.2); the reason is cut to fit 123 bytes.
  public func close(code: CloseCode = .normalClosure, reason: String = "") throws(SendError) {
    guard state == .open else { throw .notOpen(state) }
    guard code.isSendable else { throw .invalidCloseCode(code.rawValue) }
    sendClose(code: code, reason: Self.truncate(reason, to: 123), initiator: .local)
  }

  private func sendClose(code: CloseCode, reason: String, initiator: CloseInfo.Initiator) {
    var payload = [UInt8(code.rawValue >> 8), UInt8(code.rawValue & 0xFF)]
    payload.append(contentsOf: reason.utf8)
    encode(.close, payload)
    sentClose = (code, reason, initiator)
    state = .closing
  }

  private func encode(_ opcode: Opcode, _ payload: [UInt8]) {
    encoder.encode(opcode: opcode, payload: payload, into: &outbound)
  }

  /// Cuts `text` to at most `limit` UTF-8 bytes without splitting a character.
  static func truncate(_ text: String, to limit: Int) -> String {
    guard text.utf8.count > limit else { return text }
    var result = ""
    var size = 0
    for character in text {
      let length = character.utf8.count
      if size + length > limit { break }
      result.append(character)
      size += length
    }
    return result
  }
}
