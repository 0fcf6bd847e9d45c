/// Why an endpoint must fail the connection, with the close code to send (RFC 6455 §7.1.7).
public enum ProtocolViolation: Error, Sendable, Hashable, CustomStringConvertible {
  /// An opcode from the reserved ranges 0x3–0x7 or 0xB–0xF (RFC 6455 §5.2).
  case reservedOpcode(UInt8)
  /// RSV1, RSV2 or RSV3 set without an extension that defines it (RFC 6455 §5.2).
  case reservedBitsSet(rsv1: Bool, rsv2: Bool, rsv3: Bool)
  /// RSV1 set on a continuation or control frame, where RFC 7692 §6.1 forbids it.
  case compressedBitOnWrongFrame(Opcode)
  /// A server sent a masked frame; clients must fail (RFC 6455 §5.1).
  case maskedFrameFromServer
  /// A client sent an unmasked frame; servers must fail (RFC 6455 §5.1).
  case unmaskedFrameFromClient
  /// A control frame longer than 125 bytes (RFC 6455 §5.5).
  case controlFrameTooLong(Int)
  /// A control frame without FIN (RFC 6455 §5.5).
  case fragmentedControlFrame(Opcode)
  /// A 64-bit length with the most significant bit set (RFC 6455 §5.2).
  case invalidPayloadLength
  /// A frame longer than the configured limit.
  case frameTooLarge(length: UInt64, limit: Int)
  /// A message longer than the configured limit (after decompression).
  case messageTooLarge(limit: Int)
  /// A continuation frame with no message in progress (RFC 6455 §5.4).
  case unexpectedContinuation
  /// A new text or binary frame while a fragmented message is in progress (RFC 6455 §5.4).
  case expectedContinuation(Opcode)
  /// A text message or close reason that is not UTF-8 (RFC 6455 §8.1).
  case invalidUTF8
  /// A close frame with a one-byte payload (RFC 6455 §5.5.1).
  case closePayloadTooShort
  /// A close code that may not be sent on the wire (RFC 6455 §7.4).
  case invalidCloseCode(UInt16)
  /// A compressed message that does not inflate (RFC 7692 §7.2.2).
  case invalidCompressedData

  /// The close code that answers this violation.
  public var closeCode: CloseCode {
    switch self {
    case .frameTooLarge, .messageTooLarge: .messageTooBig
    case .invalidUTF8, .invalidCompressedData: .invalidFramePayloadData
    default: .protocolError
    }
  }

  public var description: String {
    switch self {
    case .reservedOpcode(let op): "reserved opcode 0x\(String(op, radix: 16))"
    case .reservedBitsSet(let r1, let r2, let r3):
      "reserved bits set (RSV1=\(r1 ? 1 : 0) RSV2=\(r2 ? 1 : 0) RSV3=\(r3 ? 1 : 0))"
    case .compressedBitOnWrongFrame(let op): "RSV1 set on a \(op) frame"
    case .maskedFrameFromServer: "masked frame from the server"
    case .unmaskedFrameFromClient: "unmasked frame from the client"
    case .controlFrameTooLong(let n): "control frame of \(n) bytes (limit 125)"
    case .fragmentedControlFrame(let op): "fragmented \(op) frame"
    case .invalidPayloadLength: "64-bit payload length with the high bit set"
    case .frameTooLarge(let length, let limit): "frame of \(length) bytes exceeds \(limit)"
    case .messageTooLarge(let limit): "message exceeds \(limit) bytes"
    case .unexpectedContinuation: "continuation frame without a message in progress"
    case .expectedContinuation(let op): "\(op) frame inside a fragmented message"
    case .invalidUTF8: "invalid UTF-8"
    case .closePayloadTooShort: "close frame with a one-byte payload"
    case .invalidCloseCode(let code): "invalid close code \(code)"
    case .invalidCompressedData: "compressed message does not inflate"
    }
  }
}
