/* SPDX-License-Identifier: Apache-2.0 */
/*
 * intent: decodes and validates a payments.intents message value
 * (docs/contract.md §2; every decision is in docs/intent-validation.md).
 * Pure: no I/O, no logging, any thread (one struct intent per thread).
 *
 * Three verdicts:
 *   INTENT_OK        every rule holds; all fields and the request hash set.
 *   INTENT_REJECTED  answerable but not acceptable: `reason` is the
 *                    error.code of the rejected result, `message` a human
 *                    text that never contains a value of the intent.
 *   INTENT_DLQ       cannot be answered (not JSON, not an object, no
 *                    usable event_id / tenant_id / idempotency_key):
 *                    `reason` is the dlq-reason header.
 *
 * Never copies a raw card number or e-mail address into a rejected intent:
 * event_id, tenant_id, idempotency_key and order_id of a rejected intent
 * are passed through guard_redact(), and currency / amount are kept only
 * when valid. So a result built from a rejected intent, and its message
 * key, can be stored and logged.
 */
#ifndef CO_INTENT_INTENT_H
#define CO_INTENT_INTENT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "util/guard.h"
#include "intent/hash.h"

#define INTENT_SCHEMA_VERSION 1
#define INTENT_AMOUNT_MAX     INT64_C(9007199254740991) /* 2^53 - 1 */
#define INTENT_REASON_SIZE    40
#define INTENT_MESSAGE_SIZE   128
#define INTENT_EVENT_KEY_SIZE 72 /* "sha256:", 64 hex digits, NUL */

enum intent_verdict {
        INTENT_OK = 0,
        INTENT_REJECTED,
        INTENT_DLQ,
};

/*
 * A decoded intent. Every char * is owned by the struct (NUL-terminated,
 * valid UTF-8, malloc'd) and freed by intent_reset(); NULL when absent or
 * not kept. What is set depends on the verdict:
 *   OK:       all fields; description NULL when absent (metadata is
 *             checked, not kept: nothing downstream reads it);
 *             request_hash and request_hash_hex.
 *   REJECTED: event_id, tenant_id, idempotency_key (redacted, then cut
 *             to 36, 64 and 255 code points; never NULL); order_id
 *             (redacted, cut to 64) if it was a string; amount
 *             (has_amount) and currency only if they were valid;
 *             event_key; request_hash when has_hash. Nothing else.
 *   DLQ:      nothing but reason.
 */
struct intent {
        enum intent_verdict verdict;
        char reason[INTENT_REASON_SIZE];   /* error.code or dlq-reason */
        char message[INTENT_MESSAGE_SIZE]; /* REJECTED: for error.message */

        char *event_id; /* REJECTED: redacted, at most 36 characters */
        /* The inbox key: event_id when it is a UUID, else "sha256:<hex>"
         * of its bytes. Set for OK and REJECTED. */
        char event_key[INTENT_EVENT_KEY_SIZE];
        char *tenant_id;
        char *idempotency_key;
        char *order_id;
        char *customer_id;
        bool has_amount;
        int64_t amount;
        char *currency;
        char *payment_method;
        char *description; /* NULL when absent (or null) */
        char *occurred_at;

        /* OK: always true. REJECTED: true when every hashed field is
         * valid (only a non-hashed field broke a rule, and not
         * schema_version), so a copy of a finished intent can still be
         * answered with its stored outcome. */
        bool has_hash;
        unsigned char request_hash[INTENT_HASH_LEN];
        char request_hash_hex[INTENT_HASH_HEX_SIZE];
};

/* An empty intent (no allocation). Call before the first intent_parse(). */
void intent_init(struct intent *in);
/* Frees what the intent owns and empties it; it may be reused. */
void intent_reset(struct intent *in);

/*
 * Decodes and validates data[0..len) (the raw message value; NULL or empty
 * is a DLQ). Resets *in first and fills it as described above, a verdict
 * always set (out of memory ends the process: util/xalloc.h).
 */
void intent_parse(const void *data, size_t len, struct intent *in);

/*
 * The inbox key of an event id of len bytes: itself when it is a UUID
 * (uuid_valid), else "sha256:" and the hex SHA-256 of its bytes.
 */
void intent_event_key(const char *s, size_t len,
                      char out[INTENT_EVENT_KEY_SIZE]);

/* "ok", "rejected" or "dlq". */
const char *intent_verdict_name(enum intent_verdict v);

/* The hashed fields of an OK intent, borrowed from it. */
struct intent_hash_fields intent_hash_fields_of(const struct intent *in);

#endif
