/* SPDX-License-Identifier: Apache-2.0 */
/*
 * hash: the canonical request hash of a payment intent (docs/contract.md
 * §2.3; the byte-exact form is in docs/request-hash.md).
 *
 * SHA-256 over a JSON object of exactly tenant_id, idempotency_key,
 * order_id, customer_id, amount, currency, payment_method: keys sorted by
 * code point, no white space, strings escaped as RFC 8785 (JCS) does,
 * amount a plain decimal integer, UTF-8. Pure, any thread.
 *
 * Never hashes event_id, occurred_at, description or metadata, and never
 * depends on jansson's output format (the serializer is written here).
 */
#ifndef CO_INTENT_HASH_H
#define CO_INTENT_HASH_H

#include "util/compiler.h"

#include <stddef.h>
#include <stdint.h>

#define INTENT_HASH_LEN      32
#define INTENT_HASH_HEX_SIZE 65 /* 64 hex digits and the NUL */

/* The hashed fields. Strings are borrowed, NUL-terminated, valid UTF-8. */
struct intent_hash_fields {
        const char *tenant_id;
        const char *idempotency_key;
        const char *order_id;
        const char *customer_id;
        int64_t amount;
        const char *currency;
        const char *payment_method;
};

/*
 * Writes the canonical serialization into a new buffer *out (NUL-terminated
 * for convenience; *out_len excludes the NUL). The caller owns *out and
 * frees it with free(). Returns 0, or -1 on a NULL field or a form over
 * 1 MiB, which only unvalidated fields can reach (*out is then NULL).
 */
int intent_hash_canonical(const struct intent_hash_fields *f, char **out,
                          size_t *out_len) CO_MUST_CHECK;

/*
 * Computes the request hash: the 32 raw bytes into out and, when hex is not
 * NULL, its lower-case hex form. Returns 0, or -1 as above.
 */
int intent_hash_compute(const struct intent_hash_fields *f,
                        unsigned char out[INTENT_HASH_LEN],
                        char hex[INTENT_HASH_HEX_SIZE]) CO_MUST_CHECK;

#endif
