// Wrappers for OpenSSL 3 macros that Swift cannot import. No logic lives here.
#ifndef CHATLINK_COPENSSL_SHIM_H
#define CHATLINK_COPENSSL_SHIM_H
#include <openssl/ssl.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/rand.h>
#include <openssl/x509v3.h>

static inline long chatlink_SSL_set_tlsext_host_name(SSL *s, const char *name) {
  return SSL_set_tlsext_host_name(s, name);
}
static inline int chatlink_SSL_CTX_set_min_proto_version(SSL_CTX *ctx, int version) {
  return (int)SSL_CTX_set_min_proto_version(ctx, version);
}
static inline long chatlink_SSL_set_mode(SSL *s, long mode) { return SSL_set_mode(s, mode); }
static inline long chatlink_SSL_MODE_nonblocking_writes(void) {
  return SSL_MODE_ENABLE_PARTIAL_WRITE | SSL_MODE_ACCEPT_MOVING_WRITE_BUFFER;
}
static inline uint64_t chatlink_SSL_OP_IGNORE_UNEXPECTED_EOF(void) { return SSL_OP_IGNORE_UNEXPECTED_EOF; }
static inline uint64_t chatlink_SSL_OP_NO_COMPRESSION(void) { return SSL_OP_NO_COMPRESSION; }
static inline uint64_t chatlink_SSL_OP_NO_RENEGOTIATION(void) { return SSL_OP_NO_RENEGOTIATION; }
#endif
