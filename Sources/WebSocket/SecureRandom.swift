import COpenSSL

/// A cryptographically secure generator backed by OpenSSL's `RAND_bytes`.
///
/// Masking keys are drawn for every outgoing frame, so the generator refills a small buffer
/// instead of asking the kernel for four bytes at a time.
public struct SecureRandomGenerator: RandomNumberGenerator {
  private var pool = [UInt64](repeating: 0, count: 64)
  private var index = 64

  /// Creates a generator; the first call to `next()` fills the pool.
  public init() {}

  public mutating func next() -> UInt64 {
    if index == pool.count {
      let filled = pool.withUnsafeMutableBytes { raw in
        RAND_bytes(raw.baseAddress?.assumingMemoryBound(to: UInt8.self), Int32(raw.count))
      }
      if filled != 1 {
        // OpenSSL's DRBG only fails when the kernel cannot seed it. The system generator
        // (getrandom) is still a secure source, so fall back to it rather than crash.
        var system = SystemRandomNumberGenerator()
        for i in pool.indices { pool[i] = system.next() }
      }
      index = 0
    }
    defer { index += 1 }
    return pool[index]
  }
}
