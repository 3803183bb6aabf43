/* SPDX-License-Identifier: Apache-2.0 */
/*
 * store/gc: the statements of `chargeonce gc` (sql/0010_gc.sql): expired
 * idempotency keys become tombstones and their bulky rows go, one short
 * batch (one statement, one transaction) at a time.
 *
 * A key is collected when its retention has passed twice over: its own
 * expires_at (the retention in force when it was claimed) and the
 * retention gc was given (the one its refusal checks were made against),
 * it is final with a succeeded or failed payment, not yet a tombstone,
 * and no outbox row of its payment waits to be published (or is parked).
 * Keys and payments locked by someone else are skipped (FOR UPDATE SKIP
 * LOCKED), so gc never waits for the consumer; the consumer waits for
 * one batch at most.
 *
 * It must never: touch a key still processing or a payment in review,
 * delete a key, a payment or a ledger row, delete an outbox row that is
 * not published, or put a key or a row's value into errstr.
 *
 * Threads: as store.h (one struct store per thread).
 */
#ifndef CO_STORE_GC_H
#define CO_STORE_GC_H

#include "store/store.h"
#include "util/compiler.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* What gc did (a batch, a run) or would do (a dry run). */
struct store_gc_counts {
        int64_t tombstones; /* keys made tombstones */
        int64_t inbox;      /* inbox events deleted */
        int64_t evidence;   /* gateway_evidence rows deleted */
        int64_t outbox;     /* published outbox rows deleted */
};

/* Expired keys that gc leaves alone, and why. */
struct store_gc_left {
        int64_t processing; /* the payment is still processing */
        int64_t review;     /* in review: a person decides first */
        int64_t held;       /* a result not yet published, or parked */
};

/*
 * Dry run: what gc would do now with key_retention_ms and at most limit
 * keys (limit <= 0: no limit), counted in one read-only statement that
 * locks and writes nothing. Returns STORE_OK, STORE_ERR or STORE_ERR_CONN.
 */
int store_gc_count(struct store *st, int64_t key_retention_ms, int64_t limit,
                   struct store_gc_counts *out, char *errstr,
                   size_t errstr_size) CO_MUST_CHECK;

/* The expired keys gc would leave (read-only). */
int store_gc_left(struct store *st, int64_t key_retention_ms,
                  struct store_gc_left *out, char *errstr,
                  size_t errstr_size) CO_MUST_CHECK;

/* Records a run in gc_runs; *run_id gets its id. */
int store_gc_begin(struct store *st, int64_t key_retention_ms, int64_t *run_id,
                   char *errstr, size_t errstr_size) CO_MUST_CHECK;

/*
 * One batch, one statement: up to max keys (oldest expires_at first)
 * become tombstones and their bulky rows go; the counts are added to
 * run run_id in the same statement, and the published outbox rows it
 * removed move outbox_cleanup's mark as the relay's retention does (so
 * the audit takes a removed result for a published one, never for a
 * missing one). *out gets this batch's counts (all 0: nothing left that
 * is not locked by someone else). A deadlock or serialization failure is
 * retried. Returns STORE_OK, STORE_ERR or STORE_ERR_CONN (unknown whether
 * it committed; a repeat is safe).
 */
int store_gc_batch(struct store *st, int64_t run_id, int64_t key_retention_ms,
                   int max, struct store_gc_counts *out, char *errstr,
                   size_t errstr_size) CO_MUST_CHECK;

/*
 * The inbox's late copies: rows of keys that are tombstones, recorded
 * after their key's batch (a copy answered as a replay or a conflict),
 * older than key_retention_ms, received since the window the finished
 * runs before covered (gc_runs.late_through, 0018), whose answer is
 * published or names no payment; with each, its published answer that
 * names the payment (a replay), as a key's batch does. The dry run
 * counts them (read-only: out->inbox, out->outbox); a batch deletes up to
 * max of them, run run_id's window, and adds the counts to the run's row
 * in the same statement (out->inbox 0: none left that is not locked). The
 * work follows what was received since the last run, not the size of
 * the inbox.
 */
int store_gc_late_count(struct store *st, int64_t key_retention_ms,
                        struct store_gc_counts *out, char *errstr,
                        size_t errstr_size) CO_MUST_CHECK;
int store_gc_late_batch(struct store *st, int64_t run_id, int max,
                        struct store_gc_counts *out, char *errstr,
                        size_t errstr_size) CO_MUST_CHECK;
/*
 * Sets the run's finished_at, and when late_done (every late copy of its
 * window collected) its late_through: where the next run's window starts.
 */
int store_gc_end(struct store *st, int64_t run_id, bool late_done, char *errstr,
                 size_t errstr_size) CO_MUST_CHECK;

#endif
