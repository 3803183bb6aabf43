/* SPDX-License-Identifier: Apache-2.0 */
/*
 * migrate: the schema migration runner (see migrate.h). Each migration runs
 * in one transaction together with its schema_migrations row, so a crash
 * leaves it either applied and recorded or not at all.
 */
#include "store/migrate.h"
#include "store/migrate_plan.h"
#include "store/store_int.h"
#include "util/crypto.h"
#include "util/log.h"
#include "util/xalloc.h"

#include <libpq-fe.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

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

/*
 * Runs sql with text parameters; a result of another status than expect
 * is an error ("<what>: <message>"). Returns the result (owned by the
 * caller) or NULL.
 */
static PGresult *exec_params(PGconn *conn, const char *sql, int nparams,
                             const char *const *params, ExecStatusType expect,
                             const char *what, char *errstr, size_t errstr_size)
{
        PGresult *res =
            PQexecParams(conn, sql, nparams, NULL, params, NULL, NULL, 0);

        if (PQresultStatus(res) != expect) {
                snprintf(errstr, errstr_size, "%s: %s", what,
                         PQresultErrorMessage(res));
                PQclear(res);
                return NULL;
        }
        return res;
}

static int version_of(const char *name)
{
        return atoi(name);
}

/* Migration numbers must be positive and strictly increasing. */
static int check_order_of(const struct migration_src *list, unsigned n,
                          char *errstr, size_t errstr_size)
{
        for (unsigned i = 0; i < n; i++) {
                int v = version_of(list[i].name);
                if (v <= 0 || (i > 0 && v <= version_of(list[i - 1].name))) {
                        snprintf(errstr, errstr_size,
                                 "%s: migration numbers must be positive "
                                 "and strictly increasing",
                                 list[i].name);
                        return -1;
                }
        }
        return 0;
}

static int check_order(char *errstr, size_t errstr_size)
{
        return check_order_of(migrations_embedded, migrations_embedded_n,
                              errstr, errstr_size);
}

/*
 * The migrating session: *conn always set (PQfinish it); no
 * statement_timeout (a migration may take long), lock_timeout and the
 * dead-peer bounds hold. 0, or -1 with errstr set.
 */
static int connect_admin(const char *conninfo, const char *app, PGconn **conn,
                         char *errstr, size_t errstr_size)
{
        *conn = store_pq_connect(conninfo, 0, app);
        if (PQstatus(*conn) != CONNECTION_OK) {
                snprintf(errstr, errstr_size, "database connection: %s",
                         PQerrorMessage(*conn));
                return -1;
        }
        return store_pq_session(*conn, STORE_SESSION_ADMIN, errstr,
                                errstr_size) == STORE_OK
                   ? 0
                   : -1;
}

/*
 * A migration marked MIGRATE_NO_TRANSACTION (migrate_plan.h): every
 * statement checked first (each must be allowed), then run one by one,
 * each its own transaction; an index already built is skipped, an
 * invalid one (an interrupted build) dropped and built again; then its
 * schema_migrations row. Interrupted anywhere, a second run finishes it.
 */
static int apply_no_transaction(PGconn *conn, const struct migration_src *m,
                                const char *const *params, struct log_ctx *lc,
                                char *errstr, size_t errstr_size)
{
        size_t n = migrate_split(m->sql, m->len, m->line0, NULL, 0);
        struct migrate_span *sp = xcalloc(n ? n : 1, sizeof(*sp));
        struct migrate_step st[4];
        /* each statement's step, read once */
        struct migrate_step *first = xcalloc(n ? n : 1, sizeof(*first));
        int r                      = -1;

        migrate_split(m->sql, m->len, m->line0, sp, n);
        for (size_t i = 0; i < n; i++) {
                size_t ns = migrate_plan(m->sql + sp[i].off, sp[i].len,
                                         sp[i].line, st, 4);

                for (size_t k = 0; k < ns && k < 4; k++)
                        if (!migrate_step_no_transaction_ok(&st[k])) {
                                snprintf(errstr, errstr_size,
                                         "%s line %u: %s%s%s is not allowed "
                                         "in a migration without a "
                                         "transaction (only CREATE INDEX "
                                         "CONCURRENTLY IF NOT EXISTS, DROP "
                                         "INDEX CONCURRENTLY IF EXISTS, "
                                         "VALIDATE CONSTRAINT, ANALYZE, "
                                         "COMMENT)",
                                         m->name, st[k].line, st[k].what,
                                         *st[k].target ? " " : "",
                                         st[k].target);
                                goto done;
                        }
                if (ns == 0 || ns > 4) {
                        snprintf(errstr, errstr_size,
                                 "%s line %u: not one statement this "
                                 "migration may run without a transaction",
                                 m->name, sp[i].line);
                        goto done;
                }
                first[i] = st[0];
        }
        for (size_t i = 0; i < n; i++) {
                char *sql = xstrndup(m->sql + sp[i].off, sp[i].len);
                const char *iname[1];
                PGresult *res;
                int rc;

                if (!strcmp(first[i].what, "CREATE INDEX CONCURRENTLY")) {
                        iname[0] = first[i].index;
                        res      = exec_params(conn,
                                               "SELECT i.indisvalid FROM pg_index"
                                                    " i WHERE i.indexrelid ="
                                                    " to_regclass(quote_ident($1))",
                                               1, iname, PGRES_TUPLES_OK, m->name,
                                               errstr, errstr_size);
                        if (!res) {
                                free(sql);
                                goto done;
                        }
                        if (PQntuples(res) == 1 &&
                            !strcmp(PQgetvalue(res, 0, 0), "t")) {
                                PQclear(res);
                                free(sql);
                                log_info(lc, "%s: index %s is built already",
                                         m->name, first[i].index);
                                continue;
                        }
                        if (PQntuples(res) == 1) {
                                char *q =
                                    PQescapeIdentifier(conn, first[i].index,
                                                       strlen(first[i].index));
                                char drop[256];

                                snprintf(drop, sizeof(drop),
                                         "DROP INDEX CONCURRENTLY IF EXISTS "
                                         "%s",
                                         q ? q : "");
                                PQfreemem(q);
                                log_warn(lc,
                                         "%s: index %s was left invalid by "
                                         "an interrupted build: dropped, "
                                         "built again",
                                         m->name, first[i].index);
                                if (exec_ok(conn, drop, m->name, errstr,
                                            errstr_size) < 0) {
                                        PQclear(res);
                                        free(sql);
                                        goto done;
                                }
                        }
                        PQclear(res);
                }
                rc = exec_ok(conn, sql, m->name, errstr, errstr_size);
                free(sql);
                if (rc < 0)
                        goto done;
        }
        {
                PGresult *res = exec_params(
                    conn,
                    "INSERT INTO schema_migrations (version, name, sha256)"
                    " VALUES ($1::integer, $2, $3)",
                    3, params, PGRES_COMMAND_OK, m->name, errstr, errstr_size);

                if (!res)
                        goto done;
                PQclear(res);
        }
        r = 0;
done:
        free(first);
        free(sp);
        return r;
}

bool store_migrate_no_transaction(const struct migration_src *m)
{
        size_t k = strlen(MIGRATE_NO_TRANSACTION);

        return m->len >= k && !strncmp(m->sql, MIGRATE_NO_TRANSACTION, k);
}

/*
 * Is m recorded in schema_migrations (1) or not (0)? -1 with errstr set
 * on an error, or when it is recorded with another checksum than m's
 * (hex: m's). vbuf: m's version as text.
 */
static int recorded(PGconn *conn, const struct migration_src *m,
                    const char *vbuf, char hex[2 * CRYPTO_SHA256_LEN + 1],
                    char *errstr, size_t errstr_size)
{
        unsigned char d[CRYPTO_SHA256_LEN];
        const char *params[1] = { vbuf };
        PGresult *res;
        int r = 0;

        crypto_sha256(m->sql, m->len, d);
        crypto_hex(d, sizeof(d), hex);
        res = exec_params(conn,
                          "SELECT name, sha256 FROM schema_migrations"
                          " WHERE version = $1::integer",
                          1, params, PGRES_TUPLES_OK, m->name, errstr,
                          errstr_size);
        if (!res)
                return -1;
        if (PQntuples(res) == 1) {
                r = 1;
                if (strcmp(PQgetvalue(res, 0, 1), hex) != 0) {
                        snprintf(errstr, errstr_size,
                                 "%s: changed after it was applied "
                                 "(recorded as %s); add a new "
                                 "migration instead",
                                 m->name, PQgetvalue(res, 0, 0));
                        r = -1;
                }
        }
        PQclear(res);
        return r;
}

/*
 * Applies m unless schema_migrations has it (then its recorded checksum
 * must match): the migration and its row in one transaction. Counts it in
 * report. 0, or -1 with errstr set.
 */
static int apply_one(PGconn *conn, const struct migration_src *m,
                     struct migrate_report *report, struct log_ctx *lc,
                     char *errstr, size_t errstr_size)
{
        char hex[2 * CRYPTO_SHA256_LEN + 1], vbuf[16];
        const char *params[3];
        PGresult *res;
        int rec;

        snprintf(vbuf, sizeof(vbuf), "%d", version_of(m->name));
        params[0] = vbuf;
        params[1] = m->name;
        params[2] = hex;
        rec       = recorded(conn, m, vbuf, hex, errstr, errstr_size);
        if (rec < 0)
                return -1;
        if (rec == 1) {
                report->present++;
                return 0;
        }

        if (store_migrate_no_transaction(m)) {
                if (apply_no_transaction(conn, m, params, lc, errstr,
                                         errstr_size) < 0)
                        return -1;
                report->applied++;
                log_info(lc, "applied migration %s", m->name);
                return 0;
        }
        if (exec_ok(conn, "BEGIN", m->name, errstr, errstr_size) < 0)
                return -1;
        if (exec_ok(conn, m->sql, m->name, errstr, errstr_size) < 0) {
                PQclear(PQexec(conn, "ROLLBACK"));
                return -1;
        }
        res = exec_params(conn,
                          "INSERT INTO schema_migrations"
                          " (version, name, sha256)"
                          " VALUES ($1::integer, $2, $3)",
                          3, params, PGRES_COMMAND_OK, m->name, errstr,
                          errstr_size);
        if (!res) {
                PQclear(PQexec(conn, "ROLLBACK"));
                return -1;
        }
        PQclear(res);
        if (exec_ok(conn, "COMMIT", m->name, errstr, errstr_size) < 0)
                return -1;
        report->applied++;
        log_info(lc, "applied migration %s", m->name);
        return 0;
}

int store_migrate_run(const char *conninfo, struct migrate_report *report,
                      char *errstr, size_t errstr_size)
{
        return store_migrate_run_list(conninfo, migrations_embedded,
                                      migrations_embedded_n, report, errstr,
                                      errstr_size);
}

/*
 * The migrate lock, waited for by trying it every 100 ms: never by
 * pg_advisory_lock, whose statement would keep its snapshot while it
 * waits, and a CREATE INDEX CONCURRENTLY of the holder waits for every
 * snapshot older than its build to end: each would wait for the other
 * (PostgreSQL's deadlock detector then fails one).
 */
static int take_lock(PGconn *conn, struct log_ctx *lc, char *errstr,
                     size_t errstr_size)
{
        for (long tries = 0;; tries++) {
                PGresult *res = PQexec(
                    conn, "SELECT pg_try_advisory_lock(" MIGRATE_LOCK_KEY ")");
                bool got;

                if (PQresultStatus(res) != PGRES_TUPLES_OK ||
                    PQntuples(res) != 1) {
                        snprintf(errstr, errstr_size, "advisory lock: %s",
                                 PQerrorMessage(conn));
                        PQclear(res);
                        return -1;
                }
                got = PQgetvalue(res, 0, 0)[0] == 't';
                PQclear(res);
                if (got)
                        return 0;
                if (tries % 100 == 0)
                        log_info(lc, "another chargeonce migrate holds the "
                                     "migrate lock: waiting for it");
                {
                        struct timespec ts = { 0, 100 * 1000000L };

                        nanosleep(&ts, NULL);
                }
        }
}

int store_migrate_run_list(const char *conninfo,
                           const struct migration_src *list, unsigned n,
                           struct migrate_report *report, char *errstr,
                           size_t errstr_size)
{
        PGconn *conn;
        int r             = -1;
        bool locked       = false;
        struct log_ctx lc = LOG_CTX_INIT;

        lc.component    = "migrate";
        report->applied = report->present = 0;
        if (check_order_of(list, n, errstr, errstr_size) < 0)
                return -1;

        if (connect_admin(conninfo, "chargeonce migrate", &conn, errstr,
                          errstr_size) < 0)
                goto done;
        /* quiet NOTICEs such as "relation already exists, skipping" */
        if (exec_ok(conn, "SET client_min_messages = warning", "set", errstr,
                    errstr_size) < 0)
                goto done;
        if (take_lock(conn, &lc, errstr, errstr_size) < 0)
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

        for (unsigned i = 0; i < n; i++)
                if (apply_one(conn, &list[i], report, &lc, errstr,
                              errstr_size) < 0)
                        goto done;
        r = 0;
done:
        if (locked && PQstatus(conn) == CONNECTION_OK)
                PQclear(PQexec(
                    conn, "SELECT pg_advisory_unlock(" MIGRATE_LOCK_KEY ")"));
        PQfinish(conn);
        return r;
}

/* Adds name to p's relations once, with its size read on conn. */
static int pending_rel(PGconn *conn, struct migrate_pending *p,
                       const char *name, char *errstr, size_t errstr_size)
{
        struct migrate_rel *r;
        const char *params[1] = { name };
        PGresult *res;

        if (!*name)
                return 0;
        for (size_t i = 0; i < p->n_rels; i++)
                if (!strcmp(p->rels[i].name, name))
                        return 0;
        p->rels = xrealloc(p->rels, (p->n_rels + 1) * sizeof(*p->rels));
        r       = &p->rels[p->n_rels++];
        memset(r, 0, sizeof(*r));
        snprintf(r->name, sizeof(r->name), "%s", name);
        res = exec_params(conn,
                          "SELECT greatest(c.reltuples, 0)::bigint,"
                          " pg_total_relation_size(c.oid), c.relkind"
                          "  FROM pg_class c WHERE c.oid = to_regclass($1)",
                          1, params, PGRES_TUPLES_OK, "relation size", errstr,
                          errstr_size);
        if (!res)
                return -1;
        if (PQntuples(res) == 1) {
                r->exists = true;
                r->rows   = strtoll(PQgetvalue(res, 0, 0), NULL, 10);
                r->bytes  = strtoll(PQgetvalue(res, 0, 1), NULL, 10);
                r->kind   = PQgetvalue(res, 0, 2)[0];
        }
        PQclear(res);
        return 0;
}

int store_migrate_pending(const char *conninfo, struct migrate_pending *out,
                          char *errstr, size_t errstr_size)
{
        PGconn *conn;
        PGresult *res = NULL;
        int r         = -1;
        bool have     = false;

        memset(out, 0, sizeof(*out));
        if (check_order(errstr, errstr_size) < 0)
                return -1;
        if (connect_admin(conninfo, "chargeonce migrate --plan", &conn, errstr,
                          errstr_size) < 0)
                goto done;
        res = exec_params(
            conn, "SELECT to_regclass('schema_migrations') IS NOT NULL", 0,
            NULL, PGRES_TUPLES_OK, "schema_migrations", errstr, errstr_size);
        if (!res)
                goto done;
        have = !strcmp(PQgetvalue(res, 0, 0), "t");
        PQclear(res);
        res    = NULL;
        out->m = xcalloc(migrations_embedded_n ? migrations_embedded_n : 1,
                         sizeof(*out->m));
        for (unsigned i = 0; i < migrations_embedded_n; i++) {
                const struct migration_src *m = &migrations_embedded[i];
                char hex[2 * CRYPTO_SHA256_LEN + 1], vbuf[16];
                struct migrate_step *steps;
                size_t ns;
                int rec = 0;

                snprintf(vbuf, sizeof(vbuf), "%d", version_of(m->name));
                if (have && (rec = recorded(conn, m, vbuf, hex, errstr,
                                            errstr_size)) < 0)
                        goto done;
                if (rec == 1)
                        continue;
                out->m[out->n++] = m;
                steps = migrate_plan_all(m->sql, m->len, m->line0, &ns);
                for (size_t k = 0; k < ns; k++)
                        if (pending_rel(conn, out, steps[k].target, errstr,
                                        errstr_size) < 0) {
                                free(steps);
                                goto done;
                        }
                free(steps);
        }
        if (have) {
                res = exec_params(conn,
                                  "SELECT coalesce(max(version), 0) FROM"
                                  " schema_migrations",
                                  0, NULL, PGRES_TUPLES_OK, "schema_migrations",
                                  errstr, errstr_size);
                if (!res)
                        goto done;
                out->db_version = atoi(PQgetvalue(res, 0, 0));
                PQclear(res);
                res = NULL;
        }
        r = 0;
done:
        PQclear(res);
        PQfinish(conn);
        if (r < 0)
                store_migrate_pending_free(out);
        return r;
}

void store_migrate_pending_free(struct migrate_pending *p)
{
        free(p->m);
        free(p->rels);
        memset(p, 0, sizeof(*p));
}

int store_migrate_known_version(void)
{
        return migrations_embedded_n
                   ? version_of(
                         migrations_embedded[migrations_embedded_n - 1].name)
                   : 0;
}

void store_schema_explain(struct store *st, char *errstr, size_t errstr_size)
{
        store_schema_explain_conn(store_pgconn(st), errstr, errstr_size);
}

void store_schema_explain_conn(PGconn *conn, char *errstr, size_t errstr_size)
{
        PGresult *res;
        int known = store_migrate_known_version(), db = -1;
        size_t len = strlen(errstr);

        res = PQexec(conn, "SELECT coalesce(max(version), 0) FROM"
                           " schema_migrations");
        if (PQresultStatus(res) == PGRES_TUPLES_OK && PQntuples(res) == 1)
                db = atoi(PQgetvalue(res, 0, 0));
        PQclear(res);
        if (len >= errstr_size)
                return;
        if (db < 0)
                snprintf(errstr + len, errstr_size - len,
                         "; the database has no schema_migrations this "
                         "binary can read (it knows migrations up to %04d):"
                         " run `chargeonce migrate`",
                         known);
        else if (db > known)
                snprintf(errstr + len, errstr_size - len,
                         "; the database's schema is at migration %04d, "
                         "this binary knows migrations up to %04d: it is "
                         "older than the schema; run a binary of the "
                         "schema's release (docs/upgrading.md)",
                         db, known);
        else if (db < known)
                snprintf(errstr + len, errstr_size - len,
                         "; the database's schema is at migration %04d, "
                         "this binary needs %04d: run `chargeonce migrate`",
                         db, known);
        else
                snprintf(errstr + len, errstr_size - len,
                         "; the database's schema is at migration %04d, as "
                         "this binary expects: the database was changed by "
                         "hand, or a privilege is missing",
                         db);
}
