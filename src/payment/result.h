/* SPDX-License-Identifier: Apache-2.0 */
/*
 * result: builds the value and the key of a payments.results message
 * (docs/contract.md §3.1). Pure, any thread.
 *
 * The value is compact JSON with the fields always in the contract's
 * order: schema_version, event_id, intent_event_id, tenant_id,
 * idempotency_key, order_id, payment_id, status, amount, currency,
 * provider_charge_id, error, replayed, occurred_at (then resolves_review,
 * only when true). The same struct always
 * gives the same bytes, so a re-published outbox row is byte-identical.
 *
 * Never invents a value: what the caller did not give is null, and only a
 * rejected result may lack order_id, amount or currency. Never copies
 * anything the caller did not pass (the caller redacts; see intent.h).
 */
#ifndef CO_PAYMENT_RESULT_H
#define CO_PAYMENT_RESULT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "payment/status.h"
#include "util/compiler.h"

#define PAYMENT_RESULT_SCHEMA_VERSION 1

/* Every string is borrowed, NUL-terminated UTF-8; NULL means JSON null. */
struct payment_result {
        const char *event_id;        /* UUID of this result; required */
        const char *intent_event_id; /* the answered intent's event_id */
        const char *tenant_id;       /* required */
        const char *idempotency_key; /* required */
        const char *order_id;        /* required but for rejected */
        const char *payment_id;      /* UUID, or NULL: nothing created */
        enum payment_status status;  /* any but processing */
        bool has_amount;             /* false only for rejected */
        int64_t amount;
        const char *currency;           /* required but for rejected */
        const char *provider_charge_id; /* or NULL */
        const char *error_code;         /* NULL: "error": null */
        const char *error_message;      /* required with error_code */
        bool replayed;
        const char *occurred_at; /* RFC 3339; required */
        /*
         * True for a result that finishes a payment first reported in
         * review (a new, non-replayed result): emitted as
         * "resolves_review":true after occurred_at, and only when true, so
         * every other result keeps its bytes. Only with succeeded or
         * failed, never replayed.
         */
        bool resolves_review;
};

/*
 * Builds the result JSON into a new buffer *out (NUL-terminated; *out_len
 * excludes the NUL), owned by the caller, freed with free().
 * Checks the contract first: status a result status; error present for
 * failed, conflict (code idempotency_key_reused) and rejected, absent for
 * succeeded; event_id, payment_id UUIDs; occurred_at RFC 3339; every string
 * valid UTF-8. Returns 0, or -1 with a reason in errstr (which never
 * repeats a field's value) and *out NULL.
 */
int payment_result_build(const struct payment_result *r, char **out,
                         size_t *out_len, char *errstr,
                         size_t errstr_size) CO_MUST_CHECK;

/*
 * The message key "<tenant_id>/<idempotency_key>" into a new buffer *out,
 * owned by the caller (free()). Returns 0, or -1 on NULL input.
 */
int payment_result_key(const char *tenant_id, const char *idempotency_key,
                       char **out, size_t *out_len) CO_MUST_CHECK;

/*
 * The compact stored form of a payment's own result (outbox.detail,
 * migration 0028; docs/data-model.md, "Compact results"). The outbox
 * row already holds event_id, intent_event_id, tenant_id,
 * idempotency_key, payment_id, status, replayed and resolves_review in
 * columns of its own; the detail is a JSON object of the other members
 * (order_id, amount, currency, provider_charge_id, error, occurred_at),
 * plus intent_event_id when the value's differs from the row's (the row
 * holds an event id that is not a UUID as "sha256:<hex>", the value the
 * id as sent). payment_result_compose() gives back, from the row and the
 * detail, exactly the bytes payment_result_build() gives for the struct.
 */
struct payment_result_row {
        const char *event_id;        /* the row's columns, as text */
        const char *intent_event_id; /* as the row holds it */
        const char *tenant_id;
        const char *idempotency_key;
        const char *payment_id; /* NULL: none */
        const char *status;
        bool replayed;
        bool resolves_review;
};

/* The largest detail payment_result_compose() reads. */
#define PAYMENT_RESULT_DETAIL_MAX 65536

/*
 * The detail of r for a row whose intent_event_id column will hold
 * row_intent_event_id, into a new buffer *out (free()). Checks the
 * contract as payment_result_build() does. Returns 0, or -1 with a
 * reason in errstr and *out NULL.
 */
int payment_result_detail(const struct payment_result *r,
                          const char *row_intent_event_id, char **out,
                          size_t *out_len, char *errstr,
                          size_t errstr_size) CO_MUST_CHECK;

/*
 * The result value of an outbox row stored compact: row's columns and
 * its detail (detail_len bytes, not NUL-terminated) into a new buffer
 * *out (free()). The detail is read as untrusted input: an object of
 * at most PAYMENT_RESULT_DETAIL_MAX bytes holding exactly the members
 * above, each of its type, no member twice; then the contract is
 * checked. Returns 0, or -1 with a reason in errstr (never a value) and
 * *out NULL.
 */
int payment_result_compose(const struct payment_result_row *row,
                           const char *detail, size_t detail_len, char **out,
                           size_t *out_len, char *errstr,
                           size_t errstr_size) CO_MUST_CHECK;

#endif
