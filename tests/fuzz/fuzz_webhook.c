/* SPDX-License-Identifier: Apache-2.0 */
/*
 * fuzz_webhook: gateway_webhook_verify() on any headers and body
 * (src/gateway/webhook.h). The input is split at the first three '\n'
 * into webhook-id, webhook-timestamp, webhook-signature and the body.
 *
 * Invariants, for every input:
 *   - the verdict is one of the enum's;
 *   - signing the same id, timestamp and body here (HMAC-SHA256 over one
 *     joined copy, not the verifier's parts) and verifying that signature
 *     gives the same verdict whenever the input's own signature was not
 *     the problem, and OK when it was (no refusal of a genuine delivery);
 *   - a signature accepted for a body is refused for that body with one
 *     more byte (acceptance depends on every byte).
 */
#include <stdbool.h>
#include <string.h>

#include "fuzz.h"
#include "gateway/webhook.h"
#include "util/crypto.h"

/* whsec_ of the bytes "fuzz-webhook-secret" */
#define SECRET "whsec_ZnV6ei13ZWJob29rLXNlY3JldA=="
#define NOW    1800000000

static char *field(const uint8_t **p, const uint8_t *end)
{
        const uint8_t *nl = memchr(*p, '\n', (size_t)(end - *p));
        size_t n          = nl ? (size_t)(nl - *p) : (size_t)(end - *p);
        char *s           = malloc(n + 1);

        FUZZ_CHECK(s != NULL);
        memcpy(s, *p, n);
        s[n] = '\0';
        *p += n + (nl ? 1 : 0);
        return s;
}

/* "v1,<base64 MAC>" of id.ts.body, the MAC over one joined copy. */
static void sign(const char *id, const char *ts, const uint8_t *body,
                 size_t len, char out[64])
{
        static const char key[] = "fuzz-webhook-secret";
        size_t n                = strlen(id) + strlen(ts) + 2 + len;
        char *msg               = malloc(n + 1);
        unsigned char mac[CRYPTO_SHA256_LEN];

        FUZZ_CHECK(msg != NULL);
        snprintf(msg, n + 1, "%s.%s.", id, ts);
        memcpy(msg + strlen(id) + strlen(ts) + 2, body, len);
        crypto_hmac_sha256(key, sizeof(key) - 1, msg, n, mac);
        memcpy(out, "v1,", 3);
        crypto_base64_encode(mac, sizeof(mac), out + 3);
        free(msg);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
        const uint8_t *p = data, *end = data + size;
        struct gateway_webhook_secrets s;
        char err[128], good[64];
        char *id, *ts, *sig;
        enum gateway_webhook_verdict v, w;

        FUZZ_CHECK(
            gateway_webhook_secrets_parse(SECRET, &s, err, sizeof(err)) == 0);
        id  = field(&p, end);
        ts  = field(&p, end);
        sig = field(&p, end);
        v   = gateway_webhook_verify(&s, id, ts, sig, p, (size_t)(end - p), NOW,
                                     300, NULL);
        FUZZ_CHECK(v >= GATEWAY_WEBHOOK_OK &&
                   v <= GATEWAY_WEBHOOK_BAD_SIGNATURE);
        sign(id, ts, p, (size_t)(end - p), good);
        if (v == GATEWAY_WEBHOOK_OK) {
                size_t n    = (size_t)(end - p);
                uint8_t *b2 = malloc(n + 1);

                FUZZ_CHECK(b2 != NULL);
                memcpy(b2, p, n);
                b2[n] = 'x';
                w = gateway_webhook_verify(&s, id, ts, sig, b2, n + 1, NOW, 300,
                                           NULL);
                FUZZ_CHECK(w == GATEWAY_WEBHOOK_BAD_SIGNATURE ||
                           (n + 1 > GATEWAY_WEBHOOK_BODY_MAX &&
                            w == GATEWAY_WEBHOOK_TOO_LARGE));
                free(b2);
        }
        /* the genuine signature of the same delivery */
        w = gateway_webhook_verify(&s, id, ts, good, p, (size_t)(end - p), NOW,
                                   300, NULL);
        if (v != GATEWAY_WEBHOOK_BAD_SIGNATURE && *sig)
                FUZZ_CHECK(w == v);
        if (v == GATEWAY_WEBHOOK_BAD_SIGNATURE)
                FUZZ_CHECK(w == GATEWAY_WEBHOOK_OK);
        gateway_webhook_secrets_clear(&s);
        free(id);
        free(ts);
        free(sig);
        return 0;
}
