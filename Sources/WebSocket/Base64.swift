/// Standard base64 (RFC 4648 §4) with padding, for handshake keys and binary payloads.
public enum Base64 {
  private static let alphabet = Array(
    "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/".utf8)

  /// Encodes bytes as base64 text.
  public static func encode(_ bytes: some Collection<UInt8>) -> String {
    var out = [UInt8]()
    encode(bytes, into: &out)
    return String(decoding: out, as: UTF8.self)
  }

  /// Appends the base64 encoding of `bytes` to `out`.
  public static func encode(_ bytes: some Collection<UInt8>, into out: inout [UInt8]) {
    out.reserveCapacity(out.count + (bytes.count + 2) / 3 * 4)
    var iterator = bytes.makeIterator()
    while let a = iterator.next() {
      let b = iterator.next()
      let c = iterator.next()
      let n = UInt32(a) << 16 | UInt32(b ?? 0) << 8 | UInt32(c ?? 0)
      out.append(alphabet[Int(n >> 18 & 63)])
      out.append(alphabet[Int(n >> 12 & 63)])
      out.append(b == nil ? UInt8(ascii: "=") : alphabet[Int(n >> 6 & 63)])
      out.append(c == nil ? UInt8(ascii: "=") : alphabet[Int(n & 63)])
    }
  }

  /// Decodes padded base64; nil when the text is not valid base64.
  public static func decode(_ text: some StringProtocol) -> [UInt8]? {
    var out = [UInt8]()
    var accumulator: UInt32 = 0
    var bits = 0
    var padding = 0
    var count = 0
    for byte in text.utf8 {
      let value: UInt32
      switch byte {
      case UInt8(ascii: "A")...UInt8(ascii: "Z"): value = UInt32(byte - UInt8(ascii: "A"))
      case UInt8(ascii: "a")...UInt8(ascii: "z"): value = UInt32(byte - UInt8(ascii: "a")) + 26
      case UInt8(ascii: "0")...UInt8(ascii: "9"): value = UInt32(byte - UInt8(ascii: "0")) + 52
      case UInt8(ascii: "+"): value = 62
      case UInt8(ascii: "/"): value = 63
      case UInt8(ascii: "="):
        padding += 1
        count += 1
        continue
      default: return nil
      }
      if padding > 0 { return nil }
      count += 1
      accumulator = accumulator << 6 | value
      bits += 6
      if bits >= 8 {
        bits -= 8
        out.append(UInt8(truncatingIfNeeded: accumulator >> UInt32(bits)))
      }
    }
    guard count % 4 == 0, padding <= 2 else { return nil }
    return out
  }
}
