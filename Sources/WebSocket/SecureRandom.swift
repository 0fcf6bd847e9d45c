import CSystem
@preconcurrency import Glibc

/// A cryptographically secure generator backed by the kernel's `getrandom(2)`.
///
/// Masking keys (and the outbox's client ids) are drawn for every outgoing message, so the
/// generator refills a 4 KiB pool in one call instead of asking the kernel for a few bytes at
/// a time. It does not go through OpenSSL: a daemon on ws:// then never initialises
/// libcrypto's DRBG and providers (memory that would stay resident), and the kernel's
/// generator is what that DRBG seeds from anyway.
public struct SecureRandomGenerator: RandomNumberGenerator {
  private var pool: [UInt64] = []
  private var index = 0

  /// Creates a generator; the first call to `next()` makes and fills the pool (so a generator
  /// that is never used, or only stands in for another, costs nothing).
  public init() {}

  public mutating func next() -> UInt64 {
    if index == pool.count {
      if pool.isEmpty { pool = [UInt64](repeating: 0, count: 512) }
      let filled = pool.withUnsafeMutableBytes { raw -> Bool in
        // More than 256 bytes may come back short (a signal): ask again for the rest.
        var offset = 0
        while offset < raw.count {
          let got = getrandom(raw.baseAddress! + offset, raw.count - offset, 0)
          if got < 0 && errno == EINTR { continue }
          guard got > 0 else { return false }
          offset += got
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
