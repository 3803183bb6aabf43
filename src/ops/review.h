/* SPDX-License-Identifier: Apache-2.0 */
/*
 * ops/review: what `chargeonce review` does (docs/operations.md, "The
 * review queue"): list and show the payments in review, resolve one,
 * list the open webhook contradictions and acknowledge one. The decision
 * of a resolution is payment/review_rule.c's, the SQL store/review.c's
 * and store/webhook.c's; cmd/review.c parses the arguments.
 *
 * Tables (or one JSON document) on stdout, messages on stderr. Keys are
 * shown masked (log_mask_key), never whole; text that came from outside
 * is made printable before it reaches a terminal. Every function returns
 * the command's exit status: 0 done; 1 refused (nothing written) or a
 * runtime failure (the message says which); 2 a gateway configuration
 * the client refuses.
 *
 * Must never: write anything on a refusal or in a dry run; store a card
 * number or an invalid string; print a full idempotency key; decide
 * `failed` against a succeeded charge listed by the gateway.
 */
#ifndef CO_OPS_REVIEW_H
#define CO_OPS_REVIEW_H

#include "gateway/client.h"
#include "util/compiler.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* What review runs with (cmd/review.c fills it from the configuration). */
struct ops_review_opts {
        const char *conninfo;               /* db.conninfo */
        const struct gateway_opts *gateway; /* for resolve's question */
        int64_t key_retention_ms;           /* gateway.key_retention */
        const char *actor; /* who decides: worker.id, else $USER@host */
};

/* The payments in review, oldest first, at most limit. Read-only. */
int ops_review_list(const struct ops_review_opts *o, size_t limit,
                    bool json) CO_MUST_CHECK;

/* One payment (payment_id: a UUID), its evidence and results. Read-only. */
int ops_review_show(const struct ops_review_opts *o, const char *payment_id,
                    bool json) CO_MUST_CHECK;

/* `review resolve`, checked by cmd/review.c (a UUID, a decision, the
 * evidence text, a charge id of the gateway's form with succeeded only). */
struct ops_review_resolve {
        const char *payment_id;
        bool as_succeeded;
        const char *evidence;
        const char *charge_id; /* or NULL */
        bool without_gateway;
        bool json;
        bool dry_run; /* ask and decide, write nothing, say what it would do */
};

/*
 * Resolves a payment in review: reads it (not found or not in review ->
 * refused), asks the gateway once (GET ?reference=, a few attempts at
 * most) and judges the decision against the answer (a contradiction is
 * refused; no answer is refused unless without_gateway), then finishes it
 * in one transaction, only if it is still in review then. A dry run stops
 * before the transaction and prints what it would write.
 */
int ops_review_resolve(const struct ops_review_opts *o,
                       const struct ops_review_resolve *r) CO_MUST_CHECK;

/* The open webhook contradictions, newest first, at most limit. */
int ops_review_contradictions(const struct ops_review_opts *o, size_t limit,
                              bool json) CO_MUST_CHECK;

/* Closes an open contradiction (webhook_id, checked by the caller): who
 * (o->actor), when, why (evidence) are kept; the row stays. */
int ops_review_acknowledge(const struct ops_review_opts *o,
                           const char *webhook_id, const char *evidence,
                           bool json) CO_MUST_CHECK;

/*
 * An operator's --evidence text: 1..STORE_REVIEW_EVIDENCE_MAX bytes of
 * UTF-8 without control characters or a card number. 0, or -1 with the
 * reason in errstr (never the text itself). Pure.
 */
int ops_review_evidence_check(const char *evidence, char *errstr,
                              size_t errstr_size) CO_MUST_CHECK;

/* s for a terminal: control characters and DEL become '?' (into out). */
const char *ops_review_printable(const char *s, char *out, size_t outsz);

/* The masked form of a key (log_mask_key) into out. */
const char *ops_review_mask(const char *key, char *out, size_t outsz);

#endif
