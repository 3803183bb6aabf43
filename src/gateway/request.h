/* SPDX-License-Identifier: Apache-2.0 */
/*
 * request: the exact bytes chargeonce sends to the gateway (docs/contract.md
 * §4.2, §4.3). Pure.
 *
 * Must never make a body depend on anything but the request: the same
 * payment always goes out with the same parameters, byte for byte, so a
 * retry under the same Idempotency-Key is never a "parameters mismatch".
 * Must never put payment_method or a key into a URL or a log.
 */
#ifndef CO_GATEWAY_REQUEST_H
#define CO_GATEWAY_REQUEST_H

#include "util/compiler.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* One charge. The client copies what it needs; nothing here is kept. */
struct gateway_charge_req {
        const char *payment_id;   /* sent as "reference" */
        const char *provider_key; /* Idempotency-Key, derived elsewhere */
        const char *tenant_id;
        const char *order_id;
        const char *currency;
        const char *payment_method; /* opaque PSP token; never logged */
        int64_t amount;             /* minor units, 1 .. 2^53-1 */
        /* The payment may already have been posted (by an earlier call or
         * process). Only matters with a gateway that ignores keys: the
         * first step is then a query, not a POST. */
        bool resume;
        /* The lease the caller holds on the payment: the monotonic time
         * (time_mono_ms) until which it is valid, moved forward by the
         * owner on each renewal and set to GATEWAY_LEASE_LOST
         * (gateway/presend.h) when it is lost. Read right before every
         * POST of the call (gateway.lease_margin must be left); must stay
         * valid until the callback has run. NULL: no lease check (the
         * call's deadline is still checked). */
        _Atomic int64_t *lease_until_ms;
};

/* Largest POST body; the contract (docs/contract.md §2.1) bounds every
 * field well below this. */
#define GW_BODY_MAX 4096

/*
 * Writes the charge body as compact JSON into a new string, fields in this
 * order: amount, currency, payment_method, reference, metadata{tenant_id,
 * order_id}. Returns NULL with a reason (which never repeats a value) if a
 * field is missing, not UTF-8, or the amount is out of range. The caller
 * owns the result and frees it with free().
 */
char *gateway_charge_body(const struct gateway_charge_req *req, char *errstr,
                          size_t errstr_size) CO_MUST_CHECK;

/*
 * base_url (a trailing '/' is dropped) + "/v1/charges", and the query URL
 * base_url + "/v1/charges?reference=<percent-encoded reference>". Return
 * new strings the caller frees with free().
 */
char *gateway_charges_url(const char *base_url) CO_MUST_CHECK;
char *gateway_query_url(const char *base_url,
                        const char *reference) CO_MUST_CHECK;

/*
 * True if key can be sent as an Idempotency-Key header: 1..255 printable
 * ASCII characters (no CR/LF, so no header injection).
 */
bool gateway_key_valid(const char *key);

#endif
