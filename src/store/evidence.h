/* SPDX-License-Identifier: Apache-2.0 */
/*
 * evidence: the gateway_evidence table (every question asked of the
 * gateway about a payment and its answer), and the database's clock. What
 * the reconciler needs from the store beyond store.h; any writer of
 * gateway outcomes (the consumer, webhooks) may use it too.
 *
 * It must never store the payment method, the API key, a full provider or
 * idempotency key, or a full request body: callers pass summaries and
 * masked keys, and this file puts nothing of its own in a row or an error
 * message but the SQLSTATE and primary message.
 *
 * Threads: as store.h (one struct store per thread).
 */
#ifndef CO_STORE_EVIDENCE_H
#define CO_STORE_EVIDENCE_H

#include "store/store.h"
#include "util/compiler.h"

#include <stddef.h>
#include <stdint.h>

/* One row of gateway_evidence. Everything is borrowed during the call. */
struct evidence_item {
        const char *payment_id;      /* required: an existing payment */
        const char *kind;            /* required: charge | query | webhook */
        const char *actor;           /* who asked (lease owner), or NULL */
        int64_t lease_epoch;         /* the epoch held when asking; 0: none */
        const char *request_summary; /* e.g. "GET /v1/charges?reference=" */
        int http_status;             /* of the last attempt; 0: none */
        const char *transport_error; /* NULL: an answer arrived */
        const char *outcome;         /* required: gateway_outcome_name() */
        const char *provider_charge_id; /* or NULL */
        const char *response_excerpt;   /* attempts / decision JSON, or NULL */
};

/*
 * Inserts items[0..n) in one statement (one transaction). Returns STORE_OK,
 * STORE_ERR (nothing written) or STORE_ERR_CONN (unknown whether written;
 * a repeat may store the rows twice, which evidence tolerates: it is a
 * log, never counted as charges).
 */
int store_evidence_insert(struct store *st, const struct evidence_item *items,
                          size_t n, char *errstr,
                          size_t errstr_size) CO_MUST_CHECK;

/*
 * The database's wall clock (clock_timestamp(), Unix ms) into *now_ms, so
 * that ages of payments are measured on the clock that stamped created_at.
 */
int store_clock_ms(struct store *st, int64_t *now_ms, char *errstr,
                   size_t errstr_size) CO_MUST_CHECK;

#endif
