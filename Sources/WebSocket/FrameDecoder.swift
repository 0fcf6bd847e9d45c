/// An incremental WebSocket frame decoder (RFC 6455 §5.2): a pure state machine.
///
/// Feed it bytes as they arrive, split anywhere, with `append`; then call `next()` until it
/// answers `.needMoreData`. Header rules (opcodes, reserved bits, masking direction, control
/// frame limits, the frame size limit) are checked as soon as the header is complete, so a
/// bad frame fails before its payload is buffered.
public struct FrameDecoder: Sendable {
  /// What one parse step produced.
  public enum Step: Sendable, Hashable {
    /// Not enough bytes for the next frame yet.
    case needMoreData
    /// A complete frame, payload unmasked.
    case frame(Frame)
  }

  /// Which side of the connection is decoding: clients receive unmasked frames only, servers
  /// masked frames only (RFC 6455 §5.1).
  public enum Role: Sendable {
    case client
    case server
  }

  private enum State: Sendable {
    case header
    case payload(FrameHeader, collected: [UInt8])
  }

  /// The largest frame payload accepted; larger frames fail with 1009.
  public var maxFrameSize: Int
  /// Whether RSV1 is defined (permessage-deflate was negotiated).
  public var allowsCompressedBit: Bool
  /// The decoding side.
  public let role: Role

  private var buffer: [UInt8] = []
  private var readIndex = 0
  private var state = State.header
  /// A payload the consumer is done with (`recycle`): the next small frame is copied into its
  /// memory instead of a new allocation. One is enough: frames are consumed one at a time.
  private var spare: [UInt8]?
  /// The largest spare kept: chat messages are small, and an idle connection should not hold
  /// more than a few KiB for them.
  public static let spareCapacity = 4096

  /// Creates a decoder.
  public init(role: Role = .client, maxFrameSize: Int = 16 << 20, allowsCompressedBit: Bool = false)
  {
    self.role = role
    self.maxFrameSize = maxFrameSize
    self.allowsCompressedBit = allowsCompressedBit
  }

  /// Bytes received but not yet returned as part of a frame, headers of frames still
  /// arriving excluded.
  public var bufferedByteCount: Int {
    let pending = buffer.count - readIndex
    if case .payload(_, let collected) = state { return pending + collected.count }
    return pending
  }

  /// The header and (unmasked) payload prefix of a frame whose payload is still arriving.
  ///
  /// Lets the message layer validate UTF-8 of a long text frame before it is complete.
  public var partialFrame: (header: FrameHeader, payloadPrefix: [UInt8])? {
    if case .payload(let header, let collected) = state { return (header, collected) }
    return nil
  }

  /// Adds received bytes.
  public mutating func append(_ bytes: UnsafeRawBufferPointer) {
    guard bytes.count > 0 else { return }
    if readIndex == buffer.count {
      buffer.removeAll(keepingCapacity: true)
      readIndex = 0
    } else if readIndex >= 4096 && readIndex * 2 >= buffer.count {
      // Compact only when the dead prefix dominates, so each byte moves O(1) times.
      buffer.removeSubrange(0..<readIndex)
      readIndex = 0
    }
    buffer.append(contentsOf: bytes)
  }

  /// Adds received bytes.
  public mutating func append(_ bytes: [UInt8]) {
    bytes.withUnsafeBytes { append($0) }
  }

  /// Runs one parse step.
  public mutating func next() throws(ProtocolViolation) -> Step {
    switch state {
    case .header:
      guard let header = try parseHeader() else { return .needMoreData }
      let available = buffer.count - readIndex
      if available >= header.payloadLength {
        // The common case: the whole frame is in the buffer; copy its payload once, into a
        // recycled array when there is one.
        var payload = spare.take() ?? []
        let start = readIndex
        buffer.withUnsafeBytes { raw in
          // The recycled array's old content replaced in one call (emptying it first costs
          // a call of its own).
          payload.replaceSubrange(
            payload.startIndex..<payload.endIndex,
            with: UnsafeRawBufferPointer(rebasing: raw[start..<(start + header.payloadLength)]))
        }
        readIndex += header.payloadLength
        Self.unmask(&payload, from: 0, header: header)
        return .frame(Frame(header: header, payload: payload))
      }
      // A long frame: collect its payload on the side so the input buffer stays small.
      // It is unmasked as it arrives, so the prefix can be inspected.
      var collected = [UInt8]()
      collected.reserveCapacity(header.payloadLength)
      collected.append(contentsOf: buffer[readIndex...])
      readIndex = buffer.count
      Self.unmask(&collected, from: 0, header: header)
      state = .payload(header, collected: collected)
      return .needMoreData

    case .payload(let header, var collected):
      state = .header  // Drop the state's reference so `collected` grows in place.
      let wanted = header.payloadLength - collected.count
      let take = min(wanted, buffer.count - readIndex)
      let before = collected.count
      collected.append(contentsOf: buffer[readIndex..<(readIndex + take)])
      readIndex += take
      Self.unmask(&collected, from: before, header: header)
      guard collected.count == header.payloadLength else {
        state = .payload(header, collected: collected)
        return .needMoreData
      }
      return .frame(Frame(header: header, payload: collected))
    }
  }

  /// Takes back memory its consumer is done with (a payload this decoder returned, or a spent
  /// one the assembler copied from): it holds the next small frame's payload. Whoever still holds a copy keeps it unchanged (the
  /// array is reused only if no one does; otherwise the next frame gets new memory, as without
  /// recycling).
  public mutating func recycle(_ payload: consuming [UInt8]) {
    guard payload.capacity <= Self.spareCapacity, payload.capacity > 0 else { return }
    spare = consume payload
  }

  /// Unmasks `payload[from...]`, which sits at payload offset `from`.
  private static func unmask(_ payload: inout [UInt8], from: Int, header: FrameHeader) {
    guard let key = header.maskingKey, from < payload.count else { return }
    payload.withUnsafeMutableBytes { raw in
      key.apply(to: UnsafeMutableRawBufferPointer(rebasing: raw[from...]), offset: from)
    }
  }

  /// Parses a header when all of it is buffered; nil when more bytes are needed.
  private mutating func parseHeader() throws(ProtocolViolation) -> FrameHeader? {
    let available = buffer.count - readIndex
    guard available >= 2 else { return nil }
    let b0 = buffer[readIndex]
    let b1 = buffer[readIndex + 1]
    let masked = b1 & 0x80 != 0
    let shortLength = b1 & 0x7F
    let lengthBytes = shortLength == 126 ? 2 : (shortLength == 127 ? 8 : 0)
    let headerSize = 2 + lengthBytes + (masked ? 4 : 0)

    // Everything decidable from the first two bytes fails before we wait for the rest.
    guard let opcode = Opcode(rawValue: b0 & 0x0F) else {
      throw .reservedOpcode(b0 & 0x0F)
    }
    let fin = b0 & 0x80 != 0
    let rsv1 = b0 & 0x40 != 0
    let rsv2 = b0 & 0x20 != 0
    let rsv3 = b0 & 0x10 != 0
    if rsv2 || rsv3 || (rsv1 && !allowsCompressedBit) {
      throw .reservedBitsSet(rsv1: rsv1, rsv2: rsv2, rsv3: rsv3)
    }
    if rsv1 && opcode.isControl { throw .compressedBitOnWrongFrame(opcode) }
    if opcode.isControl {
      if !fin { throw .fragmentedControlFrame(opcode) }
      if shortLength > 125 { throw .controlFrameTooLong(Int(shortLength)) }
    }
    switch role {
    case .client where masked: throw .maskedFrameFromServer
    case .server where !masked: throw .unmaskedFrameFromClient
    default: break
    }

    guard available >= headerSize else { return nil }
    var length = UInt64(shortLength)
    var cursor = readIndex + 2
    if lengthBytes > 0 {
      length = 0
      for _ in 0..<lengthBytes {
        length = length << 8 | UInt64(buffer[cursor])
        cursor += 1
      }
      if length & (1 << 63) != 0 { throw .invalidPayloadLength }
    }
    if length > UInt64(maxFrameSize) { throw .frameTooLarge(length: length, limit: maxFrameSize) }
    var key: MaskingKey?
    if masked {
      key = MaskingKey(buffer[cursor], buffer[cursor + 1], buffer[cursor + 2], buffer[cursor + 3])
      cursor += 4
    }
    readIndex = cursor
    return FrameHeader(
      fin: fin, rsv1: rsv1, rsv2: rsv2, rsv3: rsv3, opcode: opcode, maskingKey: key,
      payloadLength: Int(length))
  }
}
