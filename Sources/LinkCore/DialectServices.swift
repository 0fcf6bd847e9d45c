import WebSocket
import XMPP

/// What a dialect needs from outside the pure core, handed in when the core is made (the
/// daemon gives OpenSSL's primitives and random nonces; tests give fixed ones), so the
/// dialects stay values of their settings and are tested without sockets or libraries.
public struct DialectServices: Sendable {
  /// SASL SCRAM's hash, HMAC and PBKDF2 (XMPP). Without them, SCRAM fails with
  /// `SASLError.cryptoFailed` (PLAIN, where allowed, still works).
  public var scram: SCRAMCrypto
  /// A fresh SCRAM client nonce for each authentication: printable ASCII without commas.
  public var nonce: @Sendable () -> String

  /// Services from the given parts; by default no crypto and nonces from the system's
  /// generator (which reads getrandom on Linux).
  public init(
    scram: SCRAMCrypto = DialectServices.noCrypto,
    nonce: @escaping @Sendable () -> String = DialectServices.randomNonce
  ) {
    self.scram = scram
    self.nonce = nonce
  }

  /// Crypto that always fails.
  public static let noCrypto = SCRAMCrypto(
    hash: { _, _ in nil }, hmac: { _, _, _ in nil }, pbkdf2: { _, _, _, _ in nil })

  /// 24 characters of 18 random bytes: the base64 alphabet has no comma.
  @Sendable public static func randomNonce() -> String {
    var generator = SystemRandomNumberGenerator()
    let bytes = (0..<18).map { _ in UInt8.random(in: 0...255, using: &generator) }
    return Base64.encode(bytes)
  }
}
