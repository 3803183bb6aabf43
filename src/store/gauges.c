/* SPDX-License-Identifier: Apache-2.0 */
/*
 * store/gauges: cheap reads for the gauges and readiness (gauges.h).
 *
 * Each read is one simple-query round trip that first sets its own
 * statement_timeout, so that a reconnect (which loses session settings)
 * never leaves a read unbounded. Never prepared: these run every few
 * seconds on a connection of their own, not in a hot path.
 *
 * Must never: write, lock, or scan payments or outbox beyond their
 * partial indexes (the review count reads the status column; see
 * docs/operations.md for its cost).
 */
#include "store/gauges.h"
#include "store/relay_sql.h"
#include "store/store_int.h"
#include "util/timeutil.h"

#include <inttypes.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/*
 * The backlog in one statement. processing and review: read through
 * payments_lease_idx (STORE_PROCESSING_PRED, STORE_REVIEW_COUNT_PRED);
 * outbox: the unpublished rows are above relay_cursor.through (0021),
 * read through the primary key from its value, read first and written
 * into the statement (behind a subquery the planner would guess a third
 * of the table and scan all of it), less the published ones
 * (co_outbox_published, 0027: it reads through and done in this
 * statement's snapshot, so a cursor moved since the first read counts
 * nothing twice); the parked ones through
 * outbox_parked_idx (0022), counted apart (they wait for an operator,
 * not for the relay, and would otherwise pin the oldest age forever).
 */
#define GAUGES_SQL                                                             \
        "SELECT (SELECT coalesce(extract(epoch FROM now() - min(created_at))," \
        "0) FROM payments WHERE" STORE_PROCESSING_PRED "),"                    \
        " o.unpublished, o.oldest, p.parked,"                                  \
        " (SELECT count(*) FROM payments WHERE" STORE_REVIEW_COUNT_PRED ")"    \
        " FROM (SELECT count(*) AS unpublished,"                               \
        " coalesce(extract(epoch FROM now() - min(created_at)), 0) AS oldest"  \
        " FROM outbox WHERE id > %" PRId64                                     \
        " AND id <= " STORE_OUTBOX_ID_CEILING " AND parked_at IS NULL"         \
        " AND NOT co_outbox_published(id, parked_at, published_at)) o,"        \
        " (SELECT count(*) AS parked FROM outbox WHERE parked_at IS NOT NULL"  \
        " AND published_at IS NULL) p"

/*
 * Runs "SET statement_timeout; sql" and returns the last result (one row
 * expected) or NULL with *rc and errstr set.
 */
static PGresult *query(struct store *st, int64_t timeout_ms, const char *sql,
                       int *rc, char *errstr, size_t errstr_size)
{
        PGconn *conn = store_pgconn(st);
        char text[2048];
        PGresult *res;

        if (!conn || PQstatus(conn) != CONNECTION_OK) {
                if (conn)
                        store_reconnect(st);
                if (!conn || PQstatus(conn) != CONNECTION_OK) {
                        snprintf(errstr, errstr_size, "no database connection");
                        *rc = STORE_ERR_CONN;
                        return NULL;
                }
        }
        snprintf(text, sizeof(text), "SET statement_timeout = %" PRId64 "; %s",
                 timeout_ms, sql);
        res = PQexec(conn, text);
        if (PQresultStatus(res) == PGRES_TUPLES_OK && PQntuples(res) == 1)
                return res;
        store_format_error(res, conn, "gauges", errstr, errstr_size);
        *rc = PQstatus(conn) == CONNECTION_OK ? STORE_ERR : STORE_ERR_CONN;
        PQclear(res);
        return NULL;
}

static double dbl_field(const PGresult *res, int col)
{
        return PQgetisnull(res, 0, col) ? 0
                                        : strtod(PQgetvalue(res, 0, col), NULL);
}

int store_gauges(struct store *st, int64_t timeout_ms, struct store_gauges *out,
                 char *errstr, size_t errstr_size)
{
        PGresult *res;
        char sql[2048];
        int64_t through;
        int rc;

        res = query(st, timeout_ms,
                    "SELECT through FROM relay_cursor WHERE id = 1", &rc,
                    errstr, errstr_size);
        if (!res)
                return rc;
        through = store_i64_field(res, 0, 0);
        PQclear(res);
        snprintf(sql, sizeof(sql), GAUGES_SQL, through);
        res = query(st, timeout_ms, sql, &rc, errstr, errstr_size);
        if (!res)
                return rc;
        out->processing_oldest_s = dbl_field(res, 0);
        out->outbox_unpublished  = store_i64_field(res, 0, 1);
        out->outbox_oldest_s     = dbl_field(res, 2);
        out->outbox_parked       = store_i64_field(res, 0, 3);
        out->review              = store_i64_field(res, 0, 4);
        PQclear(res);
        return STORE_OK;
}

int store_webhook_contradictions_count(struct store *st, int64_t timeout_ms,
                                       int64_t *n, char *errstr,
                                       size_t errstr_size)
{
        PGresult *res;
        int rc;

        res = query(st, timeout_ms,
                    "SELECT count(*) FROM "
                    "webhook_contradictions",
                    &rc, errstr, errstr_size);
        if (!res)
                return rc;
        *n = store_i64_field(res, 0, 0);
        PQclear(res);
        return STORE_OK;
}

int store_ping(struct store *st, int64_t timeout_ms, char *errstr,
               size_t errstr_size)
{
        PGconn *conn     = store_pgconn(st);
        int64_t deadline = time_mono_ms() + timeout_ms;
        PGresult *res, *last = NULL;
        char sql[96];
        int rc = STORE_OK;

        if (!conn || PQstatus(conn) != CONNECTION_OK)
                store_reconnect(st);
        if (!conn || PQstatus(conn) != CONNECTION_OK) {
                snprintf(errstr, errstr_size, "no database connection");
                return STORE_ERR_CONN;
        }
        /* the statement_timeout stays for the session's next statements
         * (the audit gauge relies on it) */
        snprintf(sql, sizeof(sql),
                 "SET statement_timeout = %" PRId64 "; SELECT 1", timeout_ms);
        if (!PQsendQuery(conn, sql))
                goto broken;
        while (PQisBusy(conn)) {
                struct pollfd p = { PQsocket(conn), POLLIN, 0 };
                int64_t left    = deadline - time_mono_ms();

                if (left <= 0 || poll(&p, 1, (int)left) == 0) {
                        snprintf(errstr, errstr_size,
                                 "no answer to SELECT 1 within %" PRId64 " ms",
                                 timeout_ms);
                        /* the link may be dead without a reset: drop
                         * it, the next check connects again */
                        store_disconnect(st);
                        return STORE_ERR_CONN;
                }
                if (!PQconsumeInput(conn))
                        goto broken;
        }
        while ((res = PQgetResult(conn)) != NULL) {
                PQclear(last);
                last = res;
        }
        if (PQresultStatus(last) != PGRES_TUPLES_OK) {
                store_format_error(last, conn, "ping", errstr, errstr_size);
                rc = PQstatus(conn) == CONNECTION_OK ? STORE_ERR
                                                     : STORE_ERR_CONN;
        }
        PQclear(last);
        return rc;
broken:
        store_format_error(NULL, conn, "ping", errstr, errstr_size);
        store_disconnect(st);
        return STORE_ERR_CONN;
}

/* Rows of pg_stat_replication with a NULL state are walsenders whose
 * details this role may not see (pg_read_all_stats): unknown. A standby
 * is a walsender that reports a replay position: a WAL receiver
 * (pg_receivewal, a base backup's WAL stream) reports none and cannot be
 * promoted, so it is no standby, even one that confirms commits; the
 * last column counts every walsender that does (then commits do not
 * wait). */
#define REPLICATION_SQL                                                        \
        "SELECT current_setting('synchronous_commit'),"                        \
        " current_setting('synchronous_standby_names') <> '',"                 \
        " count(*) FILTER (WHERE state = 'streaming'"                          \
        "  AND replay_lsn IS NOT NULL),"                                       \
        " count(*) FILTER (WHERE state = 'streaming'"                          \
        "  AND replay_lsn IS NOT NULL AND sync_state IN ('sync', 'quorum')),"  \
        " count(*) FILTER (WHERE state IS NULL),"                              \
        " count(*) FILTER (WHERE state = 'streaming'"                          \
        "  AND sync_state IN ('sync', 'quorum'))"                              \
        " FROM pg_stat_replication"

int store_replication(struct store *st, int64_t timeout_ms,
                      struct store_replication_info *out, char *errstr,
                      size_t errstr_size)
{
        PGresult *res;
        int rc;
        bool names, waits_remote;

        memset(out, 0, sizeof(*out));
        res = query(st, timeout_ms, REPLICATION_SQL, &rc, errstr, errstr_size);
        if (!res)
                return rc;
        store_copy_field(res, 0, 0, out->synchronous_commit,
                         sizeof(out->synchronous_commit));
        names              = PQgetvalue(res, 0, 1)[0] == 't';
        out->standbys      = store_i64_field(res, 0, 2);
        out->sync_standbys = store_i64_field(res, 0, 3);
        /* local and off acknowledge a commit before any standby has it */
        waits_remote = strcmp(out->synchronous_commit, "local") != 0 &&
                       strcmp(out->synchronous_commit, "off") != 0;
        if (store_i64_field(res, 0, 4) > 0) {
                out->mode          = STORE_REPL_UNKNOWN;
                out->standbys      = -1;
                out->sync_standbys = -1;
        } else if (names && waits_remote && out->sync_standbys > 0) {
                out->mode = STORE_REPL_SYNC;
        } else if (names && waits_remote && out->standbys == 0 &&
                   store_i64_field(res, 0, 5) == 0) {
                out->mode = STORE_REPL_SYNC_WAITING;
        } else if (out->standbys > 0) {
                out->mode = STORE_REPL_ASYNC;
        } else {
                out->mode = STORE_REPL_NONE;
        }
        PQclear(res);
        return STORE_OK;
}

const char *store_replication_name(enum store_replication m)
{
        switch (m) {
        case STORE_REPL_NONE:
                return "none";
        case STORE_REPL_ASYNC:
                return "asynchronous";
        case STORE_REPL_SYNC:
                return "synchronous";
        case STORE_REPL_SYNC_WAITING:
                return "synchronous, no standby streaming (commits wait)";
        case STORE_REPL_UNKNOWN:
                break;
        }
        return "unknown";
}
