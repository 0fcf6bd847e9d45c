/// SHA-1 (FIPS 180-4), used only for Sec-WebSocket-Accept (RFC 6455 §4.1).
///
/// Written out rather than taken from OpenSSL: a ws:// connection then never initialises
/// libcrypto, whose providers and tables would otherwise stay resident in a daemon that
/// needs them only for wss://. The handshake hashes 60 bytes once per connect,
/// so speed does not matter; the test vectors are in SHA1Tests.
public enum SHA1 {
  /// The 20-byte digest of `bytes` (never nil; optional for the callers written for OpenSSL).
  public static func digest(_ bytes: [UInt8]) -> [UInt8]? {
    var h: (UInt32, UInt32, UInt32, UInt32, UInt32) = (
      0x6745_2301, 0xEFCD_AB89, 0x98BA_DCFE, 0x1032_5476, 0xC3D2_E1F0
    )
    var message = bytes
    message.append(0x80)
    while message.count % 64 != 56 { message.append(0) }
    let bits = UInt64(bytes.count) &* 8
    for shift in stride(from: 56, through: 0, by: -8) {
      message.append(UInt8(truncatingIfNeeded: bits >> UInt64(shift)))
    }
    var w = [UInt32](repeating: 0, count: 80)
    for block in stride(from: 0, to: message.count, by: 64) {
      for i in 0..<16 {
        let j = block + 4 * i
        w[i] =
          UInt32(message[j]) << 24 | UInt32(message[j + 1]) << 16 | UInt32(message[j + 2]) << 8
          | UInt32(message[j + 3])
      }
      for i in 16..<80 { w[i] = rotate(w[i - 3] ^ w[i - 8] ^ w[i - 14] ^ w[i - 16], 1) }
      var (a, b, c, d, e) = h
      for i in 0..<80 {
        let f: UInt32
        let k: UInt32
        switch i {
        case 0..<20: (f, k) = ((b & c) | (~b & d), 0x5A82_7999)
        case 20..<40: (f, k) = (b ^ c ^ d, 0x6ED9_EBA1)
        case 40..<60: (f, k) = ((b & c) | (b & d) | (c & d), 0x8F1B_BCDC)
        default: (f, k) = (b ^ c ^ d, 0xCA62_C1D6)
        }
        let t = rotate(a, 5) &+ f &+ e &+ k &+ w[i]
        (a, b, c, d, e) = (t, a, rotate(b, 30), c, d)
      }
      h = (h.0 &+ a, h.1 &+ b, h.2 &+ c, h.3 &+ d, h.4 &+ e)
    }
    var out: [UInt8] = []
    out.reserveCapacity(20)
    for word in [h.0, h.1, h.2, h.3, h.4] {
      for shift in stride(from: 24, through: 0, by: -8) {
        out.append(UInt8(truncatingIfNeeded: word >> UInt32(shift)))
      }
    }
    return out
  }

  private static func rotate(_ x: UInt32, _ n: UInt32) -> UInt32 { x << n | x >> (32 - n) }
}
