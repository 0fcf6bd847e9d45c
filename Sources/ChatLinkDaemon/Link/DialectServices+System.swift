import LinkCore
import Transport
import XMPP

extension DialectServices {
  /// What the daemon gives the dialects: OpenSSL's primitives for SCRAM (libcrypto loaded on
  /// the first authentication, not at start; PBKDF2's result kept for the last password and
  /// salt) and nonces from the system's generator.
  static let system = DialectServices(
    scram: openSSL.cachingSaltedPasswords(), nonce: DialectServices.randomNonce)

  private static let openSSL = SCRAMCrypto(
    hash: { hash, data in (try? OpenSSLCrypto.shared())?.hash(digest(hash), data) },
    hmac: { hash, key, message in
      (try? OpenSSLCrypto.shared())?.hmac(digest(hash), key: key, message: message)
    },
    pbkdf2: { hash, password, salt, iterations in
      (try? OpenSSLCrypto.shared())?.pbkdf2(
        digest(hash), password: password, salt: salt, iterations: iterations)
    })

  @Sendable private static func digest(_ hash: SCRAMHash) -> OpenSSLCrypto.Digest {
    switch hash {
    case .sha1: .sha1
    case .sha256: .sha256
    }
  }
}
