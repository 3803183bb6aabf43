/* SPDX-License-Identifier: Apache-2.0 */
/* webhook: the gateway's signed webhooks, verified (see webhook.h). */
#include "gateway/webhook.h"
#include "util/crypto.h"

#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#define WHSEC "whsec_"

/* The next space-separated token of *p (its length in *n), *p moved past
 * it; NULL at the end. */
static const char *next_token(const char **p, size_t *n)
{
        const char *t = *p, *e;

        while (*t == ' ')
                t++;
        if (!*t)
                return NULL;
        e  = strchr(t, ' ');
        *n = e ? (size_t)(e - t) : strlen(t);
        *p = t + *n;
        return t;
}

int gateway_webhook_secrets_parse(const char *spec,
                                  struct gateway_webhook_secrets *out,
                                  char *errstr, size_t errstr_size)
{
        const char *p = spec, *t;
        size_t n;

        memset(out, 0, sizeof(*out));
        while ((t = next_token(&p, &n))) {
                long k;
                unsigned char key[GATEWAY_WEBHOOK_KEY_MAX + 3];

                if (out->n == GATEWAY_WEBHOOK_SECRETS_MAX) {
                        snprintf(errstr, errstr_size,
                                 "more than %d webhook secrets",
                                 GATEWAY_WEBHOOK_SECRETS_MAX);
                        goto fail;
                }
                if (n <= sizeof(WHSEC) - 1 ||
                    memcmp(t, WHSEC, sizeof(WHSEC) - 1) != 0) {
                        snprintf(errstr, errstr_size,
                                 "webhook secret %zu is not whsec_<base64>",
                                 out->n + 1);
                        goto fail;
                }
                k = crypto_base64_decode(t + sizeof(WHSEC) - 1,
                                         n - (sizeof(WHSEC) - 1), key,
                                         sizeof(key));
                if (k <= 0 || k > GATEWAY_WEBHOOK_KEY_MAX) {
                        snprintf(errstr, errstr_size,
                                 "webhook secret %zu: not base64 of 1 to %d "
                                 "bytes",
                                 out->n + 1, GATEWAY_WEBHOOK_KEY_MAX);
                        crypto_wipe(key, sizeof(key));
                        goto fail;
                }
                memcpy(out->s[out->n].key, key, (size_t)k);
                out->s[out->n].len = (size_t)k;
                out->n++;
                crypto_wipe(key, sizeof(key));
        }
        if (out->n == 0) {
                snprintf(errstr, errstr_size, "no webhook secret");
                return -1;
        }
        return 0;
fail:
        gateway_webhook_secrets_clear(out);
        return -1;
}

void gateway_webhook_secrets_clear(struct gateway_webhook_secrets *s)
{
        crypto_wipe(s, sizeof(*s));
        s->n = 0;
}

const char *gateway_webhook_verdict_name(enum gateway_webhook_verdict v)
{
        switch (v) {
        case GATEWAY_WEBHOOK_OK:
                return "ok";
        case GATEWAY_WEBHOOK_NO_HEADERS:
                return "no_headers";
        case GATEWAY_WEBHOOK_BAD_ID:
                return "bad_id";
        case GATEWAY_WEBHOOK_BAD_TIMESTAMP:
                return "bad_timestamp";
        case GATEWAY_WEBHOOK_STALE:
                return "stale";
        case GATEWAY_WEBHOOK_FUTURE:
                return "future";
        case GATEWAY_WEBHOOK_TOO_LARGE:
                return "too_large";
        case GATEWAY_WEBHOOK_BAD_SIGNATURE:
                return "bad_signature";
        }
        return "unknown";
}

bool gateway_webhook_id_valid(const char *id)
{
        size_t n = 0;

        for (; id[n]; n++) {
                char c = id[n];
                if (n == GATEWAY_WEBHOOK_ID_MAX ||
                    !((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
                      (c >= '0' && c <= '9') || c == '_' || c == '-' ||
                      c == '.' || c == ':'))
                        return false;
        }
        return n > 0;
}

/* Decimal seconds, at most 12 digits (no sign, no overflow). */
static bool timestamp_parse(const char *s, int64_t *out)
{
        int64_t v = 0;
        size_t n  = 0;

        for (; s[n]; n++) {
                if (n == 12 || s[n] < '0' || s[n] > '9')
                        return false;
                v = v * 10 + (s[n] - '0');
        }
        if (n == 0)
                return false;
        *out = v;
        return true;
}

/* The MAC of "<id>.<timestamp>.<body>" under one key. */
static void mac_of(const unsigned char *key, size_t key_len, const char *id,
                   const char *ts, const void *body, size_t len,
                   unsigned char mac[CRYPTO_SHA256_LEN])
{
        const struct crypto_part parts[] = {
                { id, strlen(id) }, { ".", 1 },    { ts, strlen(ts) },
                { ".", 1 },         { body, len },
        };

        crypto_hmac_sha256_parts(key, key_len, parts,
                                 sizeof(parts) / sizeof(parts[0]), mac);
}

/* One "v1,<base64>" entry [p, p+n) against the MACs; constant time in
 * the entry's content. */
static bool sig_matches(const char *p, size_t n,
                        const unsigned char (*macs)[CRYPTO_SHA256_LEN],
                        size_t nmacs)
{
        unsigned char got[CRYPTO_SHA256_LEN + 3];
        bool ok = false;
        long k;

        if (n < 4 || memcmp(p, "v1,", 3) != 0 || n - 3 > 64)
                return false;
        k = crypto_base64_decode(p + 3, n - 3, got, sizeof(got));
        if (k != CRYPTO_SHA256_LEN)
                return false;
        for (size_t i = 0; i < nmacs; i++)
                ok |= crypto_equal(got, macs[i], CRYPTO_SHA256_LEN);
        return ok;
}

enum gateway_webhook_verdict
gateway_webhook_verify(const struct gateway_webhook_secrets *secrets,
                       const char *id, const char *timestamp,
                       const char *signature, const void *body, size_t len,
                       int64_t now_s, int64_t tolerance_s, int64_t *ts_out)
{
        unsigned char macs[GATEWAY_WEBHOOK_SECRETS_MAX][CRYPTO_SHA256_LEN];
        const char *p, *t;
        size_t n;
        int64_t ts;
        bool ok  = false;
        int seen = 0;

        if (!id || !*id || !timestamp || !*timestamp || !signature ||
            !*signature)
                return GATEWAY_WEBHOOK_NO_HEADERS;
        if (len > GATEWAY_WEBHOOK_BODY_MAX)
                return GATEWAY_WEBHOOK_TOO_LARGE;
        if (!gateway_webhook_id_valid(id))
                return GATEWAY_WEBHOOK_BAD_ID;
        if (!timestamp_parse(timestamp, &ts))
                return GATEWAY_WEBHOOK_BAD_TIMESTAMP;
        if (ts_out)
                *ts_out = ts;
        if (ts < now_s - tolerance_s)
                return GATEWAY_WEBHOOK_STALE;
        if (ts > now_s + tolerance_s)
                return GATEWAY_WEBHOOK_FUTURE;
        for (size_t i = 0; i < secrets->n; i++)
                mac_of(secrets->s[i].key, secrets->s[i].len, id, timestamp,
                       body, len, macs[i]);
        p = signature;
        while (seen < GATEWAY_WEBHOOK_SIGS_MAX && (t = next_token(&p, &n))) {
                /* every entry is looked at: no early exit on a match */
                ok |= sig_matches(
                    t, n, (const unsigned char(*)[CRYPTO_SHA256_LEN])macs,
                    secrets->n);
                seen++;
        }
        crypto_wipe(macs, sizeof(macs));
        return ok ? GATEWAY_WEBHOOK_OK : GATEWAY_WEBHOOK_BAD_SIGNATURE;
}
