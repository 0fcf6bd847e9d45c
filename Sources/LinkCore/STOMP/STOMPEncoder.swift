/// Writes STOMP frames: the command, the headers (escaped as STOMP 1.2 says, except in CONNECT
/// and CONNECTED), a blank line, the body and its NUL.
///
/// The encoder writes the headers it is given: a body that may hold a NUL needs a
/// content-length among them, which the caller adds.
public enum STOMPEncoder {
  /// The bytes of `frame`.
  public static func encode(_ frame: STOMPFrame) -> [UInt8] {
    var out: [UInt8] = []
    out.reserveCapacity(frame.body.count + 32 + frame.headers.count * 32)
    out += frame.command.rawValue.utf8
    out.append(.lf)
    let escaped = frame.command.escapesHeaders
    for header in frame.headers {
      append(header.name, escaped: escaped, to: &out)
      out.append(.colon)
      append(header.value, escaped: escaped, to: &out)
      out.append(.lf)
    }
    out.append(.lf)
    out += frame.body
    out.append(0)
    return out
  }

  /// A heart-beat: one end-of-line.
  public static let heartbeat: [UInt8] = [.lf]

  /// Appends a header's name or value, escaped when the command has escapes. Without them
  /// (CONNECT) a CR or LF cannot be written at all and is left out: it would end the line.
  static func append(_ text: String, escaped: Bool, to out: inout [UInt8]) {
    for byte in text.utf8 {
      switch byte {
      case .cr where escaped: out += [.backslash, UInt8(ascii: "r")]
      case .lf where escaped: out += [.backslash, UInt8(ascii: "n")]
      case .colon where escaped: out += [.backslash, UInt8(ascii: "c")]
      case .backslash where escaped: out += [.backslash, .backslash]
      case .cr, .lf: continue
      default: out.append(byte)
      }
    }
  }
}
