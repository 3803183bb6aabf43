/* SPDX-License-Identifier: Apache-2.0 */
/*
 * store/webhook: applies one verified, decoded gateway webhook
 * (docs/contract.md §5.3) in ONE transaction: records its webhook-id
 * (dedup), and, by the rules of payment/webhook_rule.h, finishes the
 * payment exactly as a gateway answer would (fenced: the lease epoch is
 * raised so a worker still holding the old epoch is refused; status,
 * stored outcome of the key, ledger posting for a success, outbox result,
 * evidence row naming the webhook id), or records a refund as one
 * reversing ledger posting, or records a contradiction, or nothing.
 *
 * Must never: move a payment backwards, write a second charge or refund
 * posting, apply a contradiction, or commit the webhook-id without the
 * effect it decided (and the reverse).
 */
#ifndef CO_STORE_WEBHOOK_H
#define CO_STORE_WEBHOOK_H

#include "payment/webhook_rule.h" /* struct gateway_event */
#include "store/store.h"

#include <stdint.h>

enum store_webhook_result {
        /* The payment changed: finished, or refund posted. */
        STORE_WEBHOOK_APPLIED = 1,
        /* This webhook-id was recorded before: nothing changed. */
        STORE_WEBHOOK_DUPLICATE,
        /* Nothing to do (already final with this outcome, refund already
         * posted); recorded so a repeat is a DUPLICATE. */
        STORE_WEBHOOK_IGNORED,
        /* Contradicts what we stored (other final status, other amount,
         * currency or charge id, refund of a failed payment): recorded in
         * webhook_events (result 'contradiction', shown by the view
         * webhook_contradictions and `chargeonce audit`), nothing applied. */
        STORE_WEBHOOK_CONTRADICTION,
        /* No payment has this reference (or it is not a UUID): recorded. */
        STORE_WEBHOOK_UNKNOWN_REFERENCE,
};

/* "applied", "duplicate", ... (the label values of chargeonce_webhooks_total)
 */
const char *store_webhook_result_name(enum store_webhook_result r);

struct store_webhook_in {
        const char *webhook_id;    /* verified header value, <= 255 bytes */
        int64_t webhook_timestamp; /* Unix seconds, from the header */
        const struct gateway_event *event;
        const char *actor; /* who applies it, e.g. the worker id; evidence */
};

struct store_webhook_out {
        enum store_webhook_result result;
        char payment_id[UUID_STR_LEN]; /* "" when unknown */
        /* APPLIED: the status the payment was finished with ("succeeded",
         * "failed"), or "refunded" for a refund posting; else "". */
        char applied[STORE_STATUS_LEN];
        /* The status before ("processing", "review", ...; "" unknown). */
        char previous[STORE_STATUS_LEN];
        /* CONTRADICTION / IGNORED: why, never a key or a method. */
        char detail[160];
};

/*
 * Applies in one transaction (retried on deadlock / serialization
 * failure). Returns STORE_OK (see out->result), STORE_ERR (nothing
 * written), STORE_ERR_CONN (unknown whether it committed; repeating it is
 * safe: a committed one answers DUPLICATE) or STORE_ERR_DATA (refused for
 * its data; never retry as it is).
 */
int store_webhook_apply(struct store *st, const struct store_webhook_in *in,
                        struct store_webhook_out *out, char *errstr,
                        size_t errstr_size) CO_MUST_CHECK;

/* One row of the view webhook_contradictions (strings owned). */
struct store_webhook_contradiction {
        char *webhook_id;
        char *received_at; /* RFC 3339 as the database prints it */
        char *event_type;
        char *reference;
        char payment_id[UUID_STR_LEN]; /* "" when unknown */
        char *provider_charge_id;
        int64_t amount;
        char currency[4];
        char *previous_status; /* or NULL */
        char *detail;          /* the rule's reason; never a key */
};

void store_webhook_contradictions_free(struct store_webhook_contradiction *c,
                                       size_t n);

/*
 * Reads the view webhook_contradictions, newest first, at most max rows
 * (read-only, locks nothing). *out (owned by the caller,
 * store_webhook_contradictions_free) gets the rows, *n_out their number.
 * Returns STORE_OK or a negative STORE_ERR*.
 */
int store_webhook_contradictions(struct store *st, size_t max,
                                 struct store_webhook_contradiction **out,
                                 size_t *n_out, char *errstr,
                                 size_t errstr_size) CO_MUST_CHECK;

enum store_webhook_ack {
        STORE_WEBHOOK_ACK_DONE = 1,          /* acknowledged now */
        STORE_WEBHOOK_ACK_NOT_FOUND,         /* no webhook with this id */
        STORE_WEBHOOK_ACK_NOT_CONTRADICTION, /* a webhook, not a contradiction
                                              */
        STORE_WEBHOOK_ACK_ALREADY, /* acknowledged before: nothing changed */
};

/*
 * Closes the open contradiction webhook_id: sets acknowledged_at (now),
 * acknowledged_by = actor and acknowledgement = text (both bounded,
 * checked by the caller and by the table) in one statement, only while
 * it is open; the row itself stays (the evidence). *out says what
 * happened. Returns STORE_OK, STORE_ERR, STORE_ERR_CONN or
 * STORE_ERR_DATA.
 */
int store_webhook_acknowledge(struct store *st, const char *webhook_id,
                              const char *actor, const char *text,
                              enum store_webhook_ack *out, char *errstr,
                              size_t errstr_size) CO_MUST_CHECK;

#endif
