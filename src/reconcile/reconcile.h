/* SPDX-License-Identifier: Apache-2.0 */
/*
 * reconcile: the reconciler. Finishes payments left in `processing` by an
 * owner that died or stalled (its lease expired):
 *
 *   expired lease -> takeover (CAS, lease epoch + 1: the old owner's settle
 *   is fenced) -> GET /v1/charges?reference=<payment id> ->
 *     a charge listed        -> settle succeeded / failed from it
 *     an empty list, in time -> POST again with the same provider key ->
 *                               settle from its answer
 *     no evidence            -> hold the lease for a backoff, ask again
 *     past the deadline or the gateway's key retention, or a defect
 *                            -> review (a result is emitted), never failed
 *
 * Every question and answer goes to gateway_evidence before the decision
 * it supports is acted on. decide.h has the decision table, and
 * docs/reconciler.md the reasoning and the timing parameters.
 *
 * It must never: mark a payment failed without a final refusal from the
 * gateway; post a payment again with another provider key, or at all
 * without an empty list inside every bound; start a payment over (new
 * payment id, delete of the processing row); settle without naming the
 * epoch it took; log a full idempotency or provider key or the payment
 * method.
 *
 * Lifecycle (as every engine's, cmd/engine.h): reconcile_new() connects
 * to the database and makes the gateway client, reconcile_run() loops on
 * the calling thread until its stop flag asks, reconcile_destroy() frees.
 * The reconciler starts no thread of its own: cmd/ runs it on one when it
 * shares a process (consume).
 */
#ifndef CO_RECONCILE_H
#define CO_RECONCILE_H

#include "util/compiler.h"

#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

struct gateway_opts;
struct metrics;
struct reconciler; /* opaque */

/* The reconciler's options, filled by cmd/ from the configuration
 * (reconcile.*, lease.duration, gateway.*, db.conninfo, worker.id).
 * Strings and gateway are borrowed for the reconciler's life. */
struct reconcile_opts {
        const char *conninfo;
        /* the lease owner, "<name>/reconcile#<nonce>", an instance of
         * owner_name (as pipeline_opts) */
        const char *owner, *owner_name;
        const struct gateway_opts *gateway;
        int64_t lease_ms, interval_ms, backoff_base_ms, backoff_max_ms;
        int64_t review_after_ms;  /* reconcile.review_after */
        int64_t key_retention_ms; /* gateway.key_retention */
        int64_t deadline_ms;      /* gateway.deadline */
        int64_t call_timeout_ms;  /* gateway.timeout */
        size_t batch_size, max_in_flight;
        /* takeovers, settles, in flight; may be NULL */
        struct metrics *metrics;
};

/* Counters since start. */
struct reconcile_stats {
        uint64_t rounds;               /* takeover statements run */
        uint64_t takeovers;            /* payments taken over */
        uint64_t settled_from_query;   /* settled on a listed charge */
        uint64_t reposted;             /* POSTed again, same provider key */
        uint64_t settled_after_repost; /* settled on the re-post's answer */
        uint64_t succeeded, failed;    /* settled with that status */
        uint64_t review;               /* settled as review */
        uint64_t still_unknown; /* no evidence: held, asked again later */
        uint64_t fenced;        /* our settle refused (lease lost) */
        uint64_t lost;          /* lease lost while at the gateway */
        uint64_t errors;        /* database errors: work left to lease expiry */
};

/*
 * A reconciler with its own database connection and gateway client. o is
 * borrowed (its strings and gateway too) and must outlive it. Returns the
 * reconciler (owned by the caller: reconcile_destroy), or NULL with the
 * reason in errstr and errno EINVAL when the options are wrong (the
 * timing, the gateway client's options: a configuration error), else
 * another errno (no database connection).
 */
struct reconciler *reconcile_new(const struct reconcile_opts *o, char *errstr,
                                 size_t errstr_size) CO_MUST_CHECK;

/*
 * Reconciles on the calling thread until *stop (flow/flow.h) asks.
 * FLOW_DRAIN: no new takeovers; the calls at the gateway are finished and
 * settled (at most gateway.deadline + gateway.timeout + 5 s), returns 0.
 * FLOW_EXIT: returns FLOW_EXIT_NOW at once (what was in hand is retaken
 * after its lease expires). One thread at a time.
 */
int reconcile_run(struct reconciler *r, const atomic_int *stop) CO_MUST_CHECK;

/*
 * Frees r: calls still at the gateway end without an answer, and what
 * was in hand is retaken once its lease expires. NULL is ignored. Not
 * while reconcile_run() runs.
 */
void reconcile_destroy(struct reconciler *r);

/* A snapshot of r's counters (refreshed on every turn of the loop). Any
 * thread. */
void reconcile_get_stats(struct reconciler *r, struct reconcile_stats *out);

#endif
