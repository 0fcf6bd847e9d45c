@preconcurrency import Glibc

/// A cryptographically secure generator backed by the kernel's `getrandom(2)`
/// (through `getentropy(3)`).
///
/// Masking keys are drawn for every outgoing frame, so the generator refills a small buffer
/// instead of asking the kernel for four bytes at a time. It does not go through OpenSSL: a
/// daemon on ws:// then never initialises libcrypto's DRBG and providers (memory that would
/// stay resident), and the kernel's generator is what that DRBG seeds from anyway.
public struct SecureRandomGenerator: RandomNumberGenerator {
  private var pool = [UInt64](repeating: 0, count: 64)
  private var index = 64

  /// Creates a generator; the first call to `next()` fills the pool.
  public init() {}

  public mutating func next() -> UInt64 {
    if index == pool.count {
      let filled = pool.withUnsafeMutableBytes { raw -> Bool in
        // getentropy(3) is getrandom(2) in pieces of at most 256 bytes.
        var offset = 0
        while offset < raw.count {
          let length = min(256, raw.count - offset)
          guard getentropy(raw.baseAddress! + offset, length) == 0 else { return false }
          offset += length
        }
        return true
      }
      if !filled {
        // getrandom exists since Linux 3.17; should a sandbox refuse it, the standard
        // library's generator is still a secure source, so fall back to it rather than crash.
        var system = SystemRandomNumberGenerator()
        for i in pool.indices { pool[i] = system.next() }
      }
      index = 0
    }
    defer { index += 1 }
    return pool[index]
  }
}
