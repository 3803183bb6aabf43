/* SPDX-License-Identifier: Apache-2.0 */
/*
 * store/audit: the periodic audit's session and its lock (audit.h).
 *
 * One simple-query round trip per call, never prepared: it runs once per
 * metrics.audit_interval, and its SET lines must come first on every
 * session (a reconnect forgets them).
 *
 * Must never: wait for the lock (pg_try_advisory_lock only), or take it a
 * second time on the session that holds it (the lock count would grow by
 * one per audit for the session's life).
 */
#include "store/audit.h"
#include "store/store_int.h"

#include <inttypes.h>
#include <stdio.h>
#include <string.h>

/* The lock held by this session already, else taken if free. CASE keeps
 * the order: pg_try_advisory_lock runs only when the session lacks it. */
#define AUDIT_LEAD_SQL                                                         \
        "SELECT CASE WHEN EXISTS (SELECT 1 FROM pg_locks"                      \
        " WHERE locktype = 'advisory' AND pid = pg_backend_pid()"              \
        " AND database = (SELECT oid FROM pg_database"                         \
        "  WHERE datname = current_database())"                                \
        " AND classid = (" STORE_AUDIT_LOCK_KEY "::bigint >> 32)::oid"         \
        " AND objid = (" STORE_AUDIT_LOCK_KEY "::bigint & 4294967295)::oid"    \
        " AND objsubid = 1 AND granted)"                                       \
        " THEN true ELSE pg_try_advisory_lock(" STORE_AUDIT_LOCK_KEY ") END"

int store_audit_lead(struct store *st, int64_t timeout_ms, bool *leader,
                     char *errstr, size_t errstr_size)
{
        PGconn *conn = store_pgconn(st);
        PGresult *res;
        char sql[1024];
        int rc = STORE_OK;

        *leader = false;
        if (!conn || PQstatus(conn) != CONNECTION_OK) {
                if (conn)
                        store_reconnect(st);
                if (!conn || PQstatus(conn) != CONNECTION_OK) {
                        snprintf(errstr, errstr_size, "no database connection");
                        return STORE_ERR_CONN;
                }
        }
        snprintf(sql, sizeof(sql),
                 "SET jit = off; SET statement_timeout = %" PRId64 ";"
                 " SET application_name = 'chargeonce audit'; %s",
                 timeout_ms, AUDIT_LEAD_SQL);
        res = PQexec(conn, sql);
        if (PQresultStatus(res) == PGRES_TUPLES_OK && PQntuples(res) == 1) {
                *leader = PQgetvalue(res, 0, 0)[0] == 't';
        } else {
                store_format_error(res, conn, "audit lock", errstr,
                                   errstr_size);
                rc = PQstatus(conn) == CONNECTION_OK ? STORE_ERR
                                                     : STORE_ERR_CONN;
        }
        PQclear(res);
        return rc;
}
