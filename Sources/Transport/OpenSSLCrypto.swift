// swift-format-ignore-file: AlwaysUseLowerCamelCase

// (The members keep OpenSSL's C names.)
import COpenSSL
@preconcurrency import Glibc

/// Hashes, HMAC and PBKDF2 from libcrypto, loaded with dlopen on first use, for SASL SCRAM.
///
/// Loaded apart from libssl (`OpenSSLLibrary`) so that an XMPP daemon on ws:// maps libcrypto
/// alone, and only once it authenticates; the reasons for dlopen are `OpenSSLLibrary`'s.
public struct OpenSSLCrypto: @unchecked Sendable {
  /// The digests SCRAM uses.
  public enum Digest: Sendable {
    case sha1, sha256

    /// Output length in bytes.
    public var length: Int {
      switch self {
      case .sha1: 20
      case .sha256: 32
      }
    }
  }

  /// Why libcrypto could not be loaded.
  public struct Unavailable: Error, Sendable, CustomStringConvertible {
    public let description: String
  }

  let EVP_sha1: chatlink_EVP_sha1_fn
  let EVP_sha256: chatlink_EVP_sha256_fn
  let EVP_Digest: chatlink_EVP_Digest_fn
  let HMAC: chatlink_HMAC_fn
  let PKCS5_PBKDF2_HMAC: chatlink_PKCS5_PBKDF2_HMAC_fn

  /// The soname the headers were written for: libcrypto.so.3 for OpenSSL 3.x.
  static let soname = "libcrypto.so.\(OPENSSL_VERSION_MAJOR)"

  /// The library, loaded once, on first use; or why it cannot be.
  public static func shared() throws(Unavailable) -> OpenSSLCrypto {
    try loaded.get()
  }

  private static let loaded: Result<OpenSSLCrypto, Unavailable> = load(soname)

  static func load(_ soname: String) -> Result<OpenSSLCrypto, Unavailable> {
    // RTLD_LOCAL: these symbols serve these pointers only.
    guard let handle = dlopen(soname, RTLD_NOW | RTLD_LOCAL) else {
      return .failure(Unavailable(description: "SASL SCRAM needs \(soname) (Debian: libssl3)"))
    }
    func symbol<Function>(_ name: String) throws(Unavailable) -> Function {
      guard let address = dlsym(handle, name) else {
        throw Unavailable(description: "\(soname) has no \(name)")
      }
      return unsafeBitCast(address, to: Function.self)
    }
    do throws(Unavailable) {
      return .success(
        OpenSSLCrypto(
          EVP_sha1: try symbol("EVP_sha1"), EVP_sha256: try symbol("EVP_sha256"),
          EVP_Digest: try symbol("EVP_Digest"), HMAC: try symbol("HMAC"),
          PKCS5_PBKDF2_HMAC: try symbol("PKCS5_PBKDF2_HMAC")))
    } catch {
      dlclose(handle)
      return .failure(error)
    }
  }

  private func md(_ digest: Digest) -> OpaquePointer? {
    switch digest {
    case .sha1: EVP_sha1()
    case .sha256: EVP_sha256()
    }
  }

  /// The digest of `data`; nil if OpenSSL fails.
  public func hash(_ digest: Digest, _ data: [UInt8]) -> [UInt8]? {
    var out = [UInt8](repeating: 0, count: digest.length)
    var length: UInt32 = 0
    let ok = data.withUnsafeBytes { input in
      EVP_Digest(input.baseAddress, input.count, &out, &length, md(digest), nil) == 1
    }
    return ok && Int(length) == digest.length ? out : nil
  }

  /// HMAC of `message` under `key`; nil if OpenSSL fails.
  public func hmac(_ digest: Digest, key: [UInt8], message: [UInt8]) -> [UInt8]? {
    guard key.count <= Int(Int32.max) else { return nil }
    var out = [UInt8](repeating: 0, count: digest.length)
    var length: UInt32 = 0
    let result = key.withUnsafeBytes { keyBytes in
      message.withUnsafeBufferPointer { input in
        HMAC(
          md(digest), keyBytes.baseAddress, Int32(keyBytes.count), input.baseAddress, input.count,
          &out, &length)
      }
    }
    return result != nil && Int(length) == digest.length ? out : nil
  }

  /// PBKDF2 (RFC 8018) of `password` with `salt`, `iterations` rounds, one digest's length;
  /// nil if OpenSSL fails or a length does not fit its `int`s.
  public func pbkdf2(_ digest: Digest, password: [UInt8], salt: [UInt8], iterations: Int)
    -> [UInt8]?
  {
    guard password.count <= Int(Int32.max), salt.count <= Int(Int32.max),
      (1...Int(Int32.max)).contains(iterations)
    else { return nil }
    var out = [UInt8](repeating: 0, count: digest.length)
    let ok = password.withUnsafeBytes { passwordBytes in
      salt.withUnsafeBufferPointer { saltBytes in
        PKCS5_PBKDF2_HMAC(
          passwordBytes.baseAddress?.assumingMemoryBound(to: CChar.self),
          Int32(passwordBytes.count), saltBytes.baseAddress, Int32(saltBytes.count),
          Int32(iterations), md(digest), Int32(digest.length), &out) == 1
      }
    }
    return ok ? out : nil
  }
}
