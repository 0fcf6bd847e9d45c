import COpenSSL
import EventLoop

/// How to verify a TLS server.
public struct TLSConfiguration: Sendable, Hashable {
  /// A PEM bundle of trusted CAs; nil uses the system trust store.
  public var caFile: String?

  /// Creates a configuration. There is deliberately no way to turn verification off.
  public init(caFile: String? = nil) {
    self.caFile = caFile
  }
}

/// An OpenSSL client context: trust store, TLS 1.2 minimum, verification on.
///
/// Loading the trust store is the expensive part, so one context serves every reconnect. The
/// first context loads OpenSSL itself (`OpenSSLLibrary`).
public final class TLSContext {
  let context: OpaquePointer
  let openssl: OpenSSLLibrary

  /// Builds a context; fails if OpenSSL, the CA file or the system store cannot be loaded.
  public static func make(_ configuration: TLSConfiguration) throws(TransportError) -> TLSContext {
    let openssl = try OpenSSLLibrary.shared()
    let errors = TLSErrors(openssl)
    guard let ctx = openssl.SSL_CTX_new(openssl.TLS_client_method()) else {
      throw .tlsConfiguration("SSL_CTX_new failed: \(errors.drain())")
    }
    guard openssl.setMinimumVersion(ctx, TLS1_2_VERSION) else {
      openssl.SSL_CTX_free(ctx)
      throw .tlsConfiguration("cannot require TLS 1.2: \(errors.drain())")
    }
    // Peers that close without close_notify are common; the WebSocket close handshake already
    // tells us whether a close was orderly.
    _ = openssl.SSL_CTX_set_options(
      ctx,
      chatlink_SSL_OP_IGNORE_UNEXPECTED_EOF() | chatlink_SSL_OP_NO_COMPRESSION()
        | chatlink_SSL_OP_NO_RENEGOTIATION())
    openssl.SSL_CTX_set_verify(ctx, SSL_VERIFY_PEER, nil)
    if let caFile = configuration.caFile {
      guard openssl.SSL_CTX_load_verify_locations(ctx, caFile, nil) == 1 else {
        openssl.SSL_CTX_free(ctx)
        throw .tlsConfiguration("cannot load CA file \(caFile): \(errors.drain())")
      }
    } else {
      guard openssl.SSL_CTX_set_default_verify_paths(ctx) == 1 else {
        openssl.SSL_CTX_free(ctx)
        throw .tlsConfiguration("cannot load the system trust store: \(errors.drain())")
      }
    }
    return TLSContext(context: ctx, openssl: openssl)
  }

  private init(context: OpaquePointer, openssl: OpenSSLLibrary) {
    self.context = context
    self.openssl = openssl
  }

  deinit {
    openssl.SSL_CTX_free(context)
  }
}

/// Result of one non-blocking TLS operation.
enum TLSProgress {
  case done(Int)
  case wantRead
  case wantWrite
  case closed
  case failed(TransportError)
}

/// One TLS client session over a connected non-blocking socket.
final class TLSSession {
  private let ssl: OpaquePointer
  private let host: String
  private let openssl: OpenSSLLibrary
  private let errors: TLSErrors

  init(context: TLSContext, fd: Int32, host: String) throws(TransportError) {
    let openssl = context.openssl
    let errors = TLSErrors(openssl)
    guard let ssl = openssl.SSL_new(context.context) else {
      throw .tlsConfiguration("SSL_new failed: \(errors.drain())")
    }
    self.ssl = ssl
    self.host = host
    self.openssl = openssl
    self.errors = errors
    _ = openssl.SSL_set_fd(ssl, fd)
    openssl.setMode(ssl, chatlink_SSL_MODE_nonblocking_writes())
    // SSL_set1_host checks DNS names and IP literals alike; SNI is for DNS names only
    // (RFC 6066 §3).
    guard openssl.SSL_set1_host(ssl, host) == 1 else {
      throw .tlsConfiguration("cannot set the verified host name: \(errors.drain())")
    }
    if !SocketAddress.isIPLiteral(host) {
      openssl.setServerName(ssl, host)
    }
    // ALPN http/1.1 stops servers that also speak HTTP/2 from picking h2 for the upgrade.
    let alpn: [UInt8] = [8] + Array("http/1.1".utf8)
    _ = alpn.withUnsafeBufferPointer {
      openssl.SSL_set_alpn_protos(ssl, $0.baseAddress, UInt32($0.count))
    }
    openssl.SSL_set_connect_state(ssl)
  }

  deinit {
    openssl.SSL_free(ssl)
  }

  /// Advances the handshake.
  func handshake() -> TLSProgress {
    openssl.ERR_clear_error()
    let rc = openssl.SSL_do_handshake(ssl)
    if rc == 1 { return .done(0) }
    return progress(after: rc, handshaking: true)
  }

  func read(into buffer: UnsafeMutableRawBufferPointer) -> TLSProgress {
    openssl.ERR_clear_error()
    var read = 0
    let rc = openssl.SSL_read_ex(ssl, buffer.baseAddress, buffer.count, &read)
    if rc == 1 { return .done(read) }
    return progress(after: rc, handshaking: false)
  }

  func write(_ buffer: UnsafeRawBufferPointer) -> TLSProgress {
    openssl.ERR_clear_error()
    var written = 0
    let rc = openssl.SSL_write_ex(ssl, buffer.baseAddress, buffer.count, &written)
    if rc == 1 { return .done(written) }
    return progress(after: rc, handshaking: false)
  }

  /// Sends close_notify once, without waiting for the peer's.
  func shutdown() {
    openssl.ERR_clear_error()
    _ = openssl.SSL_shutdown(ssl)
  }

  /// The negotiated protocol version, e.g. "TLSv1.3".
  var protocolVersion: String {
    guard let name = openssl.SSL_get_version(ssl) else { return "unknown" }
    return TLSErrors.string(name)
  }

  private func progress(after rc: Int32, handshaking: Bool) -> TLSProgress {
    let error = openssl.SSL_get_error(ssl, rc)
    switch error {
    case SSL_ERROR_WANT_READ: return .wantRead
    case SSL_ERROR_WANT_WRITE: return .wantWrite
    case SSL_ERROR_ZERO_RETURN: return .closed
    default:
      if handshaking {
        let verify = openssl.SSL_get_verify_result(ssl)
        if verify != X509_V_OK {
          return .failed(.certificateRejected(problem(Int32(verify))))
        }
        let detail = errors.drain()
        if error == SSL_ERROR_SYSCALL {
          return .failed(
            .tlsHandshakeFailed(detail.isEmpty ? "connection closed during the handshake" : detail))
        }
        return .failed(.tlsHandshakeFailed(detail.isEmpty ? "error \(error)" : detail))
      }
      if error == SSL_ERROR_SYSCALL {
        let detail = errors.drain()
        if detail.isEmpty { return .failed(.io(SystemError.last("SSL_read"))) }
        return .failed(.tls(detail))
      }
      return .failed(.tls(errors.drain()))
    }
  }

  private func problem(_ code: Int32) -> CertificateProblem {
    let text = TLSErrors.string(openssl.X509_verify_cert_error_string(Int(code)))
    switch code {
    case X509_V_ERR_UNABLE_TO_GET_ISSUER_CERT_LOCALLY, X509_V_ERR_UNABLE_TO_GET_ISSUER_CERT,
      X509_V_ERR_SELF_SIGNED_CERT_IN_CHAIN, X509_V_ERR_DEPTH_ZERO_SELF_SIGNED_CERT,
      X509_V_ERR_CERT_UNTRUSTED, X509_V_ERR_UNABLE_TO_VERIFY_LEAF_SIGNATURE:
      return .unknownAuthority(text)
    case X509_V_ERR_HOSTNAME_MISMATCH, X509_V_ERR_IP_ADDRESS_MISMATCH:
      return .hostnameMismatch(host: host)
    case X509_V_ERR_CERT_HAS_EXPIRED:
      return .expired
    case X509_V_ERR_CERT_NOT_YET_VALID:
      return .notYetValid
    default:
      return .other(code: Int(code), text: text)
    }
  }
}

/// OpenSSL's thread-local error queue as text.
struct TLSErrors {
  let openssl: OpenSSLLibrary

  init(_ openssl: OpenSSLLibrary) {
    self.openssl = openssl
  }

  func drain() -> String {
    var messages: [String] = []
    while true {
      let code = openssl.ERR_get_error()
      if code == 0 { break }
      var buffer = [CChar](repeating: 0, count: 256)
      openssl.ERR_error_string_n(code, &buffer, buffer.count)
      messages.append(Self.string(buffer))
    }
    return messages.joined(separator: "; ")
  }

  static func string(_ chars: [CChar]) -> String {
    String(decoding: chars.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
  }

  static func string(_ pointer: UnsafePointer<CChar>?) -> String {
    guard let pointer else { return "" }
    var length = 0
    while pointer[length] != 0 { length += 1 }
    return String(
      decoding: UnsafeRawBufferPointer(start: pointer, count: length), as: UTF8.self)
  }
}
