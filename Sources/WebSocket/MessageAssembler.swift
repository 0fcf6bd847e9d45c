import JSON

/// A complete data message.
public enum Message: Sendable, Hashable {
  /// A text message; the bytes are valid UTF-8.
  case text([UInt8])
  /// A binary message.
  case binary([UInt8])

  /// The payload bytes.
  public var bytes: [UInt8] {
    switch self {
    case .text(let b), .binary(let b): b
    }
  }

  /// Calls `body` with the payload's bytes, in place.
  @inlinable
  public func withUnsafeBytes<R>(_ body: (UnsafeRawBufferPointer) throws -> R) rethrows -> R {
    switch self {
    case .text(let b), .binary(let b): try b.withUnsafeBytes(body)
    }
  }

  /// Whether this is a text message.
  @inlinable
  public var isText: Bool {
    if case .text = self { return true }
    return false
  }

  /// The text of a text message, nil for binary.
  public var text: String? {
    if case .text(let b) = self { return String(decoding: b, as: UTF8.self) }
    return nil
  }
}

/// Joins data frames into messages (RFC 6455 §5.4), inflates them (RFC 7692 §6.2), checks
/// UTF-8 as bytes arrive (§8.1) and enforces the message size limit on inflated bytes.
public struct MessageAssembler {
  private enum State {
    case idle
    case inProgress(opcode: Opcode, compressed: Bool)
  }

  /// The largest message accepted, measured after decompression.
  public let maxMessageSize: Int
  private let inflater: MessageInflater?
  private var state = State.idle
  private var buffer: [UInt8] = []
  private var validator = UTF8Validator()
  /// A message payload its consumer is done with (`recycle`): the next message that is
  /// inflated or assembled from fragments is built in its memory.
  private var spare: [UInt8]?
  /// The payload of the last frame consumed, when it was copied into a message (inflated or
  /// appended) rather than passed on as the message itself: free for the frame decoder.
  private var spent: [UInt8]?
  /// Bytes of the still-arriving frame already checked by `inspect(partial:)`.
  private var inspectedPrefix = 0
  private var inspectedHeader: FrameHeader?

  /// Creates an assembler; pass an inflater when permessage-deflate was negotiated.
  public init(maxMessageSize: Int = 16 << 20, inflater: MessageInflater? = nil) {
    self.maxMessageSize = maxMessageSize
    self.inflater = inflater
  }

  /// Whether a fragmented message is in progress.
  public var isAssembling: Bool {
    if case .inProgress = state { return true }
    return false
  }

  /// Checks a frame's header against the message in progress, before its payload arrives.
  public func check(_ header: FrameHeader) throws(ProtocolViolation) {
    switch (state, header.opcode) {
    case (.idle, .continuation): throw .unexpectedContinuation
    case (.inProgress, .text), (.inProgress, .binary): throw .expectedContinuation(header.opcode)
    case (.inProgress(_, let compressed), .continuation):
      if header.rsv1 { throw .compressedBitOnWrongFrame(.continuation) }
      // Uncompressed frames add their length exactly, so an oversized message fails here.
      if !compressed && buffer.count + header.payloadLength > maxMessageSize {
        throw .messageTooLarge(limit: maxMessageSize)
      }
    default:
      if !header.rsv1 && header.payloadLength > maxMessageSize {
        throw .messageTooLarge(limit: maxMessageSize)
      }
    }
  }

  /// Validates the UTF-8 of a text frame whose payload is still arriving, so a bad byte
  /// fails the connection now rather than when the frame ends (RFC 6455 §8.1 "fail fast").
  public mutating func inspect(partial header: FrameHeader, prefix: [UInt8])
    throws(ProtocolViolation)
  {
    if inspectedHeader != header {
      try check(header)
      inspectedHeader = header
      inspectedPrefix = 0
    }
    guard isText(header), !isCompressed(header), prefix.count > inspectedPrefix else { return }
    let ok = prefix.withUnsafeBytes { raw in
      validator.validate(UnsafeRawBufferPointer(rebasing: raw[inspectedPrefix...]))
    }
    guard ok else { throw .invalidUTF8 }
    inspectedPrefix = prefix.count
  }

  /// Takes a complete data frame; returns a message when it is the last fragment.
  public mutating func consume(_ frame: consuming Frame) throws(ProtocolViolation) -> Message? {
    let header = frame.header
    let alreadyInspected = inspectedHeader == header ? inspectedPrefix : 0
    if inspectedHeader != header { try check(header) }
    inspectedHeader = nil
    inspectedPrefix = 0

    let text = isText(header)
    let compressed = isCompressed(header)
    if case .idle = state {
      // The common single-frame uncompressed message is returned without copying.
      if header.fin && !compressed {
        return try wholeMessage(frame.payload, text: text, alreadyInspected: alreadyInspected)
      }
      state = .inProgress(opcode: header.opcode, compressed: compressed)
      if var memory = spare.take() {
        memory.removeAll(keepingCapacity: true)
        buffer = memory
      }
    }
    let before = buffer.count
    try append(frame.payload, compressed: compressed, isFinal: header.fin)
    spent = frame.payload
    if text { try validate(from: before + (compressed ? 0 : alreadyInspected)) }
    guard header.fin else { return nil }
    if text && !validator.isComplete {
      reset()
      throw .invalidUTF8
    }
    let payload = buffer
    buffer = []
    state = .idle
    return text ? .text(payload) : .binary(payload)
  }

  /// Takes back a message's payload its consumer is done with: the next inflated or
  /// fragmented message is built in its memory (if nothing else holds it by then).
  public mutating func recycle(_ payload: consuming [UInt8]) {
    guard payload.capacity <= FrameDecoder.spareCapacity, payload.capacity > 0 else { return }
    spare = consume payload
  }

  /// Whether a recycled payload waits for the next inflated or fragmented message.
  public var hasSpare: Bool { spare != nil }

  /// The payload of the frame just consumed, if it was copied into the message (inflated or
  /// appended to fragments) and so is no longer needed; nil otherwise, and after this call.
  public mutating func takeSpentPayload() -> [UInt8]? {
    spent.take()
  }

  /// A message in one uncompressed frame: its payload as it is, once its UTF-8 is checked.
  private mutating func wholeMessage(
    _ payload: consuming [UInt8], text: Bool, alreadyInspected: Int
  ) throws(ProtocolViolation) -> Message {
    guard text else { return .binary(payload) }
    // The validator is at a code point boundary here: the previous message either ended
    // complete or was reset. It may already hold the state of `inspect(partial:)`.
    let ok = payload.withUnsafeBytes { raw in
      validator.validate(UnsafeRawBufferPointer(rebasing: raw[alreadyInspected...]))
    }
    guard ok && validator.isComplete else { throw .invalidUTF8 }
    return .text(payload)
  }

  /// Adds a frame's payload to the message in progress, inflated if the message is
  /// compressed.
  private mutating func append(_ payload: [UInt8], compressed: Bool, isFinal: Bool)
    throws(ProtocolViolation)
  {
    guard compressed, let inflater else {
      buffer.append(contentsOf: payload)
      return
    }
    let limit = maxMessageSize
    let inflated = payload.withUnsafeBytes { raw in
      Result { () throws(DeflateError) in
        try inflater.inflate(raw, isFinal: isFinal, limit: limit, into: &buffer)
      }
    }
    if case .failure(let error) = inflated {
      reset()
      if case .limitExceeded = error { throw .messageTooLarge(limit: maxMessageSize) }
      throw .invalidCompressedData
    }
  }

  /// Checks the UTF-8 of the message's bytes from `offset` on, continuing from those before.
  private mutating func validate(from offset: Int) throws(ProtocolViolation) {
    let ok = buffer.withUnsafeBytes { raw in
      validator.validate(UnsafeRawBufferPointer(rebasing: raw[offset...]))
    }
    guard ok else {
      reset()
      throw .invalidUTF8
    }
  }

  /// Drops the message in progress.
  public mutating func reset() {
    state = .idle
    buffer = []
    spent = nil
    validator.reset()
    inspectedHeader = nil
    inspectedPrefix = 0
    inflater?.reset()
  }

  private func isText(_ header: FrameHeader) -> Bool {
    switch (state, header.opcode) {
    case (_, .text): true
    case (.inProgress(let opcode, _), .continuation): opcode == .text
    default: false
    }
  }

  private func isCompressed(_ header: FrameHeader) -> Bool {
    switch (state, header.opcode) {
    case (.inProgress(_, let compressed), .continuation): compressed
    default: header.rsv1
    }
  }
}
