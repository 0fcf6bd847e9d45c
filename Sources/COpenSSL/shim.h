// OpenSSL's headers, for its types and constants only. Neither libssl nor libcrypto is linked:
// Transport/OpenSSLLibrary.swift loads them with dlopen when the first TLS context is made, so
// a ws:// daemon never maps them. Nothing here may therefore call OpenSSL. The function types
// below are taken from OpenSSL's own declarations with __typeof__, which references no symbol,
// so every call through a loaded pointer is type-checked like a direct call. No logic lives here.
#ifndef CHATLINK_COPENSSL_SHIM_H
#define CHATLINK_COPENSSL_SHIM_H
#include <openssl/opensslv.h>
#include <openssl/ssl.h>
#include <openssl/err.h>
#include <openssl/x509v3.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>

#define CHATLINK_OPENSSL_FUNCTION(name) typedef __typeof__(&name) chatlink_##name##_fn;
// libssl
CHATLINK_OPENSSL_FUNCTION(TLS_client_method)
CHATLINK_OPENSSL_FUNCTION(SSL_CTX_new)
CHATLINK_OPENSSL_FUNCTION(SSL_CTX_free)
CHATLINK_OPENSSL_FUNCTION(SSL_CTX_ctrl)
CHATLINK_OPENSSL_FUNCTION(SSL_CTX_set_options)
CHATLINK_OPENSSL_FUNCTION(SSL_CTX_set_verify)
CHATLINK_OPENSSL_FUNCTION(SSL_CTX_load_verify_locations)
CHATLINK_OPENSSL_FUNCTION(SSL_CTX_set_default_verify_paths)
CHATLINK_OPENSSL_FUNCTION(SSL_new)
CHATLINK_OPENSSL_FUNCTION(SSL_free)
CHATLINK_OPENSSL_FUNCTION(SSL_set_fd)
CHATLINK_OPENSSL_FUNCTION(SSL_ctrl)
CHATLINK_OPENSSL_FUNCTION(SSL_set1_host)
CHATLINK_OPENSSL_FUNCTION(SSL_set_alpn_protos)
CHATLINK_OPENSSL_FUNCTION(SSL_set_connect_state)
CHATLINK_OPENSSL_FUNCTION(SSL_do_handshake)
CHATLINK_OPENSSL_FUNCTION(SSL_read_ex)
CHATLINK_OPENSSL_FUNCTION(SSL_write_ex)
CHATLINK_OPENSSL_FUNCTION(SSL_shutdown)
CHATLINK_OPENSSL_FUNCTION(SSL_get_version)
CHATLINK_OPENSSL_FUNCTION(SSL_get_error)
CHATLINK_OPENSSL_FUNCTION(SSL_get_verify_result)
// libcrypto (libssl depends on it, so dlsym on libssl's handle finds these too)
CHATLINK_OPENSSL_FUNCTION(X509_verify_cert_error_string)
CHATLINK_OPENSSL_FUNCTION(ERR_clear_error)
CHATLINK_OPENSSL_FUNCTION(ERR_get_error)
CHATLINK_OPENSSL_FUNCTION(ERR_error_string_n)
// libcrypto alone, for SASL SCRAM (Transport/OpenSSLCrypto.swift)
CHATLINK_OPENSSL_FUNCTION(EVP_sha1)
CHATLINK_OPENSSL_FUNCTION(EVP_sha256)
CHATLINK_OPENSSL_FUNCTION(EVP_Digest)
CHATLINK_OPENSSL_FUNCTION(HMAC)
CHATLINK_OPENSSL_FUNCTION(PKCS5_PBKDF2_HMAC)
#undef CHATLINK_OPENSSL_FUNCTION

// Constants that are macros Swift cannot import.
static inline uint64_t chatlink_SSL_OP_IGNORE_UNEXPECTED_EOF(void) { return SSL_OP_IGNORE_UNEXPECTED_EOF; }
static inline uint64_t chatlink_SSL_OP_NO_COMPRESSION(void) { return SSL_OP_NO_COMPRESSION; }
static inline uint64_t chatlink_SSL_OP_NO_RENEGOTIATION(void) { return SSL_OP_NO_RENEGOTIATION; }
static inline long chatlink_SSL_MODE_nonblocking_writes(void) {
  return SSL_MODE_ENABLE_PARTIAL_WRITE | SSL_MODE_ACCEPT_MOVING_WRITE_BUFFER;
}
#endif
