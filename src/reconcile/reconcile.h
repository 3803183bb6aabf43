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
 * Threads: reconcile_run() runs on the calling thread. reconciler_start()
 * runs the same loop on a thread of its own, with its own database
 * connection and gateway client.
 */
#ifndef CO_RECONCILE_H
#define CO_RECONCILE_H

#include <signal.h>
#include <stddef.h>
#include <stdint.h>

struct gateway_opts;
struct reconciler; /* opaque */

/* The reconciler's options, filled by cmd/ from the configuration
 * (reconcile.*, lease.duration, gateway.*, db.conninfo, worker.id).
 * Strings and gateway are borrowed for the reconciler's life. */
struct reconcile_opts {
        const char *conninfo;
        const char *owner; /* lease owner name, e.g. "host:pid/reconcile" */
        const struct gateway_opts *gateway;
        int64_t lease_ms, interval_ms, backoff_base_ms, backoff_max_ms;
        int64_t review_after_ms;  /* reconcile.review_after */
        int64_t key_retention_ms; /* gateway.key_retention */
        int64_t deadline_ms;      /* gateway.deadline */
        int64_t call_timeout_ms;  /* gateway.timeout */
        size_t batch_size, max_in_flight;
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
 * Runs the reconciler until *stop becomes non-zero. First signal: no new
 * takeovers, calls at the gateway are finished and settled (at most
 * gateway.deadline + gateway.timeout + 5 s), returns 0. *stop >= 2:
 * returns 1 at once (what was in flight is retaken after its lease
 * expires). Returns 2 on a configuration error, 1 if it cannot start.
 */
int reconcile_run(const struct config *cfg, volatile sig_atomic_t *stop)
    __attribute__((warn_unused_result));

/*
 * Starts the reconciler on its own thread (for `chargeonce consume`).
 * Connects to the database and makes the gateway client on the calling
 * thread, so errors are reported here (errstr); the thread owns them from
 * then on. Returns a reconciler owned by the caller (reconciler_stop), or
 * NULL. cfg must outlive the reconciler.
 */
struct reconciler *reconciler_start(const struct config *cfg, char *errstr,
                                    size_t errstr_size)
    __attribute__((warn_unused_result));

/*
 * Drains as on a first signal, joins the thread and frees r. NULL is
 * ignored. Any thread but the reconciler's.
 */
void reconciler_stop(struct reconciler *r);

/* A snapshot of r's counters. Any thread. */
void reconciler_get_stats(struct reconciler *r, struct reconcile_stats *out);

#endif
