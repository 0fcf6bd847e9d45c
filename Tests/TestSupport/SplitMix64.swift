// Imports nothing: scripts/fuzz.sh compiles this file into every fuzzer as well.

/// SplitMix64, a deterministic generator: one seed gives the same backoff jitter, masking
/// keys, handshake keys, chunk sizes and actions on every run and every machine.
public struct SplitMix64: RandomNumberGenerator, Sendable {
  /// The generator's whole state; the next output is a function of it alone.
  public var state: UInt64

  /// A generator that starts at `seed`.
  public init(seed: UInt64 = 42) { state = seed }

  public mutating func next() -> UInt64 {
    state &+= 0x9E37_79B9_7F4A_7C15
    var z = state
    z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
    z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
    return z ^ (z >> 31)
  }

  /// A number in `0..<n` (0 when `n` ≤ 1), by remainder: the fuzzers' committed corpora were
  /// found with this mapping, so the same input must keep choosing the same sizes.
  public mutating func below(_ n: Int) -> Int { n <= 1 ? 0 : Int(next() % UInt64(n)) }
}
