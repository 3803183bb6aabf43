/*
 * migrate: the schema migration runner (see migrate.h). Each migration runs
 * in one transaction together with its schema_migrations row, so a crash
 * leaves it either applied and recorded or not at all.
 */
#include "store/migrate.h"
#include "util/crypto.h"
#include "util/log.h"

#include <libpq-fe.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* pg_advisory_lock key: "chargeonce migrate" */
#define MIGRATE_LOCK_KEY "7461290001"

static int exec_ok(PGconn *conn, const char *sql, const char *what,
                   char *errstr, size_t errstr_size)
{
        PGresult *res     = PQexec(conn, sql);
        ExecStatusType st = PQresultStatus(res);
        int r             = 0;

        if (st != PGRES_COMMAND_OK && st != PGRES_TUPLES_OK) {
                snprintf(errstr, errstr_size, "%s: %s", what,
                         PQresultErrorMessage(res));
                r = -1;
        }
        PQclear(res);
        return r;
}

static int version_of(const char *name)
{
        return atoi(name);
}

int migrate_run(const char *conninfo, struct migrate_report *report,
                char *errstr, size_t errstr_size)
{
        PGconn *conn;
        PGresult *res     = NULL;
        int r             = -1;
        bool locked       = false;
        struct log_ctx lc = LOG_CTX_INIT;

        lc.component    = "migrate";
        report->applied = report->present = 0;

        for (unsigned i = 0; i < migrations_embedded_n; i++) {
                int v = version_of(migrations_embedded[i].name);
                if (v <= 0 ||
                    (i > 0 &&
                     v <= version_of(migrations_embedded[i - 1].name))) {
                        snprintf(errstr, errstr_size,
                                 "%s: migration numbers must be positive "
                                 "and strictly increasing",
                                 migrations_embedded[i].name);
                        return -1;
                }
        }

        conn = PQconnectdb(conninfo);
        if (PQstatus(conn) != CONNECTION_OK) {
                snprintf(errstr, errstr_size, "database connection: %s",
                         PQerrorMessage(conn));
                goto done;
        }
        /* quiet NOTICEs such as "relation already exists, skipping" */
        if (exec_ok(conn, "SET client_min_messages = warning", "set", errstr,
                    errstr_size) < 0)
                goto done;
        if (exec_ok(conn, "SELECT pg_advisory_lock(" MIGRATE_LOCK_KEY ")",
                    "advisory lock", errstr, errstr_size) < 0)
                goto done;
        locked = true;
        if (exec_ok(conn,
                    "CREATE TABLE IF NOT EXISTS schema_migrations ("
                    " version integer PRIMARY KEY,"
                    " name text NOT NULL,"
                    " sha256 text NOT NULL,"
                    " applied_at timestamptz NOT NULL DEFAULT now())",
                    "schema_migrations", errstr, errstr_size) < 0)
                goto done;

        for (unsigned i = 0; i < migrations_embedded_n; i++) {
                const struct migration_src *m = &migrations_embedded[i];
                unsigned char d[CRYPTO_SHA256_LEN];
                char hex[2 * CRYPTO_SHA256_LEN + 1], vbuf[16];
                const char *params[3];

                crypto_sha256(m->sql, m->len, d);
                crypto_hex(d, sizeof(d), hex);
                snprintf(vbuf, sizeof(vbuf), "%d", version_of(m->name));
                params[0] = vbuf;
                res       = PQexecParams(conn,
                                         "SELECT name, sha256 FROM schema_migrations"
                                               " WHERE version = $1::integer",
                                         1, NULL, params, NULL, NULL, 0);
                if (PQresultStatus(res) != PGRES_TUPLES_OK) {
                        snprintf(errstr, errstr_size, "%s: %s", m->name,
                                 PQresultErrorMessage(res));
                        goto done;
                }
                if (PQntuples(res) == 1) {
                        if (strcmp(PQgetvalue(res, 0, 1), hex) != 0) {
                                snprintf(errstr, errstr_size,
                                         "%s: changed after it was applied "
                                         "(recorded as %s); add a new "
                                         "migration instead",
                                         m->name, PQgetvalue(res, 0, 0));
                                goto done;
                        }
                        PQclear(res);
                        res = NULL;
                        report->present++;
                        continue;
                }
                PQclear(res);
                res = NULL;

                if (exec_ok(conn, "BEGIN", m->name, errstr, errstr_size) < 0)
                        goto done;
                if (exec_ok(conn, m->sql, m->name, errstr, errstr_size) < 0) {
                        PQclear(PQexec(conn, "ROLLBACK"));
                        goto done;
                }
                params[1] = m->name;
                params[2] = hex;
                res       = PQexecParams(conn,
                                         "INSERT INTO schema_migrations"
                                               " (version, name, sha256)"
                                               " VALUES ($1::integer, $2, $3)",
                                         3, NULL, params, NULL, NULL, 0);
                if (PQresultStatus(res) != PGRES_COMMAND_OK) {
                        snprintf(errstr, errstr_size, "%s: %s", m->name,
                                 PQresultErrorMessage(res));
                        PQclear(PQexec(conn, "ROLLBACK"));
                        goto done;
                }
                PQclear(res);
                res = NULL;
                if (exec_ok(conn, "COMMIT", m->name, errstr, errstr_size) < 0)
                        goto done;
                report->applied++;
                log_info(&lc, "applied migration %s", m->name);
        }
        r = 0;
done:
        PQclear(res);
        if (locked && PQstatus(conn) == CONNECTION_OK)
                PQclear(PQexec(
                    conn, "SELECT pg_advisory_unlock(" MIGRATE_LOCK_KEY ")"));
        PQfinish(conn);
        return r;
}
