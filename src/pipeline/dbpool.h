/* SPDX-License-Identifier: Apache-2.0 */
/*
 * dbpool: a few threads, each with its own store connection, that run the
 * pipeline's batched statements (claim, settle, outbox, lease renewal) so
 * the event loop never blocks on PostgreSQL. A job that fails is retried by
 * its worker with capped backoff until it succeeds or the pool stops: a
 * batch is never skipped, so an intent is never lost to a database outage.
 *
 * Threads: dbpool_submit / dbpool_take_done / dbpool_* from the owner
 * thread; workers run the jobs.
 */
#ifndef CO_DBPOOL_H
#define CO_DBPOOL_H

#include "store/store.h"
#include "util/compiler.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

enum dbjob_kind {
        DBJOB_CLAIM,
        DBJOB_SETTLE,
        DBJOB_OUTBOX,
        DBJOB_RENEW,
        DBJOB_PROBE,
        DBJOB_SIFT,
};

struct dbjob {
        enum dbjob_kind kind;
        size_t n, cap;
        void **owners; /* the caller's item of each row */
        struct claim_item *claims;
        struct settle_item *settles;
        struct outbox_item *outbox;
        struct lease_item *leases;
        struct probe_item *probes;
        struct sift_item *sifts;
        /* out */
        int rc; /* STORE_OK, or the last error when the pool stopped */
        char err[256];
        int tries;
        int64_t t_submit_us, t_done_us;
        struct dbjob *next;
};

struct dbpool_opts {
        const char *conninfo;
        int workers;
        const char *owner; /* lease owner (claims, renewals) */
        int64_t lease_ms;
        const unsigned char *pk_secret; /* copied */
        size_t pk_secret_len;
        int64_t key_retention_ms;
};

/* Connects every worker. NULL with the reason on error. */
struct dbpool *dbpool_new(const struct dbpool_opts *o, char *errstr,
                          size_t errstr_size) CO_MUST_CHECK;
/* Stops the workers after their current job; unstarted jobs come back
 * from dbpool_take_done with rc STORE_ERR. Then frees. */
void dbpool_destroy(struct dbpool *pool);

/* A new empty job of kind with room for cap rows. Owned by the caller
 * until submitted, and again once taken back. */
struct dbjob *dbjob_new(enum dbjob_kind kind, size_t cap);
void dbjob_free(struct dbjob *job);

/* Hands job to the workers. */
void dbpool_submit(struct dbpool *pool, struct dbjob *job);
/* Finished jobs (a list through ->next), or NULL. */
struct dbjob *dbpool_take_done(struct dbpool *pool);
/* Jobs submitted and not yet taken back. */
int dbpool_outstanding(const struct dbpool *pool);

/* From now on a worker that finishes a job adds 1 to the eventfd fd (the
 * owner's loop wakes on it instead of polling for finished jobs). Call
 * before the first dbpool_submit(); fd must outlive the pool. */
void dbpool_wake_fd(struct dbpool *pool, int fd);
int dbpool_workers(const struct dbpool *pool);
/* Asks workers to give up retrying failing jobs (shutdown). */
void dbpool_stop_retrying(struct dbpool *pool);

#endif
