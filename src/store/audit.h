/* SPDX-License-Identifier: Apache-2.0 */
/*
 * store/audit: the periodic invariant audit's session. Every process that
 * serves /metrics may run the audit, but one per database does: the one
 * whose audit session holds the advisory lock STORE_AUDIT_LOCK_KEY
 * (docs/data-model.md, "The periodic audit"). The lock is a session lock:
 * it goes with the session (a broken connection, the process's end), and
 * another process takes it at its next try.
 *
 * Must never: write anything but its cursor (audit_cursor); hold the
 * lock on any connection but the audit's own (a pooled or reset
 * connection would lose it silently).
 */
#ifndef CO_STORE_AUDIT_H
#define CO_STORE_AUDIT_H

#include "store/store.h"

#include <stdbool.h>
#include <stdint.h>

/* pg_try_advisory_lock(bigint) key of the database's auditor ("chargeonce
 * audit"; "chargeonce migrate" is 7461290001). In pg_locks: locktype
 * advisory, classid 1, objid 3166322706, objsubid 1. */
#define STORE_AUDIT_LOCK_KEY "7461290002"

/*
 * Prepares st's session for an audit and says whether it is the
 * database's auditor: the session settings of the audit (jit off: the
 * audit's plans are run once a minute and JIT compiling them cost more
 * than running them; statement_timeout timeout_ms; application_name
 * "chargeonce audit"), then the lock, taken if it is free (nothing waits
 * for it) and kept if this session holds it already. *leader: true when
 * this session holds it. STORE_OK, or a negative STORE_ERR* with the
 * reason (*leader false). Thread: the one that owns st.
 */
int store_audit_lead(struct store *st, int64_t timeout_ms, bool *leader,
                     char *errstr, size_t errstr_size) CO_MUST_CHECK;

/*
 * One step of the periodic audit (docs/data-model.md, "The periodic
 * audit"): reads, in ONE repeatable-read transaction, the rows of the
 * three feeds (outbox, ledger_postings, gateway_evidence) written since
 * the last step (at most `limit` new rows per feed, and every row passed
 * before that was not yet visible), checks the invariants of the payments
 * they name and of the payments and results the last step found wrong,
 * and moves audit_cursor. Never reads a table but through an index (the
 * step's plans have sequential scans, hash and merge joins off), so its
 * cost follows the rows written since the last step, not the tables.
 *
 * *out (owned by the caller, store_violations_free) gets what this step
 * found (0: healthy as far as the periodic audit looks); *info what it
 * read. A database without a cursor gets one at the feeds' ends (a short
 * SHARE lock of the three tables, lock_timeout 1 s), and nothing is read
 * (info->started). The session must be store_audit_lead's auditor's.
 * STORE_OK, or a negative STORE_ERR* with the reason (nothing moved).
 */
/* Rows of each feed a daemon's step reads at most: a minute of ~800
 * intents a second in one step. */
#define STORE_AUDIT_STEP_ROWS 50000

struct store_audit_info {
        int64_t rows;  /* feed rows read (new ones, and late ones) */
        int64_t fresh; /* payments checked from the feed rows alone */
        bool behind;   /* a feed had more new rows than `limit` */
        bool started;  /* there was no cursor: made now, nothing read */
};

int store_audit_step(struct store *st, int64_t limit,
                     struct store_violation **out, size_t *n_out,
                     struct store_audit_info *info, char *errstr,
                     size_t errstr_size) CO_MUST_CHECK;

#endif
