/// FNV-1a: a fast, non-cryptographic hash for lookups and file checks (not for anything an
/// attacker must not be able to collide).
enum FNV1a {
  /// The 32-bit offset basis: the hash of no bytes.
  static let basis32: UInt32 = 0x811C_9DC5
  /// The 64-bit offset basis.
  static let basis64: UInt64 = 0xCBF2_9CE4_8422_2325

  /// The 32-bit hash of `bytes`, or of what `hash` covered followed by `bytes`.
  static func hash32(_ bytes: some Sequence<UInt8>, continuing hash: UInt32 = basis32)
    -> UInt32
  {
    bytes.reduce(hash) { ($0 ^ UInt32($1)) &* 0x0100_0193 }
  }

  /// The 64-bit hash of `bytes`.
  static func hash64(_ bytes: some Sequence<UInt8>) -> UInt64 {
    bytes.reduce(basis64) { ($0 ^ UInt64($1)) &* 0x0100_0000_01B3 }
  }
}
