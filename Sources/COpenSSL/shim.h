// Swift face of a Debian C library: includes, plus static inline wrappers for what Swift
// cannot call directly (C-variadic functions, function-like macros).
#pragma once
#include <openssl/ssl.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/rsa.h>
#include <openssl/bio.h>
#include <openssl/x509.h>
#include <openssl/rand.h>

// ---- pc_: wrappers for FCM's HTTP/2 client (H2Transport). ----
static inline int pc_ssl_set_tlsext_host_name(SSL *ssl, const char *name) {
    return (int)SSL_set_tlsext_host_name(ssl, name);
}
static inline long pc_bio_set_mem_eof_return(BIO *bio, int value) {
    return BIO_set_mem_eof_return(bio, value);
}
static inline int pc_ssl_ctx_set_min_tls12(SSL_CTX *ctx) {
    return (int)SSL_CTX_set_min_proto_version(ctx, TLS1_2_VERSION);
}
// A TLS connection to the broker written from a poll loop: a write the socket did not take whole
// is taken up again from a buffer that may have moved (more publishes appended to it).
static inline long pc_ssl_ctx_accept_moving_write_buffer(SSL_CTX *ctx) {
    return SSL_CTX_set_mode(ctx, SSL_MODE_ACCEPT_MOVING_WRITE_BUFFER);
}
// ---- end of pc_ section ----

// ---- pc_emu_: wrappers for EmulatorKit (fcm-emulator). Keep this section at the end. ----
static inline long pc_emu_ssl_ctx_set_partial_write_mode(SSL_CTX *ctx) {
    return SSL_CTX_set_mode(ctx, SSL_MODE_ENABLE_PARTIAL_WRITE | SSL_MODE_ACCEPT_MOVING_WRITE_BUFFER);
}
static inline int pc_emu_ssl_ctx_set_min_tls12(SSL_CTX *ctx) {
    return (int)SSL_CTX_set_min_proto_version(ctx, TLS1_2_VERSION);
}
static inline EVP_PKEY *pc_emu_rsa_generate(unsigned int bits) {
    EVP_PKEY *key = NULL;
    EVP_PKEY_CTX *ctx = EVP_PKEY_CTX_new_id(EVP_PKEY_RSA, NULL);
    if (ctx == NULL) return NULL;
    if (EVP_PKEY_keygen_init(ctx) <= 0 || EVP_PKEY_CTX_set_rsa_keygen_bits(ctx, (int)bits) <= 0 ||
        EVP_PKEY_keygen(ctx, &key) <= 0) { key = NULL; }
    EVP_PKEY_CTX_free(ctx);
    return key;
}
// ---- end of pc_emu_ section ----
