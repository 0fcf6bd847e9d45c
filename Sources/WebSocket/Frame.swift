/// The fixed part of a frame, as parsed from the wire (RFC 6455 §5.2).
public struct FrameHeader: Sendable, Hashable {
  /// FIN: this is the final fragment of a message.
  public var fin: Bool
  /// RSV1: with permessage-deflate, "this message is compressed" (RFC 7692 §6).
  public var rsv1: Bool
  /// RSV2: no extension we support defines it.
  public var rsv2: Bool
  /// RSV3: no extension we support defines it.
  public var rsv3: Bool
  /// The frame's opcode.
  public var opcode: Opcode
  /// The masking key, present exactly when the MASK bit was set.
  public var maskingKey: MaskingKey?
  /// The payload length in bytes.
  public var payloadLength: Int

  /// Creates a header.
  public init(
    fin: Bool, rsv1: Bool = false, rsv2: Bool = false, rsv3: Bool = false, opcode: Opcode,
    maskingKey: MaskingKey? = nil, payloadLength: Int
  ) {
    self.fin = fin
    self.rsv1 = rsv1
    self.rsv2 = rsv2
    self.rsv3 = rsv3
    self.opcode = opcode
    self.maskingKey = maskingKey
    self.payloadLength = payloadLength
  }
}

/// A whole frame with its payload already unmasked.
public struct Frame: Sendable, Hashable {
  /// The frame's header; `payloadLength` equals `payload.count`.
  public var header: FrameHeader
  /// The unmasked payload.
  public var payload: [UInt8]

  /// Creates a frame.
  public init(header: FrameHeader, payload: [UInt8]) {
    self.header = header
    self.payload = payload
  }

  /// Shorthand for `header.opcode`.
  public var opcode: Opcode { header.opcode }
  /// Shorthand for `header.fin`.
  public var fin: Bool { header.fin }
}
