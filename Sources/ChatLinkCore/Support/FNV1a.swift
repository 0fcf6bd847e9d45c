/// FNV-1a: a fast, non-cryptographic hash for lookups and file checks (not for anything an
/// attacker must not be able to collide).
struct FNV1a<Value: FixedWidthInteger & UnsignedInteger> {
  private(set) var value: Value

  private let prime: Value

  private init(basis: Value, prime: Value) {
    value = basis
    self.prime = prime
  }

  /// Adds bytes to the hash.
  mutating func combine(_ bytes: some Sequence<UInt8>) {
    for byte in bytes { value = (value ^ Value(byte)) &* prime }
  }
}

extension FNV1a where Value == UInt32 {
  /// A fresh 32-bit hash.
  init() { self.init(basis: 0x811C_9DC5, prime: 0x0100_0193) }

  /// The 32-bit hash of `bytes`.
  static func hash(_ bytes: some Sequence<UInt8>) -> UInt32 {
    var hasher = FNV1a()
    hasher.combine(bytes)
    return hasher.value
  }
}

extension FNV1a where Value == UInt64 {
  /// A fresh 64-bit hash.
  init() { self.init(basis: 0xCBF2_9CE4_8422_2325, prime: 0x0100_0000_01B3) }

  /// The 64-bit hash of `bytes`.
  static func hash(_ bytes: some Sequence<UInt8>) -> UInt64 {
    var hasher = FNV1a()
    hasher.combine(bytes)
    return hasher.value
  }
}
