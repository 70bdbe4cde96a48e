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
