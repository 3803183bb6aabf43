/* SPDX-License-Identifier: Apache-2.0 */
/*
 * webhook: verification of the gateway's signed webhooks (docs/contract.md
 * §5.1, the Standard Webhooks scheme). Pure: no I/O, no clock (now is passed
 * in), no allocation; any thread.
 *
 *   webhook-id         1..255 bytes of [A-Za-z0-9_.:-]
 *   webhook-timestamp  Unix seconds, decimal, within tolerance of now,
 *                      in the past or the future
 *   webhook-signature  space-separated "v1,<base64 HMAC-SHA256>" entries
 *                      over the exact bytes "<id>.<timestamp>.<body>";
 *                      one valid entry with one configured secret is
 *                      enough (rotation)
 *
 * Must never: accept a body that is not the exact signed bytes, compare a
 * signature in time that depends on its content, or say which part of a
 * bad signature was wrong beyond the verdict.
 */
#ifndef CO_GATEWAY_WEBHOOK_H
#define CO_GATEWAY_WEBHOOK_H

#include "util/compiler.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* A larger body is refused unread (HTTP 413). */
#define GATEWAY_WEBHOOK_BODY_MAX 65536
/* Secrets held at once (current and rotating ones). */
#define GATEWAY_WEBHOOK_SECRETS_MAX 8
/* A secret's key: whsec_<base64 of 1..64 bytes>. */
#define GATEWAY_WEBHOOK_KEY_MAX 64
#define GATEWAY_WEBHOOK_ID_MAX  255
/* Entries of webhook-signature looked at; more are ignored. */
#define GATEWAY_WEBHOOK_SIGS_MAX 16

struct gateway_webhook_secrets {
        size_t n;
        struct {
                unsigned char key[GATEWAY_WEBHOOK_KEY_MAX];
                size_t len;
        } s[GATEWAY_WEBHOOK_SECRETS_MAX];
};

/*
 * Parses spec, one or more "whsec_<base64>" separated by spaces, into
 * out. 0, or -1 with the reason in errstr (never the secret itself).
 */
int gateway_webhook_secrets_parse(const char *spec,
                                  struct gateway_webhook_secrets *out,
                                  char *errstr,
                                  size_t errstr_size) CO_MUST_CHECK;

/* Wipes the keys. */
void gateway_webhook_secrets_clear(struct gateway_webhook_secrets *s);

enum gateway_webhook_verdict {
        GATEWAY_WEBHOOK_OK = 0,
        GATEWAY_WEBHOOK_NO_HEADERS,    /* a header missing or empty */
        GATEWAY_WEBHOOK_BAD_ID,        /* webhook-id too long or odd bytes */
        GATEWAY_WEBHOOK_BAD_TIMESTAMP, /* not a decimal number of seconds */
        GATEWAY_WEBHOOK_STALE,         /* older than the tolerance */
        GATEWAY_WEBHOOK_FUTURE,        /* further ahead than the tolerance */
        GATEWAY_WEBHOOK_TOO_LARGE,     /* body over GATEWAY_WEBHOOK_BODY_MAX */
        GATEWAY_WEBHOOK_BAD_SIGNATURE, /* no valid v1 entry, any secret */
};

/* True if id is a webhook-id verify accepts (not BAD_ID): 1..255 bytes
 * of [A-Za-z0-9_.:-]. */
bool gateway_webhook_id_valid(const char *id);

/* "ok", "no_headers", "bad_id", ... (for metrics and logs). */
const char *gateway_webhook_verdict_name(enum gateway_webhook_verdict v);

/*
 * Verifies one delivery. id, timestamp and signature are the header
 * values (NULL when absent); body[0..len) the raw request body. now_s is
 * the current Unix time, tolerance_s the allowed distance either way.
 * *ts_out (may be NULL) gets the parsed timestamp when it is one.
 */
enum gateway_webhook_verdict
gateway_webhook_verify(const struct gateway_webhook_secrets *secrets,
                       const char *id, const char *timestamp,
                       const char *signature, const void *body, size_t len,
                       int64_t now_s, int64_t tolerance_s, int64_t *ts_out);

#endif
