/* SPDX-License-Identifier: Apache-2.0 */
/*
 * store/audit: the periodic invariant audit's session. Every process that
 * serves /metrics may run the audit, but one per database does: the one
 * whose audit session holds the advisory lock STORE_AUDIT_LOCK_KEY
 * (docs/data-model.md, "The periodic audit"). The lock is a session lock:
 * it goes with the session (a broken connection, the process's end), and
 * another process takes it at its next try.
 *
 * Must never: write anything; hold the lock on any connection but the
 * audit's own (a pooled or reset connection would lose it silently).
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

#endif
