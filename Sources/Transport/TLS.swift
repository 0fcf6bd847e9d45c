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
/// Loading the trust store is the expensive part, so one context serves every reconnect.
public final class TLSContext {
  let context: OpaquePointer

  /// Builds a context; fails if the CA file or the system store cannot be loaded.
  public static func make(_ configuration: TLSConfiguration) throws(TransportError) -> TLSContext {
    guard let ctx = SSL_CTX_new(TLS_client_method()) else {
      throw .tlsConfiguration("SSL_CTX_new failed: \(TLSErrors.drain())")
    }
    guard chatlink_SSL_CTX_set_min_proto_version(ctx, TLS1_2_VERSION) == 1 else {
      SSL_CTX_free(ctx)
      throw .tlsConfiguration("cannot require TLS 1.2: \(TLSErrors.drain())")
    }
    // Peers that close without close_notify are common; the WebSocket close handshake already
    // tells us whether a close was orderly.
    SSL_CTX_set_options(
      ctx,
      chatlink_SSL_OP_IGNORE_UNEXPECTED_EOF() | chatlink_SSL_OP_NO_COMPRESSION()
        | chatlink_SSL_OP_NO_RENEGOTIATION())
    SSL_CTX_set_verify(ctx, SSL_VERIFY_PEER, nil)
    let loaded: Int32
    if let caFile = configuration.caFile {
      loaded = SSL_CTX_load_verify_locations(ctx, caFile, nil)
      if loaded != 1 {
        SSL_CTX_free(ctx)
        throw .tlsConfiguration("cannot load CA file \(caFile): \(TLSErrors.drain())")
      }
    } else {
      loaded = SSL_CTX_set_default_verify_paths(ctx)
      if loaded != 1 {
        SSL_CTX_free(ctx)
        throw .tlsConfiguration("cannot load the system trust store: \(TLSErrors.drain())")
      }
    }
    return TLSContext(context: ctx)
  }

  private init(context: OpaquePointer) {
    self.context = context
  }

  deinit {
    SSL_CTX_free(context)
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

  init(context: TLSContext, fd: Int32, host: String) throws(TransportError) {
    guard let ssl = SSL_new(context.context) else {
      throw .tlsConfiguration("SSL_new failed: \(TLSErrors.drain())")
    }
    self.ssl = ssl
    self.host = host
    SSL_set_fd(ssl, fd)
    _ = chatlink_SSL_set_mode(ssl, chatlink_SSL_MODE_nonblocking_writes())
    // SSL_set1_host checks DNS names and IP literals alike; SNI is for DNS names only
    // (RFC 6066 §3).
    guard SSL_set1_host(ssl, host) == 1 else {
      throw .tlsConfiguration("cannot set the verified host name: \(TLSErrors.drain())")
    }
    if !SocketAddress.isIPLiteral(host) {
      _ = chatlink_SSL_set_tlsext_host_name(ssl, host)
    }
    // ALPN http/1.1 stops servers that also speak HTTP/2 from picking h2 for the upgrade.
    let alpn: [UInt8] = [8] + Array("http/1.1".utf8)
    _ = alpn.withUnsafeBufferPointer { SSL_set_alpn_protos(ssl, $0.baseAddress, UInt32($0.count)) }
    SSL_set_connect_state(ssl)
  }

  deinit {
    SSL_free(ssl)
  }

  /// Advances the handshake.
  func handshake() -> TLSProgress {
    ERR_clear_error()
    let rc = SSL_do_handshake(ssl)
    if rc == 1 { return .done(0) }
    return progress(after: rc, handshaking: true)
  }

  func read(into buffer: UnsafeMutableRawBufferPointer) -> TLSProgress {
    ERR_clear_error()
    var read = 0
    let rc = SSL_read_ex(ssl, buffer.baseAddress, buffer.count, &read)
    if rc == 1 { return .done(read) }
    return progress(after: rc, handshaking: false)
  }

  func write(_ buffer: UnsafeRawBufferPointer) -> TLSProgress {
    ERR_clear_error()
    var written = 0
    let rc = SSL_write_ex(ssl, buffer.baseAddress, buffer.count, &written)
    if rc == 1 { return .done(written) }
    return progress(after: rc, handshaking: false)
  }

  /// Sends close_notify once, without waiting for the peer's.
  func shutdown() {
    ERR_clear_error()
    _ = SSL_shutdown(ssl)
  }

  /// The negotiated protocol version, e.g. "TLSv1.3".
  var protocolVersion: String {
    guard let name = SSL_get_version(ssl) else { return "unknown" }
    return TLSErrors.string(name)
  }

  private func progress(after rc: Int32, handshaking: Bool) -> TLSProgress {
    let error = SSL_get_error(ssl, rc)
    switch error {
    case SSL_ERROR_WANT_READ: return .wantRead
    case SSL_ERROR_WANT_WRITE: return .wantWrite
    case SSL_ERROR_ZERO_RETURN: return .closed
    default:
      if handshaking {
        let verify = SSL_get_verify_result(ssl)
        if verify != X509_V_OK {
          return .failed(.certificateRejected(Self.problem(Int32(verify), host: host)))
        }
        let detail = TLSErrors.drain()
        if error == SSL_ERROR_SYSCALL {
          return .failed(
            .tlsHandshakeFailed(detail.isEmpty ? "connection closed during the handshake" : detail))
        }
        return .failed(.tlsHandshakeFailed(detail.isEmpty ? "error \(error)" : detail))
      }
      if error == SSL_ERROR_SYSCALL {
        let detail = TLSErrors.drain()
        if detail.isEmpty { return .failed(.io(SystemError.last("SSL_read"))) }
        return .failed(.tls(detail))
      }
      return .failed(.tls(TLSErrors.drain()))
    }
  }

  static func problem(_ code: Int32, host: String) -> CertificateProblem {
    let text = TLSErrors.string(X509_verify_cert_error_string(Int(code)))
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
enum TLSErrors {
  static func drain() -> String {
    var messages: [String] = []
    while true {
      let code = ERR_get_error()
      if code == 0 { break }
      var buffer = [CChar](repeating: 0, count: 256)
      ERR_error_string_n(code, &buffer, buffer.count)
      messages.append(string(buffer))
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
