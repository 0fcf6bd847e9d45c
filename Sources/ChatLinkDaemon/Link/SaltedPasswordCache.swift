import EventLoop
import XMPP

extension SCRAMCrypto {
  /// The same primitives, with PBKDF2's result kept for the last (hash, password, salt,
  /// iterations) asked: the salted password of an account changes only with its password, and
  /// every reconnect would otherwise spend the whole iteration count again on the thread that
  /// runs the session (ARCHITECTURE.md, "XMPP", has the cost).
  func cachingSaltedPasswords() -> SCRAMCrypto {
    let cache = SaltedPasswordCache()
    let derive = pbkdf2
    return SCRAMCrypto(
      hash: hash, hmac: hmac,
      pbkdf2: { hash, password, salt, iterations in
        let key = SaltedPasswordCache.Key(
          hash: hash, password: password, salt: salt, iterations: iterations)
        if let known = cache.value(for: key) { return known }
        let salted = derive(hash, password, salt, iterations)
        if let salted { cache.keep(salted, for: key) }
        return salted
      })
  }
}

/// One salted password and what made it. The closures that use it are `@Sendable`, so it sits
/// behind a lock, though one thread (the loop's) is all that calls it: a `ThreadLock`, which
/// ThreadSanitizer sees (`make sanitize`).
final class SaltedPasswordCache: Sendable {
  struct Key: Hashable, Sendable {
    var hash: SCRAMHash
    var password: [UInt8]
    var salt: [UInt8]
    var iterations: Int
  }

  private let entry = ThreadLock<(key: Key, value: [UInt8])?>(nil)

  func value(for key: Key) -> [UInt8]? {
    entry.withLock { $0?.key == key ? $0?.value : nil }
  }

  func keep(_ value: [UInt8], for key: Key) {
    entry.withLock { $0 = (key, value) }
  }
}
