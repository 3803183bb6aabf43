/* SPDX-License-Identifier: Apache-2.0 */
/*
 * identity: derived payment and result ids (see identity.h). Must never
 * change what it produces for given inputs.
 */
#include "payment/identity.h"

#include "util/xalloc.h"

#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

static const char PAYMENT_LABEL[] = "chargeonce/payment-id/v1";
static const char RESULT_LABEL[]  = "chargeonce/result/v1";

/* The first 16 bytes of d as a version 8, variant 10 UUID text. */
static void uuid8_text(const unsigned char d[CRYPTO_SHA256_LEN],
                       char out[UUID_STR_LEN])
{
        unsigned char b[16];
        char hex[33];

        memcpy(b, d, sizeof(b));
        b[6] = (unsigned char)((b[6] & 0x0f) | 0x80);
        b[8] = (unsigned char)((b[8] & 0x3f) | 0x80);
        crypto_hex(b, sizeof(b), hex);
        memcpy(out, hex, 8);
        out[8] = '-';
        memcpy(out + 9, hex + 8, 4);
        out[13] = '-';
        memcpy(out + 14, hex + 12, 4);
        out[18] = '-';
        memcpy(out + 19, hex + 16, 4);
        out[23] = '-';
        memcpy(out + 24, hex + 20, 12);
        out[36] = '\0';
}

/* NUL-separated parts: a string and the NUL after it (its terminator). */
#define PART(s)                                                                \
        {                                                                      \
                (s), strlen(s) + 1                                             \
        }

void payment_id_derive(const unsigned char *secret, size_t secret_len,
                       const char *tenant_id, const char *idem_key,
                       const unsigned char request_hash[CRYPTO_SHA256_LEN],
                       char out[UUID_STR_LEN])
{
        const struct crypto_part parts[] = {
                PART(PAYMENT_LABEL),
                PART(tenant_id),
                PART(idem_key),
                { request_hash, CRYPTO_SHA256_LEN },
        };
        unsigned char mac[CRYPTO_SHA256_LEN];

        crypto_hmac_sha256_parts(secret, secret_len, parts,
                                 sizeof(parts) / sizeof(parts[0]), mac);
        uuid8_text(mac, out);
}

/* SHA-256 of parts[0..n) concatenated, as a UUID. The parts are short
 * (ids, names: a few hundred bytes); longer ones are hashed from the
 * heap. */
static void digest_id(const struct crypto_part *parts, size_t n,
                      char out[UUID_STR_LEN])
{
        unsigned char d[CRYPTO_SHA256_LEN];
        char local[512], *msg = local;
        size_t len = 0, at = 0;

        for (size_t i = 0; i < n; i++)
                len += parts[i].len;
        if (len > sizeof(local))
                msg = xmalloc(len);
        for (size_t i = 0; i < n; i++) {
                memcpy(msg + at, parts[i].data, parts[i].len);
                at += parts[i].len;
        }
        crypto_sha256(msg, len, d);
        if (msg != local)
                free(msg);
        uuid8_text(d, out);
}

void payment_result_event_id(const char *payment_id, const char *status,
                             char out[UUID_STR_LEN])
{
        /* the last part without its NUL: the input ends with the status */
        const struct crypto_part parts[] = {
                PART(RESULT_LABEL),
                PART("payment"),
                PART(payment_id),
                { status, strlen(status) },
        };

        digest_id(parts, sizeof(parts) / sizeof(parts[0]), out);
}

void payment_answer_event_id(const char *tenant_id, const char *event_key,
                             const char *status, bool replayed,
                             char out[UUID_STR_LEN])
{
        const struct crypto_part parts[] = {
                PART(RESULT_LABEL), PART("answer"), PART(tenant_id),
                PART(event_key),    PART(status),   { replayed ? "1" : "0", 1 },
        };

        digest_id(parts, sizeof(parts) / sizeof(parts[0]), out);
}
