/// A 32-bit frame masking key (RFC 6455 §5.3).
public struct MaskingKey: Sendable, Hashable {
  /// The key's four bytes in wire order.
  public var bytes: (UInt8, UInt8, UInt8, UInt8)

  /// Creates a key from its four wire bytes.
  public init(_ b0: UInt8, _ b1: UInt8, _ b2: UInt8, _ b3: UInt8) {
    bytes = (b0, b1, b2, b3)
  }

  /// Draws a key from a random number generator.
  ///
  /// RFC 6455 §5.3 asks for a key that is unpredictable, so production code passes a
  /// cryptographic generator; tests pass a seeded one for deterministic output.
  public init(using generator: inout some RandomNumberGenerator) {
    let word = UInt32(truncatingIfNeeded: generator.next())
    self.init(
      UInt8(truncatingIfNeeded: word), UInt8(truncatingIfNeeded: word >> 8),
      UInt8(truncatingIfNeeded: word >> 16), UInt8(truncatingIfNeeded: word >> 24))
  }

  public static func == (lhs: MaskingKey, rhs: MaskingKey) -> Bool {
    lhs.bytes.0 == rhs.bytes.0 && lhs.bytes.1 == rhs.bytes.1 && lhs.bytes.2 == rhs.bytes.2
      && lhs.bytes.3 == rhs.bytes.3
  }

  public func hash(into hasher: inout Hasher) {
    hasher.combine(bytes.0)
    hasher.combine(bytes.1)
    hasher.combine(bytes.2)
    hasher.combine(bytes.3)
  }

  /// XORs `buffer` in place with this key, as if the buffer started at payload offset `offset`.
  ///
  /// Works a machine word at a time: masking sits on the hot path of every outgoing frame.
  public func apply(to buffer: UnsafeMutableRawBufferPointer, offset: Int = 0) {
    guard let base = buffer.baseAddress, buffer.count > 0 else { return }
    let key = self
    let phase = offset & 3
    var index = 0
    let count = buffer.count
    // Byte-wise until the payload offset is aligned to the key, so the word loop can use one
    // fixed 64-bit key.
    while index < count && (phase + index) & 3 != 0 {
      base.storeBytes(
        of: base.load(fromByteOffset: index, as: UInt8.self) ^ key.byte(at: phase + index),
        toByteOffset: index, as: UInt8.self)
      index += 1
    }
    let k32 =
      UInt32(bytes.0) | UInt32(bytes.1) << 8 | UInt32(bytes.2) << 16 | UInt32(bytes.3) << 24
    let k64 = UInt64(k32) | UInt64(k32) << 32
    // Sixteen bytes a step (one vector register), then a word, then what is left.
    let k128 = SIMD16<UInt8>(
      bytes.0, bytes.1, bytes.2, bytes.3, bytes.0, bytes.1, bytes.2, bytes.3,
      bytes.0, bytes.1, bytes.2, bytes.3, bytes.0, bytes.1, bytes.2, bytes.3)
    while count &- index >= 16 {
      let block = base.loadUnaligned(fromByteOffset: index, as: SIMD16<UInt8>.self)
      base.storeBytes(of: block ^ k128, toByteOffset: index, as: SIMD16<UInt8>.self)
      index &+= 16
    }
    while count - index >= 8 {
      let word = base.loadUnaligned(fromByteOffset: index, as: UInt64.self)
      // The key bytes are laid out in memory order; on little-endian hosts the word above
      // matches that order, on big-endian hosts it must be swapped.
      base.storeBytes(of: word ^ k64.littleEndian, toByteOffset: index, as: UInt64.self)
      index += 8
    }
    if count - index >= 4 {
      let word = base.loadUnaligned(fromByteOffset: index, as: UInt32.self)
      base.storeBytes(of: word ^ k32.littleEndian, toByteOffset: index, as: UInt32.self)
      index += 4
    }
    while index < count {
      base.storeBytes(
        of: base.load(fromByteOffset: index, as: UInt8.self) ^ key.byte(at: phase + index),
        toByteOffset: index, as: UInt8.self)
      index += 1
    }
  }

  /// The key byte that masks payload offset `offset`.
  @inline(__always)
  func byte(at offset: Int) -> UInt8 {
    switch offset & 3 {
    case 0: bytes.0
    case 1: bytes.1
    case 2: bytes.2
    default: bytes.3
    }
  }
}
