/// An incremental UTF-8 validator (RFC 3629, Unicode Table 3-7).
///
/// Text messages arrive in fragments that may split a code point anywhere. The validator keeps
/// the partial code point between calls, so a message fails at the first byte that can no
/// longer start or continue valid UTF-8 (RFC 6455 §8.1 asks to fail fast), and a message that
/// ends inside a code point fails at `isComplete`.
public struct UTF8Validator: Sendable {
  /// Continuation bytes still expected for the current code point.
  private var pending: UInt8 = 0
  /// The allowed range of the next continuation byte; narrowed after lead bytes such as E0, ED,
  /// F0 and F4 to exclude overlong forms, surrogates and code points above U+10FFFF.
  private var low: UInt8 = 0x80
  private var high: UInt8 = 0xBF

  /// Creates a validator at a code point boundary.
  public init() {}

  /// Whether the bytes seen so far end on a code point boundary.
  public var isComplete: Bool { pending == 0 }

  /// Forgets any partial code point.
  public mutating func reset() {
    pending = 0
    low = 0x80
    high = 0xBF
  }

  /// Validates the next bytes of the stream; false means the stream is not UTF-8.
  public mutating func validate(_ bytes: UnsafeRawBufferPointer) -> Bool {
    guard let base = bytes.baseAddress else { return true }
    let count = bytes.count
    var index = 0
    while index < count {
      if pending == 0 {
        // ASCII fast path: sixty-four, sixteen, then eight bytes at a time while no high bit
        // is set (a chat frame is mostly ASCII, and every text frame is checked).
        while count &- index >= 64 {
          var any: UInt64 = 0
          for offset in stride(from: 0, to: 64, by: 8) {
            any |= base.loadUnaligned(fromByteOffset: index &+ offset, as: UInt64.self)
          }
          if any & 0x8080_8080_8080_8080 != 0 { break }
          index &+= 64
        }
        while count &- index >= 16 {
          let first = base.loadUnaligned(fromByteOffset: index, as: UInt64.self)
          let second = base.loadUnaligned(fromByteOffset: index &+ 8, as: UInt64.self)
          if (first | second) & 0x8080_8080_8080_8080 != 0 { break }
          index &+= 16
        }
        while count &- index >= 8 {
          let word = base.loadUnaligned(fromByteOffset: index, as: UInt64.self)
          if word & 0x8080_8080_8080_8080 != 0 { break }
          index &+= 8
        }
        if index == count { break }
        let byte = base.load(fromByteOffset: index, as: UInt8.self)
        index += 1
        if byte < 0x80 { continue }
        switch byte {
        case 0xC2...0xDF: (pending, low, high) = (1, 0x80, 0xBF)
        case 0xE0: (pending, low, high) = (2, 0xA0, 0xBF)
        case 0xE1...0xEC, 0xEE...0xEF: (pending, low, high) = (2, 0x80, 0xBF)
        case 0xED: (pending, low, high) = (2, 0x80, 0x9F)
        case 0xF0: (pending, low, high) = (3, 0x90, 0xBF)
        case 0xF1...0xF3: (pending, low, high) = (3, 0x80, 0xBF)
        case 0xF4: (pending, low, high) = (3, 0x80, 0x8F)
        default: return false
        }
      } else {
        let byte = base.load(fromByteOffset: index, as: UInt8.self)
        index += 1
        guard byte >= low && byte <= high else { return false }
        pending -= 1
        low = 0x80
        high = 0xBF
      }
    }
    return true
  }

  /// Validates a byte array.
  public mutating func validate(_ bytes: [UInt8]) -> Bool {
    bytes.withUnsafeBytes { validate($0) }
  }

  /// Validates a complete byte sequence in one call.
  public static func isValid(_ bytes: some Collection<UInt8>) -> Bool {
    var validator = UTF8Validator()
    let ok =
      bytes.withContiguousStorageIfAvailable { validator.validate(UnsafeRawBufferPointer($0)) }
      ?? Array(bytes).withUnsafeBytes { validator.validate($0) }
    return ok && validator.isComplete
  }
}
