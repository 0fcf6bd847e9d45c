/// A WebSocket frame opcode (RFC 6455 §5.2).
///
/// Opcodes 0x3–0x7 and 0xB–0xF are reserved; the decoder rejects them, so they have no case.
public enum Opcode: UInt8, Sendable, Hashable, CustomStringConvertible {
  /// A continuation of a fragmented data message (RFC 6455 §5.4).
  case continuation = 0x0
  /// The first frame of a UTF-8 text message.
  case text = 0x1
  /// The first frame of a binary message.
  case binary = 0x2
  /// A close frame (RFC 6455 §5.5.1).
  case close = 0x8
  /// A ping (RFC 6455 §5.5.2).
  case ping = 0x9
  /// A pong (RFC 6455 §5.5.3).
  case pong = 0xA

  /// Control frames have the high bit of the opcode nibble set (RFC 6455 §5.5).
  public var isControl: Bool { rawValue & 0x8 != 0 }

  public var description: String {
    switch self {
    case .continuation: "continuation"
    case .text: "text"
    case .binary: "binary"
    case .close: "close"
    case .ping: "ping"
    case .pong: "pong"
    }
  }
}
