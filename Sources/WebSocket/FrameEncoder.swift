import JSON

/// Writes frames onto an output buffer (RFC 6455 §5.2), masking client frames (§5.3).
///
/// The encoder appends to a caller-owned buffer so a burst of messages becomes one write.
public struct FrameEncoder {
  /// The generator of masking keys when it is the secure one (every connection's): kept as
  /// itself, so a key is drawn in place (through the existential below, each draw copied the
  /// generator out and back, counting a reference to its pool twice).
  private var secure: SecureRandomGenerator?
  /// Any other generator (tests inject deterministic ones).
  private var random: (any RandomNumberGenerator)?

  /// Creates an encoder that masks every frame with keys drawn from `random`.
  public init(masking random: some RandomNumberGenerator) {
    if let secure = random as? SecureRandomGenerator {
      self.secure = secure
    } else {
      self.random = random
    }
  }

  /// Creates an encoder for unmasked frames, as a server sends them.
  public init() {}

  private var masks: Bool { secure != nil || random != nil }

  /// The header size for a payload length, mask included.
  public func headerSize(payloadLength: Int) -> Int {
    let lengthBytes = payloadLength < 126 ? 0 : (payloadLength <= 0xFFFF ? 2 : 8)
    return 2 + lengthBytes + (masks ? 4 : 0)
  }

  private mutating func nextKey() -> MaskingKey? {
    if secure != nil { return MaskingKey(using: &secure!) }
    return random == nil ? nil : MaskingKey(using: &random!)
  }

  /// Appends one frame with `payload` to `output`.
  public mutating func encode(
    opcode: Opcode, fin: Bool = true, rsv1: Bool = false, payload: UnsafeRawBufferPointer,
    into output: inout [UInt8]
  ) {
    let length = payload.count
    var b0: UInt8 = opcode.rawValue
    if fin { b0 |= 0x80 }
    if rsv1 { b0 |= 0x40 }
    let key = nextKey()
    let maskBit: UInt8 = key == nil ? 0 : 0x80
    // The header (at most 14 bytes) goes onto the buffer in one append, not byte by byte:
    // every outgoing message passes here.
    output.append(maxCount: 14) { header in
      header.write(b0)
      if length < 126 {
        header.write(maskBit | UInt8(length))
      } else if length <= 0xFFFF {
        header.write(maskBit | 126)
        header.write(UInt8(length >> 8))
        header.write(UInt8(length & 0xFF))
      } else {
        header.write(maskBit | 127)
        let wide = UInt64(length)
        for shift in stride(from: 56, through: 0, by: -8) {
          header.write(UInt8(truncatingIfNeeded: wide >> UInt64(shift)))
        }
      }
      if let key {
        header.write(key.bytes.0)
        header.write(key.bytes.1)
        header.write(key.bytes.2)
        header.write(key.bytes.3)
      }
    }
    let start = output.count
    output.append(contentsOf: payload)
    if let key {
      output.withUnsafeMutableBytes { raw in
        key.apply(to: UnsafeMutableRawBufferPointer(rebasing: raw[start...]))
      }
    }
  }

  /// Appends one frame with `payload` to `output`.
  public mutating func encode(
    opcode: Opcode, fin: Bool = true, rsv1: Bool = false, payload: [UInt8],
    into output: inout [UInt8]
  ) {
    payload.withUnsafeBytes {
      encode(opcode: opcode, fin: fin, rsv1: rsv1, payload: $0, into: &output)
    }
  }
}
