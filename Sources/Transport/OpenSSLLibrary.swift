// swift-format-ignore-file: AlwaysUseLowerCamelCase

// (The members keep OpenSSL's C names.)
import COpenSSL
@preconcurrency import Glibc

/// libssl and libcrypto, loaded with dlopen when the first TLS context is made.
///
/// A ws:// daemon never needs TLS, yet a linked OpenSSL costs every daemon at start-up: the
/// dynamic loader maps both libraries and applies their relocations before `main`, which
/// costs resident memory and the larger part of the loader's time (bench/README.md has
/// the figures). A library the daemon may never use is better loaded when it is first
/// needed: then that cost falls on wss:// daemons alone.
///
/// The function types come from OpenSSL's own declarations (`COpenSSL/shim.h`), so every
/// call through these pointers is type-checked as a direct call would be.
struct OpenSSLLibrary: @unchecked Sendable {
  // The C names, so that calls read as OpenSSL's documentation spells them.
  let TLS_client_method: chatlink_TLS_client_method_fn
  let SSL_CTX_new: chatlink_SSL_CTX_new_fn
  let SSL_CTX_free: chatlink_SSL_CTX_free_fn
  let SSL_CTX_ctrl: chatlink_SSL_CTX_ctrl_fn
  let SSL_CTX_set_options: chatlink_SSL_CTX_set_options_fn
  let SSL_CTX_set_verify: chatlink_SSL_CTX_set_verify_fn
  let SSL_CTX_load_verify_locations: chatlink_SSL_CTX_load_verify_locations_fn
  let SSL_CTX_set_default_verify_paths: chatlink_SSL_CTX_set_default_verify_paths_fn
  let SSL_new: chatlink_SSL_new_fn
  let SSL_free: chatlink_SSL_free_fn
  let SSL_set_fd: chatlink_SSL_set_fd_fn
  let SSL_ctrl: chatlink_SSL_ctrl_fn
  let SSL_set1_host: chatlink_SSL_set1_host_fn
  let SSL_set_alpn_protos: chatlink_SSL_set_alpn_protos_fn
  let SSL_set_connect_state: chatlink_SSL_set_connect_state_fn
  let SSL_do_handshake: chatlink_SSL_do_handshake_fn
  let SSL_read_ex: chatlink_SSL_read_ex_fn
  let SSL_write_ex: chatlink_SSL_write_ex_fn
  let SSL_shutdown: chatlink_SSL_shutdown_fn
  let SSL_get_version: chatlink_SSL_get_version_fn
  let SSL_get_error: chatlink_SSL_get_error_fn
  let SSL_get_verify_result: chatlink_SSL_get_verify_result_fn
  let X509_verify_cert_error_string: chatlink_X509_verify_cert_error_string_fn
  let ERR_clear_error: chatlink_ERR_clear_error_fn
  let ERR_get_error: chatlink_ERR_get_error_fn
  let ERR_error_string_n: chatlink_ERR_error_string_n_fn

  /// The soname the headers were written for: libssl.so.3 for OpenSSL 3.x.
  static let soname = "libssl.so.\(OPENSSL_VERSION_MAJOR)"

  /// The library, loaded once, on first use; or why it cannot be.
  static func shared() throws(TransportError) -> OpenSSLLibrary {
    try loaded.get()
  }

  private static let loaded: Result<OpenSSLLibrary, TransportError> = load(soname)

  /// Loads `soname` and looks up every function; internal so a test can name a missing one.
  static func load(_ soname: String) -> Result<OpenSSLLibrary, TransportError> {
    // RTLD_LOCAL: OpenSSL's symbols serve these pointers only, never other libraries.
    guard let handle = dlopen(soname, RTLD_NOW | RTLD_LOCAL) else {
      return .failure(.tlsConfiguration("TLS needs \(soname) (Debian: libssl3): \(lastError())"))
    }
    func symbol<Function>(_ name: String) throws(TransportError) -> Function {
      guard let address = dlsym(handle, name) else {
        throw .tlsConfiguration("\(soname) has no \(name): \(lastError())")
      }
      return unsafeBitCast(address, to: Function.self)
    }
    do throws(TransportError) {
      return .success(
        OpenSSLLibrary(
          TLS_client_method: try symbol("TLS_client_method"),
          SSL_CTX_new: try symbol("SSL_CTX_new"),
          SSL_CTX_free: try symbol("SSL_CTX_free"),
          SSL_CTX_ctrl: try symbol("SSL_CTX_ctrl"),
          SSL_CTX_set_options: try symbol("SSL_CTX_set_options"),
          SSL_CTX_set_verify: try symbol("SSL_CTX_set_verify"),
          SSL_CTX_load_verify_locations: try symbol("SSL_CTX_load_verify_locations"),
          SSL_CTX_set_default_verify_paths: try symbol("SSL_CTX_set_default_verify_paths"),
          SSL_new: try symbol("SSL_new"),
          SSL_free: try symbol("SSL_free"),
          SSL_set_fd: try symbol("SSL_set_fd"),
          SSL_ctrl: try symbol("SSL_ctrl"),
          SSL_set1_host: try symbol("SSL_set1_host"),
          SSL_set_alpn_protos: try symbol("SSL_set_alpn_protos"),
          SSL_set_connect_state: try symbol("SSL_set_connect_state"),
          SSL_do_handshake: try symbol("SSL_do_handshake"),
          SSL_read_ex: try symbol("SSL_read_ex"),
          SSL_write_ex: try symbol("SSL_write_ex"),
          SSL_shutdown: try symbol("SSL_shutdown"),
          SSL_get_version: try symbol("SSL_get_version"),
          SSL_get_error: try symbol("SSL_get_error"),
          SSL_get_verify_result: try symbol("SSL_get_verify_result"),
          X509_verify_cert_error_string: try symbol("X509_verify_cert_error_string"),
          ERR_clear_error: try symbol("ERR_clear_error"),
          ERR_get_error: try symbol("ERR_get_error"),
          ERR_error_string_n: try symbol("ERR_error_string_n")))
    } catch {
      dlclose(handle)
      return .failure(error)
    }
  }

  private static func lastError() -> String {
    guard let text = dlerror() else { return "unknown error" }
    return String(cString: text)
  }

  // MARK: OpenSSL's macros, spelled as the headers define them

  /// `SSL_CTX_set_min_proto_version`.
  func setMinimumVersion(_ context: OpaquePointer, _ version: Int32) -> Bool {
    SSL_CTX_ctrl(context, SSL_CTRL_SET_MIN_PROTO_VERSION, Int(version), nil) == 1
  }

  /// `SSL_set_mode`.
  func setMode(_ ssl: OpaquePointer, _ mode: Int) {
    _ = SSL_ctrl(ssl, SSL_CTRL_MODE, mode, nil)
  }

  /// `SSL_set_tlsext_host_name`: the SNI name.
  func setServerName(_ ssl: OpaquePointer, _ name: String) {
    _ = name.withCString { pointer in
      SSL_ctrl(
        ssl, SSL_CTRL_SET_TLSEXT_HOSTNAME, Int(TLSEXT_NAMETYPE_host_name),
        UnsafeMutableRawPointer(mutating: pointer))
    }
  }
}
