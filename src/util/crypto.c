/* crypto: thin wrappers over OpenSSL's libcrypto. */
#include "util/crypto.h"
#include "util/xalloc.h"

#include <limits.h>
#include <stdbool.h>
#include <string.h>

#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/core_names.h>
#include <openssl/hmac.h>
#include <openssl/params.h>
#include <openssl/rand.h>
#include <openssl/sha.h>

void crypto_sha256(const void *data, size_t len,
                   unsigned char out[CRYPTO_SHA256_LEN])
{
        SHA256(data, len, out);
}

void crypto_hmac_sha256(const void *key, size_t key_len, const void *data,
                        size_t len, unsigned char out[CRYPTO_SHA256_LEN])
{
        unsigned int outlen = CRYPTO_SHA256_LEN;
        HMAC(EVP_sha256(), key, (int)key_len, data, len, out, &outlen);
}

void crypto_hmac_sha256_parts(const void *key, size_t key_len,
                              const struct crypto_part *parts, size_t n,
                              unsigned char out[CRYPTO_SHA256_LEN])
{
        EVP_MAC *mac     = EVP_MAC_fetch(NULL, "HMAC", NULL);
        EVP_MAC_CTX *ctx = mac ? EVP_MAC_CTX_new(mac) : NULL;
        OSSL_PARAM params[2];
        char digest[] = "SHA256";
        size_t outlen = 0;
        bool ok;

        params[0] =
            OSSL_PARAM_construct_utf8_string(OSSL_MAC_PARAM_DIGEST, digest, 0);
        params[1] = OSSL_PARAM_construct_end();
        ok        = ctx && EVP_MAC_init(ctx, key, key_len, params);
        for (size_t i = 0; ok && i < n; i++)
                ok = EVP_MAC_update(ctx, parts[i].data, parts[i].len);
        ok = ok && EVP_MAC_final(ctx, out, &outlen, CRYPTO_SHA256_LEN) &&
             outlen == CRYPTO_SHA256_LEN;
        EVP_MAC_CTX_free(ctx);
        EVP_MAC_free(mac);
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
