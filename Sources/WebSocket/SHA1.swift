import COpenSSL

/// SHA-1 through OpenSSL's EVP interface, used only for Sec-WebSocket-Accept (RFC 6455 §4.1).
enum SHA1 {
  /// The 20-byte digest of `bytes`; nil only if OpenSSL itself fails.
  static func digest(_ bytes: [UInt8]) -> [UInt8]? {
    var digest = [UInt8](repeating: 0, count: 20)
    var length: UInt32 = 0
    let ok = bytes.withUnsafeBytes { input in
      digest.withUnsafeMutableBufferPointer { output in
        EVP_Digest(input.baseAddress, input.count, output.baseAddress, &length, EVP_sha1(), nil)
      }
    }
    return ok == 1 && length == 20 ? digest : nil
  }
}
