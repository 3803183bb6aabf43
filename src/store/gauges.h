/* SPDX-License-Identifier: Apache-2.0 */
/*
 * store/gauges: the few cheap reads behind chargeonce's database gauges
 * and its readiness (/metrics, /readyz): one statement for the backlog gauges,
 * counts for the periodic audit, a bounded "does the database answer".
 *
 * Must never: write or lock anything; scan a table where an index
 * answers (payments_lease_idx; the outbox's primary key above
 * relay_cursor.through, outbox_parked_idx); wait
 * on the server longer than the statement_timeout it sets.
 */
#ifndef CO_STORE_GAUGES_H
#define CO_STORE_GAUGES_H

#include "store/store.h"

#include <stdint.h>

/* The whole database's backlog, as the gauges show it. */
struct store_gauges {
        double processing_oldest_s; /* oldest processing payment; 0 none */
        int64_t outbox_unpublished; /* unpublished, not parked */
        double outbox_oldest_s;     /* oldest of those; 0 none */
        int64_t outbox_parked;      /* parked, not published */
        int64_t review;             /* payments in review */
};

/*
 * Reads every field of *out with ONE statement (statement_timeout
 * timeout_ms). STORE_OK, or a negative STORE_ERR* with the reason.
 */
int store_gauges(struct store *st, int64_t timeout_ms, struct store_gauges *out,
                 char *errstr, size_t errstr_size) CO_MUST_CHECK;

/*
 * How the database replicates its commits, as the primary shows it
 * (docs/deployment.md, "Replication and failover"): a commit acknowledged
 * by a synchronous standby survives a failover to it; one acknowledged by
 * the primary alone may be lost with it.
 */
enum store_replication {
        STORE_REPL_UNKNOWN = 0, /* pg_stat_replication not readable */
        STORE_REPL_NONE,        /* no standby streaming (a WAL receiver
                                   such as pg_receivewal is none) */
        STORE_REPL_ASYNC,       /* standbys, none synchronous for commits */
        STORE_REPL_SYNC,        /* a synchronous standby confirms commits */
        STORE_REPL_SYNC_WAITING /* synchronous configured, none streaming:
                                   commits wait */
};

struct store_replication_info {
        enum store_replication mode;
        int64_t standbys;      /* streaming; -1: unknown */
        int64_t sync_standbys; /* of them sync or quorum; -1: unknown */
        char synchronous_commit[16];
};

/* Reads it with one statement (statement_timeout timeout_ms). */
int store_replication(struct store *st, int64_t timeout_ms,
                      struct store_replication_info *out, char *errstr,
                      size_t errstr_size) CO_MUST_CHECK;
/* "synchronous", "asynchronous", "none", "unknown", "synchronous, no
 * standby streaming". */
const char *store_replication_name(enum store_replication m);

/* SELECT count(*) FROM webhook_contradictions (sql/0007) into *n. */
int store_webhook_contradictions_count(struct store *st, int64_t timeout_ms,
                                       int64_t *n, char *errstr,
                                       size_t errstr_size) CO_MUST_CHECK;

/*
 * SELECT 1 under statement_timeout timeout_ms (which stays for the
 * session's next statements), waiting at most timeout_ms for the answer
 * on this side too (a
 * statement_timeout alone would not end a wait on a link that died
 * without a reset): STORE_OK while the database answers, else a negative
 * STORE_ERR* with the reason. A ping that gets no answer in time breaks
 * st's connection (STORE_ERR_CONN): the next call connects again.
 */
int store_ping(struct store *st, int64_t timeout_ms, char *errstr,
               size_t errstr_size) CO_MUST_CHECK;

#endif
