/* SPDX-License-Identifier: Apache-2.0 */
/*
 * store/review: the review queue (`chargeonce review`): the
 * payments in `review`, one of them with its evidence and results, and
 * an operator's resolution, which finishes the payment exactly as a
 * webhook would (store/finish.h): status, the key's stored outcome, the
 * charge posting for a success, one new outbox result with
 * "resolves_review": true, and an evidence row of kind 'operator' saying
 * who and why.
 *
 * Must never: resolve a payment that is not in review at the moment of
 * the resolution (a concurrent webhook, settle or resolution wins and
 * this one writes nothing); write part of a resolution; put the
 * operator's text, a key or a row's values in an error message. The
 * idempotency key is returned for the caller to mask (log_mask_key);
 * nothing here prints it.
 *
 * Threads: as store.h (one struct store per thread).
 */
#ifndef CO_STORE_REVIEW_H
#define CO_STORE_REVIEW_H

#include "store/store.h"
#include "util/compiler.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* The longest --evidence text stored, in bytes. */
#define STORE_REVIEW_EVIDENCE_MAX 1000

/* One payment in review (strings owned; store_review_rows_free). */
struct store_review_row {
        char payment_id[UUID_STR_LEN];
        char *tenant_id;
        char *idem_key; /* the full key: mask it before showing it */
        char *order_id;
        char *created_at;  /* RFC 3339, UTC */
        char *finished_at; /* when it went to review */
        int64_t amount;
        char currency[4];
        char *error_code;         /* why it is in review, or NULL */
        char *error_message;      /* or NULL */
        char *provider_charge_id; /* or NULL */
        int32_t attempts;
        /* the newest evidence row: "<kind> <outcome>", its time; or NULL */
        char *last_evidence;
        char *last_evidence_at;
        int64_t created_at_ms; /* Unix ms */
};

void store_review_rows_free(struct store_review_row *r, size_t n);

/*
 * The payments in review, oldest first (created_at; found through
 * payments_lease_idx at 'infinity', 0029), at most limit. *out (owned by
 * the caller: store_review_rows_free) gets them, *n_out their number,
 * *total how many are in review in all. Read-only, locks nothing.
 * Returns STORE_OK or a negative STORE_ERR*.
 */
int store_review_list(struct store *st, size_t limit,
                      struct store_review_row **out, size_t *n_out,
                      int64_t *total, char *errstr,
                      size_t errstr_size) CO_MUST_CHECK;

/* One payment, whatever its status, for `review show` and `resolve`. */
struct store_review_payment {
        struct store_review_row row;
        char status[STORE_STATUS_LEN];
        int64_t db_now_ms; /* the database's clock, for the payment's age */
        /* JSON built by PostgreSQL (owned): an array of evidence rows
         * {at, kind, actor, lease_epoch, request_summary, http_status,
         * transport_error, outcome, provider_charge_id, response_excerpt}
         * oldest first, and an array of results {event_id, status,
         * replayed, resolves_review, created_at, published_at}. */
        char *evidence_json;
        char *results_json;
};

void store_review_payment_clear(struct store_review_payment *p);

/*
 * Reads the payment payment_id (a UUID) with its evidence and results.
 * *found false: no such payment (p is then cleared). Read-only. Returns
 * STORE_OK or a negative STORE_ERR*. p must be zeroed or cleared first.
 */
int store_review_get(struct store *st, const char *payment_id,
                     struct store_review_payment *p, bool *found, char *errstr,
                     size_t errstr_size) CO_MUST_CHECK;

enum store_review_result {
        STORE_REVIEW_RESOLVED = 1,  /* finished as asked */
        STORE_REVIEW_NOT_IN_REVIEW, /* its status is another: nothing written */
        STORE_REVIEW_NOT_FOUND,     /* no such payment: nothing written */
};

struct store_review_resolve_in {
        const char *payment_id; /* a UUID */
        bool succeeded;         /* the decision; false: failed */
        /* required for succeeded (the gateway's or the operator's);
         * ignored for failed */
        const char *provider_charge_id;
        /* failed: the stored error (NULL: PAYMENT_REVIEW_FAILED_*) */
        const char *error_code, *error_message;
        /* who decides (worker.id or user@host) and why (--evidence):
         * both required, valid UTF-8, the text at most
         * STORE_REVIEW_EVIDENCE_MAX bytes, already checked for card
         * numbers by the caller */
        const char *actor;
        const char *evidence_text;
        /* the gateway's answer as asked just before (evidence row):
         * outcome name ("succeeded", "not_found", "not asked", ...), the
         * HTTP status (0: none), transport error (or NULL), and a short
         * JSON excerpt (or NULL) */
        const char *gateway_outcome;
        int http_status;
        const char *transport_error;
        const char *gateway_excerpt;
};

struct store_review_resolve_out {
        enum store_review_result result;
        char status[STORE_STATUS_LEN]; /* NOT_IN_REVIEW: the status found */
        char result_event_id[UUID_STR_LEN]; /* RESOLVED: the new result */
        int64_t lease_epoch;                /* RESOLVED: the new epoch */
};

/*
 * Resolves in ONE transaction (retried whole on a deadlock or a
 * serialization failure): SELECT ... FOR UPDATE; only a payment in
 * 'review' is finished (store_finish_payment: status, key, outbox result
 * with resolves_review, charge posting for a success), then the evidence
 * row of kind 'operator'; COMMIT. Anything else writes nothing and says
 * why in out->result. Returns STORE_OK (see out->result), STORE_ERR_DATA
 * (refused input: nothing written), STORE_ERR or STORE_ERR_CONN (unknown
 * whether it committed: a repeat answers NOT_IN_REVIEW if it did).
 */
int store_review_resolve(struct store *st,
                         const struct store_review_resolve_in *in,
                         struct store_review_resolve_out *out, char *errstr,
                         size_t errstr_size) CO_MUST_CHECK;

#endif
