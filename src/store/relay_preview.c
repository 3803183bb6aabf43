/* SPDX-License-Identifier: Apache-2.0 */
/* store/relay_preview: read-only counts for the relay's operator commands
 * (relay_preview.h). */
#include "store/relay_preview.h"
#include "store/store_int.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int one_row(const char *conninfo, const char *what, const char *sql,
                   int nparams, const char *const *values, char out[][40],
                   int ncols, char *errstr, size_t errstr_size)
{
        return store_one_row(conninfo, "chargeonce relay preview", what, sql,
                             nparams, values, out, ncols, errstr, errstr_size);
}

int store_one_row(const char *conninfo, const char *app, const char *what,
                  const char *sql, int nparams, const char *const *values,
                  char out[][40], int ncols, char *errstr, size_t errstr_size)
{
        PGconn *conn = store_pq_connect(conninfo ? conninfo : "", 0, app);
        PGresult *res;
        int rc = STORE_OK;

        if (PQstatus(conn) != CONNECTION_OK) {
                snprintf(errstr, errstr_size, "database connection: %s",
                         PQerrorMessage(conn));
                PQfinish(conn);
                return STORE_ERR_CONN;
        }
        if ((rc = store_pq_session(conn, STORE_SESSION_DAEMON, errstr,
                                   errstr_size)) != STORE_OK) {
                PQfinish(conn);
                return rc;
        }
        res = PQexecParams(conn, sql, nparams, NULL, values, NULL, NULL, 0);
        if (PQresultStatus(res) != PGRES_TUPLES_OK || PQntuples(res) != 1) {
                store_format_error(res, conn, what, errstr, errstr_size);
                rc = store_error_rc(res, conn);
                if (rc == STORE_OK)
                        rc = STORE_ERR;
        } else {
                for (int c = 0; c < ncols && c < PQnfields(res); c++)
                        snprintf(out[c], 40, "%s",
                                 PQgetisnull(res, 0, c)
                                     ? ""
                                     : PQgetvalue(res, 0, c));
        }
        PQclear(res);
        PQfinish(conn);
        return rc;
}

int store_relay_republish_count(const char *conninfo,
                                const struct store_republish *sel,
                                int64_t *rows, char *first, size_t first_size,
                                char *last, size_t last_size, char *errstr,
                                size_t errstr_size)
{
        const char *v[4] = { sel->since, sel->until, sel->event_id,
                             sel->message_key };
        char out[3][40];
        int rc;

        *rows = 0;
        memset(out, 0, sizeof(out));
        /* the selection of store_relay_republish (relay_sql.c,
         * co_republish_candidates), without the id walk: every row it
         * would open again */
        rc = one_row(conninfo, "republish preview",
                     "SELECT count(*),"
                     "       to_char(min(at) AT TIME ZONE 'UTC',"
                     "               'YYYY-MM-DD\"T\"HH24:MI:SS.MS\"Z\"'),"
                     "       to_char(max(at) AT TIME ZONE 'UTC',"
                     "               'YYYY-MM-DD\"T\"HH24:MI:SS.MS\"Z\"')"
                     "  FROM co_republish_candidates($1::timestamptz,"
                     "       $2::timestamptz, $3::text, $4::text, 0)",
                     4, v, out, 3, errstr, errstr_size);
        if (rc != STORE_OK)
                return rc;
        *rows = strtoll(out[0], NULL, 10);
        snprintf(first, first_size, "%s", out[1]);
        snprintf(last, last_size, "%s", out[2]);
        return STORE_OK;
}

int store_relay_unpark_count(const char *conninfo, int64_t id, int64_t *rows,
                             char *errstr, size_t errstr_size)
{
        char num[24], out[1][40];
        const char *v[1] = { num };
        int rc;

        *rows = 0;
        snprintf(num, sizeof(num), "%" PRId64, id);
        memset(out, 0, sizeof(out));
        /* the WHERE of store_relay_unpark (relay_sql.c) */
        rc = one_row(conninfo, "unpark preview",
                     "SELECT count(*) FROM outbox"
                     " WHERE parked_at IS NOT NULL AND published_at IS NULL"
                     "   AND ($1::bigint = 0 OR id = $1::bigint)",
                     1, v, out, 1, errstr, errstr_size);
        if (rc == STORE_OK)
                *rows = strtoll(out[0], NULL, 10);
        return rc;
}
