/* SPDX-License-Identifier: Apache-2.0 */
/*
 * crypto: SHA-256, HMAC-SHA256, hex, base64 and random bytes over OpenSSL.
 * Thread-safe. Never logs its inputs.
 */
#ifndef CO_CRYPTO_H
#define CO_CRYPTO_H

#include "util/compiler.h"

#include <stdbool.h>
#include <stddef.h>

#define CRYPTO_SHA256_LEN 32

void crypto_sha256(const void *data, size_t len,
                   unsigned char out[CRYPTO_SHA256_LEN]);
void crypto_hmac_sha256(const void *key, size_t key_len, const void *data,
                        size_t len, unsigned char out[CRYPTO_SHA256_LEN]);
/* Lower-case hex of in[0..len) into out (2 * len + 1 bytes). */
void crypto_hex(const unsigned char *in, size_t len, char *out);
/* Standard base64 with padding; out needs 4 * ((len + 2) / 3) + 1 bytes. */
size_t crypto_base64_encode(const unsigned char *in, size_t len, char *out);
/*
 * Decodes standard base64 (padding required, no white space) of any length
 * into out (outsz bytes); never writes past the decoded length. Returns
 * that length, or -1 if the input is not valid base64 or does not fit.
 */
/* One piece of a message hashed in parts. */
struct crypto_part {
        const void *data;
        size_t len;
};

/* HMAC-SHA256 of the concatenation of parts[0..n), without copying them
 * together. */
void crypto_hmac_sha256_parts(const void *key, size_t key_len,
                              const struct crypto_part *parts, size_t n,
                              unsigned char out[CRYPTO_SHA256_LEN]);
/* Overwrites p[0..len) with zeros in a way the compiler keeps. */
void crypto_wipe(void *p, size_t len);
long crypto_base64_decode(const char *in, size_t len, unsigned char *out,
                          size_t outsz) CO_MUST_CHECK;
/* Constant-time comparison of two equal-length buffers. */
bool crypto_equal(const void *a, const void *b, size_t len);
/* Cryptographically strong random bytes. Returns false on failure. */
bool crypto_random(void *out, size_t len) CO_MUST_CHECK;

#endif
