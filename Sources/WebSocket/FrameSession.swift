import JSON

/// The part of a WebSocket connection after the opening handshake, for either role: frame
/// decoding and encoding, message assembly, ping answers and the closing handshake
/// (RFC 6455 §5–§7). Pure: the owner moves bytes in and out.
public final class FrameSession {
  /// Where the session is.
  public enum State: Sendable, Hashable {
    /// Messages flow both ways.
    case open
    /// We sent a close frame; waiting for the peer's.
    case closing
    /// The closing handshake is done or the connection failed.
    case closed
  }

  /// Something the owner must know about.
  public enum Event: Sendable, Hashable {
    case message(Message)
    case ping([UInt8])
    case pong([UInt8])
    case closed(CloseInfo)
  }

  /// Compression in force, from the side of this endpoint.
  public struct Compression: Sendable {
    /// Our LZ77 window; below 9 we cannot compress (zlib), so we send uncompressed.
    public var outgoingWindowBits: Int
    /// We reset our compression context after each message.
    public var outgoingNoContextTakeover: Bool
    /// The peer resets its context after each message.
    public var incomingNoContextTakeover: Bool
    /// Messages shorter than this go out uncompressed.
    public var threshold: Int
    /// zlib level.
    public var level: Int32

    /// Creates settings.
    public init(
      outgoingWindowBits: Int, outgoingNoContextTakeover: Bool, incomingNoContextTakeover: Bool,
      threshold: Int, level: Int32
    ) {
      self.outgoingWindowBits = outgoingWindowBits
      self.outgoingNoContextTakeover = outgoingNoContextTakeover
      self.incomingNoContextTakeover = incomingNoContextTakeover
      self.threshold = threshold
      self.level = level
    }
  }

  // Unchecked exclusivity (here and on the decoder and the assembler): touched
  // for every frame; a session is driven by one thread, and no access overlaps another.
  /// The current state.
  @exclusivity(unchecked) public private(set) var state = State.open

  private let role: FrameDecoder.Role
  @exclusivity(unchecked) private var decoder: FrameDecoder
  @exclusivity(unchecked) private var assembler: MessageAssembler
  private var encoder: FrameEncoder
  // Not private: the runs (FrameSession+Runs.swift) go one message at a time when it is set.
  var deflater: MessageDeflater?
  private var compressionThreshold = Int.max
  private var outbound: [UInt8] = []
  /// After a framing error the byte stream cannot be parsed any more.
  private var inputBroken = false
  /// The close we sent, reported when the closing handshake completes.
  private var sentClose: (code: CloseCode, reason: String, initiator: CloseInfo.Initiator)?
  private var compressScratch: [UInt8] = []

  /// Creates a session; clients pass a masking encoder, servers an unmasked one.
  public init(
    role: FrameDecoder.Role, limits: ClientConnection.Limits, encoder: FrameEncoder,
    compression: Compression?
  ) throws(DeflateError) {
    self.role = role
    self.encoder = encoder
    decoder = FrameDecoder(
      role: role, maxFrameSize: limits.maxFrameSize, allowsCompressedBit: compression != nil)
    if let compression {
      assembler = MessageAssembler(
        maxMessageSize: limits.maxMessageSize,
        inflater: try MessageInflater.make(noContextTakeover: compression.incomingNoContextTakeover)
      )
      if compression.outgoingWindowBits >= 9 {
        deflater = try MessageDeflater.make(
          windowBits: compression.outgoingWindowBits,
          noContextTakeover: compression.outgoingNoContextTakeover, level: compression.level)
        compressionThreshold = compression.threshold
      }
    } else {
      assembler = MessageAssembler(maxMessageSize: limits.maxMessageSize)
    }
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

  /// Hands the bytes to write to `write`, in order, and empties the buffer.
  ///
  /// Unlike `takeOutbound`, the buffer keeps its memory while the traffic stays big (a
  /// stream of sends fills it with much the same every loop iteration, and a fresh one would
  /// be grown and page-faulted in again each time); after several writes in a row that used
  /// little of a big buffer, it is given back.
  public func writeOutbound(_ write: (UnsafeRawBufferPointer) -> Void) {
    guard !outbound.isEmpty else { return }
    outbound.withUnsafeBytes { write($0) }
    if outbound.capacity <= Self.keptOutboundCapacity || outbound.count >= outbound.capacity / 4 {
      underusedWrites = 0
    } else {
      underusedWrites += 1
    }
    if underusedWrites >= Self.underusedWritesBeforeRelease {
      outbound = []
      underusedWrites = 0
    } else {
      outbound.removeAll(keepingCapacity: true)
    }
  }

  /// Up to this much buffer is kept whatever goes out.
  static let keptOutboundCapacity = 64 << 10
  /// A big buffer survives this many writes that use under a quarter of it (a burst's
  /// writes alternate with small ones, such as the pings that confirm it).
  static let underusedWritesBeforeRelease = 8
  private var underusedWrites = 0

  /// Passes received bytes in; then call `nextEvent()` until nil.
  public func receive(_ bytes: UnsafeRawBufferPointer) {
    if state != .closed && !inputBroken { decoder.append(bytes) }
  }

  /// Takes back the payload of a received message its consumer is done with, for the memory
  /// of a next message (`FrameDecoder.recycle`, `MessageAssembler.recycle`).
  public func recycle(_ payload: consuming [UInt8]) {
    // With compression, messages are inflated into memory of their own: a recycled message
    // goes to the assembler (while it has none), and the spent compressed payloads to the
    // decoder (`handle`). Messages a server sent uncompressed refill the decoder's instead.
    if decoder.allowsCompressedBit && !assembler.hasSpare {
      assembler.recycle(consume payload)
    } else {
      decoder.recycle(consume payload)
    }
  }

  /// The next event, or nil when more input is needed.
  public func nextEvent() -> Event? {
    while state != .closed && !inputBroken {
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
        // Consumed: the frame's payload moves on into the event without a reference count.
        switch consume step {
        case .needMoreData:
          if let partial = decoder.partialFrame, !partial.header.opcode.isControl, state == .open {
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

  private func handle(_ frame: consuming Frame) throws(ProtocolViolation) -> Event? {
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
      let message = try assembler.consume(frame)
      if let spent = assembler.takeSpentPayload() { decoder.recycle(spent) }
      guard let message else { return nil }
      return .message(message)
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
    sendClose(
      code: violation.closeCode, reason: Self.truncate(violation.description, to: 123),
      initiator: .failure(violation))
  }

  /// The transport ended (EOF, error or the owner's timeout); the final event, if the
  /// session had not already reported one.
  public func transportClosed() -> Event? {
    guard state != .closed else { return nil }
    state = .closed
    if let sent = sentClose, case .failure = sent.initiator {
      // We failed the connection; report why, even though the handshake did not finish.
      return .closed(
        CloseInfo(code: sent.code, reason: sent.reason, initiator: sent.initiator, clean: false))
    }
    return .closed(
      CloseInfo(code: .abnormalClosure, reason: "", initiator: .transport, clean: false))
  }

  // MARK: Sending

  /// Queues a text message; `text` must be UTF-8.
  public func send(text: UnsafeRawBufferPointer) throws(ClientConnection.SendError) {
    var validator = UTF8Validator()
    guard validator.validate(text), validator.isComplete else { throw .invalidUTF8 }
    try sendData(.text, text)
  }

  /// Queues a binary message.
  public func send(binary: UnsafeRawBufferPointer) throws(ClientConnection.SendError) {
    try sendData(.binary, binary)
  }

  /// Queues a message.
  public func send(_ message: Message) throws(ClientConnection.SendError) {
    switch message {
    case .text(let bytes):
      try bytes.withUnsafeBytes { raw in
        Result { () throws(ClientConnection.SendError) in try send(text: raw) }
      }.get()
    case .binary(let bytes):
      try bytes.withUnsafeBytes { raw in
        Result { () throws(ClientConnection.SendError) in try sendData(.binary, raw) }
      }.get()
    }
  }

  /// Encodes `count` messages without compression, the encoder and output buffer taken once
  /// for the lot: `message(i, body)` calls `body` with message `i`'s bytes and whether it is
  /// text, and returns what `body` returned (false: text that is not UTF-8, which stops the
  /// run).
  func sendRun(
    count: Int, queued: inout Int,
    _ message: (Int, (UnsafeRawBufferPointer, Bool) -> Bool) -> Bool
  ) throws(ClientConnection.SendError) {
    guard state == .open else { throw .notOpen(.closing) }
    var encoder = FrameEncoder()
    swap(&encoder, &self.encoder)
    var out: [UInt8] = []
    swap(&out, &outbound)
    defer {
      swap(&encoder, &self.encoder)
      swap(&out, &outbound)
    }
    var encoded = 0
    while encoded < count {
      let valid = message(encoded) { raw, text in
        if text {
          var validator = UTF8Validator()
          guard validator.validate(raw), validator.isComplete else { return false }
        }
        encoder.encode(opcode: text ? .text : .binary, payload: raw, into: &out)
        return true
      }
      guard valid else { break }
      encoded += 1
    }
    queued += encoded
    guard encoded == count else { throw .invalidUTF8 }
  }

  /// Queues a data message; text must already be valid UTF-8.
  func sendData(_ opcode: Opcode, _ payload: UnsafeRawBufferPointer) throws(ClientConnection
    .SendError)
  {
    guard state == .open else { throw .notOpen(.closing) }
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
  public func ping(_ payload: [UInt8] = []) throws(ClientConnection.SendError) {
    guard state == .open else { throw .notOpen(.closing) }
    guard payload.count <= 125 else { throw .controlPayloadTooLong(payload.count) }
    encode(.ping, payload)
  }

  /// Starts the closing handshake (RFC 6455 §7.1.2); the reason is cut to fit 123 bytes.
  public func close(code: CloseCode = .normalClosure, reason: String = "") throws(ClientConnection
    .SendError)
  {
    guard state == .open else { throw .notOpen(.closing) }
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
