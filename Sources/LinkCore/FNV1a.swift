/// FNV-1a: a fast, non-cryptographic hash for lookups and file checks (not for anything an
/// attacker must not be able to collide). The delivery ledger hashes client ids with it from
/// a secret basis; the store's room index hashes rooms and file heads with the standard one.
public enum FNV1a {
  /// The 32-bit offset basis: the hash of no bytes.
  public static let basis32: UInt32 = 0x811C_9DC5
  /// The 64-bit offset basis.
  public static let basis64: UInt64 = 0xCBF2_9CE4_8422_2325

  /// The 32-bit hash of `bytes`, or of what `hash` covered followed by `bytes`.
  @inlinable
  public static func hash32(_ bytes: some Sequence<UInt8>, continuing hash: UInt32 = basis32)
    -> UInt32
  {
    var hash = hash
    for byte in bytes { hash = (hash ^ UInt32(byte)) &* 0x0100_0193 }
    return hash
  }

  /// The 64-bit hash of `bytes`, starting from `basis` (a secret one makes collisions hard to
  /// choose in advance).
  @inlinable
  public static func hash64(_ bytes: some Sequence<UInt8>, basis: UInt64 = basis64) -> UInt64 {
    var hash = basis
    for byte in bytes { hash = (hash ^ UInt64(byte)) &* 0x0000_0100_0000_01B3 }
    return hash
  }
}
