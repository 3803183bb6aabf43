/* SPDX-License-Identifier: Apache-2.0 */
/* crypto: thin wrappers over OpenSSL's libcrypto. */
#include "util/crypto.h"
#include "util/xalloc.h"

#include <limits.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/core_names.h>
#include <openssl/hmac.h>
#include <openssl/params.h>
#include <openssl/rand.h>

/*
 * SHA-256 with the algorithm fetched once: SHA256() (EVP_Q_digest) looks
 * it up by name on every call, half of what hashing an intent cost.
 */
static pthread_once_t sha256_once = PTHREAD_ONCE_INIT;
static EVP_MD *sha256_md; /* kept for the process */

static void sha256_init_once(void)
{
        sha256_md = EVP_MD_fetch(NULL, "SHA256", NULL);
}

void crypto_sha256(const void *data, size_t len,
                   unsigned char out[CRYPTO_SHA256_LEN])
{
        unsigned int n = 0;

        if (pthread_once(&sha256_once, sha256_init_once) != 0 || !sha256_md ||
            !EVP_Digest(data, len, out, &n, sha256_md, NULL) ||
            n != CRYPTO_SHA256_LEN)
                xalloc_die(); /* OpenSSL broken or out of memory, as HMAC */
}

/*
 * HMAC-SHA256 with keyed contexts kept per thread. HMAC() (EVP_Q_mac)
 * fetches the algorithm and the digest and derives the key's pads on
 * every call: 16 % of the daemon's CPU in a replay (two HMACs per intent:
 * the provider key and the log mask). A thread keeps up to HMAC_SLOTS
 * keyed contexts, found by the key's bytes; EVP_MAC_init() with no key
 * starts the next MAC with the same key. The copies of the keys are wiped
 * when the thread ends.
 */
enum { HMAC_SLOTS = 4 };

struct hmac_slot {
        unsigned char *key;
        size_t len;
        EVP_MAC_CTX *ctx;
};

struct hmac_cache {
        struct hmac_slot s[HMAC_SLOTS];
        unsigned next;
};

static pthread_once_t hmac_once = PTHREAD_ONCE_INIT;
static pthread_key_t hmac_tls;
static EVP_MAC *hmac_alg; /* fetched once, kept for the process */

static void hmac_slot_clear(struct hmac_slot *sl)
{
        EVP_MAC_CTX_free(sl->ctx);
        if (sl->key) {
                crypto_wipe(sl->key, sl->len);
                free(sl->key);
        }
        memset(sl, 0, sizeof(*sl));
}

static void hmac_cache_free(void *p)
{
        struct hmac_cache *c = p;

        for (int i = 0; i < HMAC_SLOTS; i++)
                hmac_slot_clear(&c->s[i]);
        free(c);
}

static void hmac_init_once(void)
{
        if (pthread_key_create(&hmac_tls, hmac_cache_free) != 0)
                xalloc_die();
        hmac_alg = EVP_MAC_fetch(NULL, "HMAC", NULL);
}

/* This thread's context keyed with key, ready for a new MAC. */
static EVP_MAC_CTX *hmac_keyed(const void *key, size_t key_len)
{
        struct hmac_cache *c;
        struct hmac_slot *sl;
        OSSL_PARAM params[2];
        char digest[] = "SHA256";

        if (pthread_once(&hmac_once, hmac_init_once) != 0 || !hmac_alg)
                xalloc_die(); /* OpenSSL without HMAC: cannot go on */
        if (!(c = pthread_getspecific(hmac_tls))) {
                c = xcalloc(1, sizeof(*c));
                if (pthread_setspecific(hmac_tls, c) != 0)
                        xalloc_die();
        }
        for (int i = 0; i < HMAC_SLOTS; i++) {
                sl = &c->s[i];
                if (sl->ctx && sl->len == key_len &&
                    memcmp(sl->key, key, key_len) == 0)
                        return EVP_MAC_init(sl->ctx, NULL, 0, NULL) ? sl->ctx
                                                                    : NULL;
        }
        sl = &c->s[c->next++ % HMAC_SLOTS];
        hmac_slot_clear(sl);
        params[0] =
            OSSL_PARAM_construct_utf8_string(OSSL_MAC_PARAM_DIGEST, digest, 0);
        params[1] = OSSL_PARAM_construct_end();
        sl->ctx   = EVP_MAC_CTX_new(hmac_alg);
        sl->key   = xmalloc(key_len);
        sl->len   = key_len;
        memcpy(sl->key, key, key_len);
        if (!sl->ctx || !EVP_MAC_init(sl->ctx, key, key_len, params)) {
                hmac_slot_clear(sl);
                return NULL;
        }
        return sl->ctx;
}

void crypto_hmac_sha256(const void *key, size_t key_len, const void *data,
                        size_t len, unsigned char out[CRYPTO_SHA256_LEN])
{
        struct crypto_part part = { data, len };

        crypto_hmac_sha256_parts(key, key_len, &part, 1, out);
}

void crypto_hmac_sha256_parts(const void *key, size_t key_len,
                              const struct crypto_part *parts, size_t n,
                              unsigned char out[CRYPTO_SHA256_LEN])
{
        static const unsigned char no_key[1];
        /* an empty key is a valid HMAC key; a pointer is still needed */
        EVP_MAC_CTX *ctx = hmac_keyed(key_len ? key : no_key, key_len);
        size_t outlen    = 0;
        bool ok          = ctx != NULL;

        for (size_t i = 0; ok && i < n; i++)
                ok = EVP_MAC_update(ctx, parts[i].data, parts[i].len);
        ok = ok && EVP_MAC_final(ctx, out, &outlen, CRYPTO_SHA256_LEN) &&
             outlen == CRYPTO_SHA256_LEN;
        if (!ok) /* only when OpenSSL itself is broken or out of memory */
                xalloc_die();
}

void crypto_wipe(void *p, size_t len)
{
        OPENSSL_cleanse(p, len);
}

void crypto_hex(const unsigned char *in, size_t len, char *out)
{
        static const char digits[] = "0123456789abcdef";
        for (size_t i = 0; i < len; i++) {
                out[2 * i]     = digits[in[i] >> 4];
                out[2 * i + 1] = digits[in[i] & 0xf];
        }
        out[2 * len] = '\0';
}

size_t crypto_base64_encode(const unsigned char *in, size_t len, char *out)
{
        return (size_t)EVP_EncodeBlock((unsigned char *)out, in, (int)len);
}

/* Quartets handed to EVP_DecodeBlock() at once (its length is an int). */
#define B64_CHUNK (4 * 65536)

long crypto_base64_decode(const char *in, size_t len, unsigned char *out,
                          size_t outsz)
{
        unsigned char last[3];
        size_t pad = 0, n, body;

        if (len == 0)
                return 0;
        if (len % 4 != 0 || len / 4 * 3 > (size_t)LONG_MAX)
                return -1;
        for (size_t i = 0; i < len; i++) {
                char c  = in[i];
                bool ok = (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') ||
                          (c >= '0' && c <= '9') || c == '+' || c == '/' ||
                          (c == '=' && i >= len - 2);
                if (!ok)
                        return -1;
        }
        if (in[len - 1] == '=')
                pad++;
        if (in[len - 2] == '=')
                pad++;
        if (pad == 1 && in[len - 2] == '=')
                return -1;
        n = len / 4 * 3 - pad;
        if (n > outsz)
                return -1;
        /* Every quartet but the last decodes to 3 bytes straight into out;
         * the last one (which may be padded) goes through `last` so that
         * nothing is written past n bytes. */
        body = len - 4;
        for (size_t i = 0; i < body; i += B64_CHUNK) {
                size_t c = body - i < B64_CHUNK ? body - i : B64_CHUNK;
                if (EVP_DecodeBlock(out + i / 4 * 3,
                                    (const unsigned char *)in + i,
                                    (int)c) != (int)(c / 4 * 3))
                        return -1;
        }
        if (EVP_DecodeBlock(last, (const unsigned char *)in + body, 4) != 3)
                return -1;
        memcpy(out + body / 4 * 3, last, 3 - pad);
        OPENSSL_cleanse(last, sizeof(last));
        return (long)n;
}

bool crypto_equal(const void *a, const void *b, size_t len)
{
        return CRYPTO_memcmp(a, b, len) == 0;
}

bool crypto_random(void *out, size_t len)
{
        return RAND_bytes(out, (int)len) == 1;
}
