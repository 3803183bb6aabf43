/* SPDX-License-Identifier: Apache-2.0 */
/*
 * relay_sql: the outbox relay's statements (see relay_sql.h). Every call
 * is one short statement outside BEGIN (its own transaction); nothing here
 * holds a row lock across a network wait of the relay.
 *
 * Never marks a row that the caller did not name, never moves
 * relay_cursor past an id a transaction in flight may commit, never puts
 * a message key or a payload into errstr.
 */
#include "payment/result.h"
#include "store/relay_sql.h"
#include "store/result_format.h"
#include "store/store_int.h"

#include "util/log.h"
#include "util/timeutil.h"
#include "util/xalloc.h"

#include <libpq-fe.h>

#include <inttypes.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define STR_(x) #x
#define STR(x)  STR_(x)

struct store_relay {
        char *conninfo; /* owned */
        PGconn *work;   /* owned: fetch, mark, cleanup */
        PGconn *sess;   /* owned: advisory locks and LISTEN */
        int nshards;
        bool held[STORE_RELAY_MAX_SHARDS];
        int nheld;
        unsigned cursor; /* where the next search for free shards starts */
        int64_t logged_through; /* relay_progress: the last through written */
        int64_t logged_ms;      /* and when (time_mono_ms) */
        uint32_t prepared;      /* bit h: hot statement h prepared on work */
};

/* relay_progress (0027) gets an entry at most this often */
#define PROGRESS_EVERY_MS 1000


/* res if it holds rows or a command's success (*rc STORE_OK), else
 * NULL (res cleared) with *rc set as store_error_rc says. */
static PGresult *checked(PGconn *conn, const char *what, PGresult *res, int *rc,
                         char *errstr, size_t errstr_size)
{
        ExecStatusType st = PQresultStatus(res);

        if (st == PGRES_TUPLES_OK || st == PGRES_COMMAND_OK) {
                *rc = STORE_OK;
                return res;
        }
        store_format_error(res, conn, what, errstr, errstr_size);
        *rc = store_error_rc(res, conn);
        PQclear(res);
        return NULL;
}

/*
 * Runs sql with text parameters. Returns the result (owned by the caller)
 * or NULL with *rc set as store_error_rc says.
 */
static PGresult *run(PGconn *conn, const char *what, const char *sql,
                     int nparams, const char *const *values, int *rc,
                     char *errstr, size_t errstr_size)
{
        PGresult *res;

        if (!conn || PQstatus(conn) != CONNECTION_OK) {
                snprintf(errstr, errstr_size, "%s: no database connection",
                         what);
                *rc = STORE_ERR_CONN;
                return NULL;
        }
        res = PQexecParams(conn, sql, nparams, NULL, values, NULL, NULL, 0);
        return checked(conn, what, res, rc, errstr, errstr_size);
}

static int run_ok(PGconn *conn, const char *what, const char *sql, char *errstr,
                  size_t errstr_size)
{
        PGresult *res;
        ExecStatusType st;
        int rc = STORE_OK;

        /* PQexec: sql may hold several commands (no parameters) */
        res = PQexec(conn, sql);
        st  = PQresultStatus(res);
        if (st != PGRES_TUPLES_OK && st != PGRES_COMMAND_OK) {
                store_format_error(res, conn, what, errstr, errstr_size);
                rc = store_error_rc(res, conn);
        }
        PQclear(res);
        return rc;
}

/*
 * Runs sql (see run) and reads one number of its result into *out: the
 * rows it changed when changed_rows, else the first column of its first
 * row (*out untouched when there is no row).
 */
static int run_number(PGconn *conn, const char *what, const char *sql,
                      int nparams, const char *const *values, bool changed_rows,
                      int64_t *out, char *errstr, size_t errstr_size)
{
        PGresult *res;
        int rc;

        res = run(conn, what, sql, nparams, values, &rc, errstr, errstr_size);
        if (!res)
                return rc;
        if (changed_rows)
                *out = strtoll(PQcmdTuples(res), NULL, 10);
        else if (PQntuples(res) > 0)
                *out = strtoll(PQgetvalue(res, 0, 0), NULL, 10);
        PQclear(res);
        return STORE_OK;
}

/*
 * The statements of every round, prepared once per work connection (a
 * named statement): parsing and planning the fetch cost PostgreSQL more
 * than running it (0.40 against 0.18 ms a fetch of 40 rows, pgbench -M
 * extended against -M prepared; docs/benchmarks.md). Their generic plans
 * are the custom ones: the fetch reads the primary key from $6 up to the
 * outbox sequence's value (a range PostgreSQL estimates small without
 * the values), the others one row of relay_cursor.
 */
enum hot_stmt {
        HOT_CURSOR,
        HOT_FETCH,
        HOT_RESOLVED,
        HOT_SEQ,
        HOT_ADVANCE,
        HOT_MARK,
        HOT_N
};

static const struct store_stmt hot_stmts[HOT_N];

/*
 * run() of hot statement h on the work connection, prepared first if
 * this connection has not prepared it yet (store_prepare_once).
 */
static PGresult *run_hot(struct store_relay *sr, enum hot_stmt h,
                         const char *const *values, int *rc, char *errstr,
                         size_t errstr_size)
{
        const struct store_stmt *d = &hot_stmts[h];
        PGresult *res;

        if (!sr->work || PQstatus(sr->work) != CONNECTION_OK) {
                snprintf(errstr, errstr_size, "%s: no database connection",
                         d->name);
                *rc = STORE_ERR_CONN;
                return NULL;
        }
        if ((*rc = store_prepare_once(sr->work, &sr->prepared, d, errstr,
                                      errstr_size)) != STORE_OK)
                return NULL;
        res = PQexecPrepared(sr->work, d->name, d->nparams, values, NULL, NULL,
                             0);
        if (store_error_lost_prepared(res)) {
                /* the next store_relay_ensure opens a new work session */
                PQfinish(sr->work);
                sr->work     = NULL;
                sr->prepared = 0;
                snprintf(errstr, errstr_size,
                         "%s: the session lost its prepared statements",
                         d->name);
                *rc = STORE_ERR;
                PQclear(res);
                return NULL;
        }
        return checked(sr->work, d->name, res, rc, errstr, errstr_size);
}

/* The array literal "{a,b,c}" of v[0..n) into a (store_pgarr_free). Aborts if
 * it cannot be built (over 1 GiB, far beyond any n given here). */
static const char *i64_array(struct pgarr *a, const int64_t *v, size_t n)
{
        const char *s;

        store_pgarr_init(a);
        for (size_t i = 0; i < n; i++)
                store_pgarr_i64(a, v[i]);
        s = store_pgarr_finish(a);
        if (!s)
                abort();
        return s;
}

static PGconn *connect_one(const char *conninfo, const char *app, char *errstr,
                           size_t errstr_size)
{
        PGconn *conn = store_pq_connect(conninfo, 0, app);
        char sql[128];

        if (!conn || PQstatus(conn) != CONNECTION_OK) {
                snprintf(errstr, errstr_size, "database connection: %s",
                         conn ? PQerrorMessage(conn) : "out of memory");
                PQfinish(conn);
                return NULL;
        }
        if (store_pq_session(conn, STORE_SESSION_DAEMON, errstr, errstr_size) !=
            STORE_OK) {
                PQfinish(conn);
                return NULL;
        }
        /* one statement per call: run() uses the extended protocol.
         * No bitmap scans: the relay's fetch reads the primary key in id
         * order from relay_cursor.through and stops at its LIMIT, where a
         * bitmap scan would visit every page above it first. No
         * parallel plans: the relay's statements read a few pages, and
         * starting workers costs more than that (tens of ms). */
        snprintf(sql, sizeof(sql), "SET application_name = '%s'", app);
        if (run_ok(conn, "database setup", "SET enable_bitmapscan = off",
                   errstr, errstr_size) != STORE_OK ||
            run_ok(conn, "database setup",
                   "SET max_parallel_workers_per_gather = 0", errstr,
                   errstr_size) != STORE_OK ||
            run_ok(conn, "database setup", sql, errstr, errstr_size) !=
                STORE_OK) {
                PQfinish(conn);
                return NULL;
        }
        return conn;
}

/* A new session: the member lock (released when the session ends) and
 * the LISTEN. Holds no shard. */
static int session_open(struct store_relay *sr, char *errstr,
                        size_t errstr_size)
{
        PQfinish(sr->sess);
        memset(sr->held, 0, sizeof(sr->held));
        sr->nheld = 0;
        sr->sess = connect_one(sr->conninfo, "chargeonce relay session", errstr,
                               errstr_size);
        if (!sr->sess)
                return STORE_ERR_CONN;
        if (run_ok(sr->sess, "relay member lock",
                   "SELECT pg_advisory_lock(" STR(
                       STORE_RELAY_LOCK_MEMBER) ", pg_backend_pid())",
                   errstr, errstr_size) != STORE_OK ||
            run_ok(sr->sess, "listen", "LISTEN " STORE_RELAY_CHANNEL, errstr,
                   errstr_size) != STORE_OK) {
                PQfinish(sr->sess);
                sr->sess = NULL;
                return STORE_ERR_CONN;
        }
        return STORE_OK;
}

struct store_relay *store_relay_connect(const char *conninfo, int nshards,
                                        char *errstr, size_t errstr_size)
{
        struct store_relay *sr = xcalloc(1, sizeof(*sr));

        if (nshards < 1 || nshards > STORE_RELAY_MAX_SHARDS) {
                snprintf(errstr, errstr_size, "relay.shards: out of range");
                free(sr);
                return NULL;
        }
        sr->nshards        = nshards;
        sr->conninfo       = xstrdup(conninfo ? conninfo : "");
        sr->cursor         = (unsigned)rand();
        sr->logged_through = -1;
        sr->work =
            connect_one(sr->conninfo, STORE_RELAY_APP, errstr, errstr_size);
        if (!sr->work || session_open(sr, errstr, errstr_size) != STORE_OK) {
                store_relay_destroy(sr);
                return NULL;
        }
        return sr;
}

void store_relay_destroy(struct store_relay *sr)
{
        if (!sr)
                return;
        PQfinish(sr->work);
        PQfinish(sr->sess);
        free(sr->conninfo);
        free(sr);
}

int store_relay_ensure(struct store_relay *sr, char *errstr, size_t errstr_size)
{
        struct log_ctx lc = LOG_CTX_INIT;

        lc.component = "relay";
        if (!sr->work || PQstatus(sr->work) != CONNECTION_OK) {
                PQfinish(sr->work);
                sr->prepared = 0;
                sr->work = connect_one(sr->conninfo, STORE_RELAY_APP, errstr,
                                       errstr_size);
                if (!sr->work)
                        return STORE_ERR_CONN;
                log_warn(&lc, "database work connection re-established");
        }
        if (!sr->sess || PQstatus(sr->sess) != CONNECTION_OK) {
                if (session_open(sr, errstr, errstr_size) != STORE_OK)
                        return STORE_ERR_CONN;
                log_warn(&lc, "database session re-established; shards are "
                              "taken again");
        }
        return STORE_OK;
}

int store_relay_held(const struct store_relay *sr)
{
        return sr->nheld;
}

static int lock_call(struct store_relay *sr, const char *fn, int shard,
                     bool *got, char *errstr, size_t errstr_size)
{
        char sql[128], num[16];
        const char *v[1] = { num };
        PGresult *res;
        int rc;

        snprintf(num, sizeof(num), "%d", shard);
        snprintf(sql, sizeof(sql),
                 "SELECT %s(" STR(STORE_RELAY_LOCK_SHARD) ", $1::int)", fn);
        res = run(sr->sess, fn, sql, 1, v, &rc, errstr, errstr_size);
        if (!res)
                return rc;
        *got = PQntuples(res) == 1 && !strcmp(PQgetvalue(res, 0, 0), "t");
        PQclear(res);
        return STORE_OK;
}

int store_relay_rebalance(struct store_relay *sr, int *held, int *members,
                          char *errstr, size_t errstr_size)
{
        PGresult *res = NULL;
        bool taken[STORE_RELAY_MAX_SHARDS];
        int rc, nmem, target;

        /* live relays (member locks) and shards held by anyone */
        res = run(sr->sess, "relay members",
                  "SELECT classid::bigint, objid::bigint FROM pg_locks"
                  " WHERE locktype = 'advisory' AND granted AND objsubid = 2"
                  "   AND database = (SELECT oid FROM pg_database"
                  "                    WHERE datname = current_database())"
                  "   AND classid IN (" STR(STORE_RELAY_LOCK_MEMBER) ", " STR(
                      STORE_RELAY_LOCK_SHARD) ")",
                  0, NULL, &rc, errstr, errstr_size);
        if (!res)
                return rc;
        memset(taken, 0, sizeof(taken));
        nmem = 0;
        for (int r = 0; r < PQntuples(res); r++) {
                long long cls = atoll(PQgetvalue(res, r, 0));
                long long obj = atoll(PQgetvalue(res, r, 1));
                if (cls == STORE_RELAY_LOCK_MEMBER)
                        nmem++;
                else if (obj >= 0 && obj < sr->nshards)
                        taken[obj] = true;
        }
        PQclear(res);
        if (nmem < 1)
                nmem = 1;
        target = (sr->nshards + nmem - 1) / nmem;

        /* above the share: give back the highest shards */
        for (int s = sr->nshards - 1; s >= 0 && sr->nheld > target; s--) {
                bool ok = false;
                if (!sr->held[s])
                        continue;
                rc = lock_call(sr, "pg_advisory_unlock", s, &ok, errstr,
                               errstr_size);
                if (rc != STORE_OK)
                        return rc;
                sr->held[s] = false;
                sr->nheld--;
        }
        /* below it: try the free ones, from a moving start */
        for (int i = 0; i < sr->nshards && sr->nheld < target; i++) {
                int s =
                    (int)((sr->cursor + (unsigned)i) % (unsigned)sr->nshards);
                bool ok = false;
                if (sr->held[s] || taken[s])
                        continue;
                rc = lock_call(sr, "pg_try_advisory_lock", s, &ok, errstr,
                               errstr_size);
                if (rc != STORE_OK)
                        return rc;
                if (ok) {
                        sr->held[s] = true;
                        sr->nheld++;
                }
        }
        sr->cursor++;
        *held    = sr->nheld;
        *members = nmem;
        return STORE_OK;
}

void store_relay_batch_clear(struct store_relay_batch *b)
{
        PQclear(b->res_);
        for (size_t i = 0; i < b->n; i++)
                free(b->rows[i].composed_);
        free(b->rows);
        memset(b, 0, sizeof(*b));
}

/*
 * A row stored compact (0028: payload NULL): its message rebuilt from its
 * columns and its detail (payment/result.h), the bytes the writer's
 * payment_result_build gave. A detail that does not give a result (never
 * written so by this code; a hand-made or damaged row) leaves the row
 * unbuildable with the reason: the relay parks it, as it parks a message
 * the broker would never take.
 */
static void compose_row(struct store_relay_row *row, const PGresult *res, int r)
{
        struct payment_result_row pr = {
                .event_id        = PQgetvalue(res, r, 1),
                .intent_event_id = PQgetvalue(res, r, 3),
                .tenant_id       = PQgetvalue(res, r, 8),
                .idempotency_key = PQgetvalue(res, r, 9),
                .payment_id =
                    PQgetisnull(res, r, 10) ? NULL : PQgetvalue(res, r, 10),
                .status          = PQgetvalue(res, r, 4),
                .replayed        = strcmp(PQgetvalue(res, r, 11), "t") == 0,
                .resolves_review = strcmp(PQgetvalue(res, r, 12), "t") == 0,
        };
        char err[128];

        row->payload     = "";
        row->payload_len = 0;
        if (PQgetisnull(res, r, 7)) {
                snprintf(row->unbuildable, sizeof(row->unbuildable),
                         "the row has neither payload nor detail");
                return;
        }
        if (payment_result_compose(
                &pr, PQgetvalue(res, r, 7), (size_t)PQgetlength(res, r, 7),
                &row->composed_, &row->payload_len, err, sizeof(err)) != 0) {
                snprintf(row->unbuildable, sizeof(row->unbuildable),
                         "its stored result cannot be built (%s)", err);
                return;
        }
        row->payload = row->composed_;
}

/*
 * relay_cursor.through and done (0027: the ids published above through)
 * as text into through and done (done: malloc'd, the caller frees it),
 * read in a statement of their own, from one version of the row: the
 * statements that read above through get both as parameters, so that the
 * planner sees the value of through (behind a subquery it guesses a
 * third of the outbox, and on a big one plans a parallel scan: 40-80 ms
 * a fetch).
 */
static int cursor_read(struct store_relay *sr, char *through, size_t size,
                       char **done, char *errstr, size_t errstr_size)
{
        PGresult *res;
        int rc;

        *done = NULL;
        res   = run_hot(sr, HOT_CURSOR, NULL, &rc, errstr, errstr_size);
        if (!res)
                return rc;
        if (PQntuples(res) != 1) {
                PQclear(res);
                snprintf(errstr, errstr_size,
                         "relay cursor: no relay_cursor row (0021)");
                return STORE_ERR_SCHEMA;
        }
        snprintf(through, size, "%s", PQgetvalue(res, 0, 0));
        *done = xstrdup(PQgetvalue(res, 0, 1));
        PQclear(res);
        return STORE_OK;
}

int store_relay_fetch(struct store_relay *sr, size_t max, size_t window,
                      const int64_t *skip, size_t nskip,
                      struct store_relay_batch *b, char *errstr,
                      size_t errstr_size)
{
        char nsh[16], lim[24], win[24], through[24], *done = NULL;
        struct pgarr shards, skipped;
        const char *v[7];
        int64_t list[STORE_RELAY_MAX_SHARDS];
        size_t nl = 0;
        PGresult *res;
        int rc = STORE_OK, n;

        store_relay_batch_clear(b);
        if (sr->nheld == 0)
                return STORE_OK;
        if ((rc = cursor_read(sr, through, sizeof(through), &done, errstr,
                              errstr_size)) != STORE_OK)
                return rc;
        for (int s = 0; s < sr->nshards; s++)
                if (sr->held[s])
                        list[nl++] = s;
        snprintf(nsh, sizeof(nsh), "%d", sr->nshards);
        snprintf(lim, sizeof(lim), "%zu", max);
        snprintf(win, sizeof(win), "%zu", window < max ? max : window);
        v[0] = nsh;
        v[1] = i64_array(&shards, list, nl);
        v[2] = win;
        v[3] = lim;
        v[4] = i64_array(&skipped, skip, nskip);
        v[5] = through;
        v[6] = done;
        /*
         * w: the window, a prefix in id order of the unpublished rows of
         * the held shards (all rows of a key are in one shard, so a key's
         * first row in w is its first unpublished row), read through the
         * primary key above relay_cursor.through (every row at or below it
         * is published, parked or never committed: store_relay_advance),
         * leaving out the ids of $7, relay_cursor.done (published).
         * f: that first row
         * of each key. A row whose key has an earlier unpublished row is
         * never offered, whatever ids commit later. Parked rows (0006) are
         * not waited for: they are holes an operator looks at. A key
         * whose first row is in $5 (in flight, not marked yet) offers
         * nothing: the skip comes after f, never before it, or the key's
         * next row would be offered while the earlier one is unmarked.
         * w carries the columns the relay needs, so f's rows are not
         * looked up again through the primary key. Its range is closed
         * above by STORE_OUTBOX_ID_CEILING, which keeps the plan on the
         * primary key when the outbox has no statistics yet.
         */
        res = run_hot(sr, HOT_FETCH, v, &rc, errstr, errstr_size);
        store_pgarr_free(&shards);
        store_pgarr_free(&skipped);
        free(done);
        if (!res)
                return rc;
        n = PQntuples(res);
        if (n == 0) {
                PQclear(res);
                return STORE_OK;
        }
        b->rows = xcalloc((size_t)n, sizeof(*b->rows));
        b->res_ = res;
        for (int r = 0; r < n; r++) {
                struct store_relay_row *row = &b->rows[r];
                row->id              = strtoll(PQgetvalue(res, r, 0), NULL, 10);
                row->event_id        = PQgetvalue(res, r, 1);
                row->message_key     = PQgetvalue(res, r, 2);
                row->message_key_len = (size_t)PQgetlength(res, r, 2);
                row->intent_event_id = PQgetvalue(res, r, 3);
                row->status          = PQgetvalue(res, r, 4);
                row->payload         = PQgetvalue(res, r, 5);
                row->payload_len     = (size_t)PQgetlength(res, r, 5);
                row->created_ms      = strtoll(PQgetvalue(res, r, 6), NULL, 10);
                if (PQgetisnull(res, r, 5))
                        compose_row(row, res, r);
        }
        b->n = (size_t)n;
        return STORE_OK;
}

/* (1): whether every transaction of the barrier has ended (no barrier
 * yet: true, with a NULL sequence value), the barrier's sequence value,
 * gen and through. Its own statement: the cursor's snapshot (3) must come after
 * the transactions are seen gone. */
#define ADVANCE_RESOLVED_SQL                                                   \
        "SELECT c.barrier_vxids IS NULL OR NOT EXISTS (SELECT 1 FROM pg_locks" \
        " l WHERE l.virtualtransaction = ANY (c.barrier_vxids)),"              \
        " c.barrier_seq, c.gen, c.through FROM relay_cursor c WHERE c.id = 1"

/* (2): read before (3) looks at the writers, so that every transaction
 * that drew an id up to it still holds its lock then or has ended. The
 * sequence must hand out ids one at a time (CACHE 1, identity's
 * default): a session's cached ids would be drawn later than read here,
 * by a transaction the barrier does not name. Checked with it. */
#define ADVANCE_SEQ_SQL                                                        \
        "SELECT coalesce(pg_sequence_last_value(pg_get_serial_sequence("       \
        "'outbox', 'id')::regclass), 0),"                                      \
        " " STORE_SEQS_CACHE1_SQL(                                             \
            "pg_get_serial_sequence('outbox', 'id')::regclass")

/* The barrier's transactions: those inserting into the outbox now. */
#define RELAY_WRITERS_SQL STORE_WRITERS_SQL("'outbox'::regclass")

/* (3), once (1) found the barrier's transactions gone: $1 its sequence
 * value (NULL: no barrier yet, through stays), $2 gen as (1) read it, $3
 * the value of (2). through moves up to the first row above it that is
 * neither in done (published, 0027) nor parked, at most to $1; done keeps
 * only the ids above the new through. Nothing changes when another relay
 * moved the barrier or a row was opened again since (1). A mark that
 * commits meanwhile is seen: the row is re-read (READ COMMITTED) and its
 * done is the one both are computed from. */
#define ADVANCE_SQL                                                            \
        "UPDATE relay_cursor c SET"                                            \
        " (through, done) = (SELECT t.v, c.done - int8multirange("             \
        "  int8range(NULL, t.v, '[]')) FROM (SELECT"                           \
        "  CASE WHEN $1::bigint IS NOT NULL"                                   \
        "  THEN greatest(c.through, least($1::bigint, coalesce("               \
        "  (SELECT o.id - 1 FROM outbox o WHERE o.id > c.through"              \
        "    AND NOT c.done @> o.id AND o.parked_at IS NULL"                   \
        "    ORDER BY o.id LIMIT 1), $1::bigint)))"                            \
        "  ELSE c.through END AS v) t),"                                       \
        " barrier_seq = $3::bigint,"                                           \
        " barrier_vxids = " RELAY_WRITERS_SQL ","                              \
        " advanced_at = now()"                                                 \
        " WHERE c.id = 1 AND c.gen = $2::bigint"                               \
        " AND c.barrier_seq IS NOT DISTINCT FROM $1::bigint"                   \
        " RETURNING c.through"

/*
 * Writes (now(), through) into relay_progress when through has moved
 * since this relay last wrote and a second has passed: the times at
 * which the rows were published (0027). Not when any relay wrote in the
 * last second, or an entry already reaches through. A failure is only
 * logged: the entry is a bound on times, written again at the next move.
 */
static void progress_log(struct store_relay *sr, int64_t through)
{
        char num[24], err[256];
        const char *v[1] = { num };
        int64_t now      = time_mono_ms();
        int64_t rows     = 0;

        if (through <= sr->logged_through ||
            now - sr->logged_ms < PROGRESS_EVERY_MS)
                return;
        snprintf(num, sizeof(num), "%" PRId64, through);
        if (run_number(sr->work, "relay progress",
                       "INSERT INTO relay_progress (at, through)"
                       " SELECT now(), $1::bigint"
                       "  WHERE NOT EXISTS (SELECT 1 FROM relay_progress"
                       "                     WHERE at > now() - interval"
                       "                           '1 second'"
                       "                        OR through >= $1::bigint)"
                       " ON CONFLICT DO NOTHING",
                       1, v, true, &rows, err, sizeof(err)) != STORE_OK) {
                struct log_ctx lc = LOG_CTX_INIT;
                lc.component      = "relay";
                log_warn(&lc, "%s", err);
                return;
        }
        sr->logged_through = through;
        sr->logged_ms      = now;
}

int store_relay_advance(struct store_relay *sr, int64_t *through, char *errstr,
                        size_t errstr_size)
{
        PGresult *res, *sq = NULL, *up = NULL;
        const char *v[3];
        int rc;

        *through = -1;
        res      = run_hot(sr, HOT_RESOLVED, NULL, &rc, errstr, errstr_size);
        if (!res)
                return rc;
        if (PQntuples(res) != 1) {
                PQclear(res);
                snprintf(errstr, errstr_size,
                         "relay cursor: no relay_cursor row (0021)");
                return STORE_ERR_SCHEMA;
        }
        if (strcmp(PQgetvalue(res, 0, 0), "t") != 0) {
                /* a transaction of the barrier is still in flight */
                PQclear(res);
                return STORE_OK;
        }
        sq = run_hot(sr, HOT_SEQ, NULL, &rc, errstr, errstr_size);
        if (sq && strcmp(PQgetvalue(sq, 0, 1), "t") != 0) {
                snprintf(errstr, errstr_size,
                         "relay cursor: outbox's sequence hands out ids in "
                         "blocks (CACHE > 1), so the cursor cannot move "
                         "safely and stays where it is (the relay still "
                         "publishes, reading more of the outbox each time): "
                         "ALTER SEQUENCE outbox_id_seq CACHE 1");
                PQclear(sq);
                PQclear(res);
                return STORE_ERR;
        }
        if (sq && !PQgetisnull(res, 0, 1) &&
            !strcmp(PQgetvalue(res, 0, 1), PQgetvalue(sq, 0, 0)) &&
            !strcmp(PQgetvalue(res, 0, 3), PQgetvalue(sq, 0, 0))) {
                /* idle: no id drawn since the barrier, which through has
                 * reached: nothing to write */
                *through = strtoll(PQgetvalue(res, 0, 3), NULL, 10);
                PQclear(sq);
                PQclear(res);
                progress_log(sr, *through);
                return STORE_OK;
        }
        if (sq) {
                v[0] = PQgetisnull(res, 0, 1) ? NULL : PQgetvalue(res, 0, 1);
                v[1] = PQgetvalue(res, 0, 2);
                v[2] = PQgetvalue(sq, 0, 0);
                up   = run_hot(sr, HOT_ADVANCE, v, &rc, errstr, errstr_size);
        }
        if (up && PQntuples(up) == 1)
                *through = strtoll(PQgetvalue(up, 0, 0), NULL, 10);
        PQclear(up);
        PQclear(sq);
        PQclear(res);
        if (*through >= 0)
                progress_log(sr, *through);
        return up ? STORE_OK : rc;
}

static int update_ids(struct store_relay *sr, const char *what, const char *sql,
                      const int64_t *ids, size_t n, int64_t *changed,
                      char *errstr, size_t errstr_size)
{
        struct pgarr arr;
        const char *v[1];
        int64_t rows = 0;
        int rc;

        if (changed)
                *changed = 0;
        if (n == 0)
                return STORE_OK;
        v[0] = i64_array(&arr, ids, n);
        rc   = run_number(sr->work, what, sql, 1, v, true, &rows, errstr,
                          errstr_size);
        store_pgarr_free(&arr);
        if (rc == STORE_OK && changed)
                *changed = rows;
        return rc;
}

/* The mark: see store_relay_mark. */
#define MARK_SQL                                                               \
        "WITH c0 AS (SELECT through, done FROM relay_cursor"                   \
        "             WHERE id = 1 FOR UPDATE),"                               \
        " n AS (SELECT coalesce(range_agg(int8range(i, i, '[]')), '{}')"       \
        "              AS add, count(DISTINCT i) AS k"                         \
        "         FROM c0, unnest($1::bigint[]) i"                             \
        "        WHERE i > c0.through AND NOT c0.done @> i),"                  \
        " u AS (UPDATE relay_cursor c SET done = c.done + n.add FROM n"        \
        "        WHERE c.id = 1 AND n.k > 0 RETURNING 1)"                      \
        " SELECT n.k FROM n"

static const struct store_stmt hot_stmts[HOT_N] = {
        { HOT_CURSOR, "relay_cursor",
          "SELECT through, done FROM relay_cursor WHERE id = 1", 0 },
        { HOT_FETCH, "relay_fetch", STORE_RELAY_FETCH_SQL, 7 },
        { HOT_RESOLVED, "relay_resolved", ADVANCE_RESOLVED_SQL, 0 },
        { HOT_SEQ, "relay_seq", ADVANCE_SEQ_SQL, 0 },
        { HOT_ADVANCE, "relay_advance", ADVANCE_SQL, 3 },
        { HOT_MARK, "relay_mark", MARK_SQL, 1 },
};

int store_relay_mark(struct store_relay *sr, const int64_t *ids, size_t n,
                     int64_t *marked, char *errstr, size_t errstr_size)
{
        struct pgarr arr;
        const char *v[1];
        PGresult *res;
        int rc;

        *marked = 0;
        if (n == 0)
                return STORE_OK;
        v[0] = i64_array(&arr, ids, n);
        /*
         * The rows are not written (0027): their ids join
         * relay_cursor.done. c0 locks the cursor's row and reads its
         * latest version, from which the ids new to it are counted
         * (another relay may have marked some, or an advance passed
         * them); the update re-reads that version.
         */
        res = run_hot(sr, HOT_MARK, v, &rc, errstr, errstr_size);
        store_pgarr_free(&arr);
        if (!res)
                return rc;
        if (PQntuples(res) > 0)
                *marked = strtoll(PQgetvalue(res, 0, 0), NULL, 10);
        PQclear(res);
        return STORE_OK;
}

int store_relay_note_failed(struct store_relay *sr, const int64_t *ids,
                            size_t n, char *errstr, size_t errstr_size)
{
        return update_ids(sr, "relay note failed",
                          "UPDATE outbox"
                          "   SET publish_attempts = publish_attempts + 1"
                          " WHERE id = ANY ($1::bigint[])"
                          "   AND published_at IS NULL",
                          ids, n, NULL, errstr, errstr_size);
}

/* Consumes what arrived; true if a notification was among it. */
static bool drain_notifies(PGconn *conn)
{
        PGnotify *nf;
        bool any = false;

        if (!PQconsumeInput(conn))
                return false;
        while ((nf = PQnotifies(conn)) != NULL) {
                any = true;
                PQfreemem(nf);
        }
        return any;
}

int store_relay_wait(struct store_relay *sr, int timeout_ms)
{
        struct pollfd pfd;
        int r;

        if (!sr->sess || PQstatus(sr->sess) != CONNECTION_OK)
                return STORE_ERR_CONN;
        if (drain_notifies(sr->sess))
                return 1;
        pfd.fd     = PQsocket(sr->sess);
        pfd.events = POLLIN;
        if (pfd.fd < 0)
                return STORE_ERR_CONN;
        r = poll(&pfd, 1, timeout_ms);
        if (r <= 0)
                return 0; /* timeout, or EINTR: the caller loops */
        if (drain_notifies(sr->sess))
                return 1;
        return PQstatus(sr->sess) == CONNECTION_OK ? 0 : STORE_ERR_CONN;
}

int store_relay_cleanup(struct store_relay *sr, int64_t retention_ms, int limit,
                        int64_t *deleted, char *errstr, size_t errstr_size)
{
        char ret[24], lim[16];
        const char *v[2] = { ret, lim };

        *deleted = 0;
        snprintf(ret, sizeof(ret), "%" PRId64, retention_ms);
        snprintf(lim, sizeof(lim), "%d", limit);
        /*
         * Oldest ids first through the primary key, up to the through of
         * the newest relay_progress entry older than the retention (0027:
         * every row at or below it was published or parked by then, and
         * published again by then if it was opened again before); rows
         * locked by a park or a republish are skipped, so the DELETE never
         * waits and holds its row locks for one short statement only.
         * The entries older than that one go in the same statement.
         */
        /* the watermark moves in the same statement as the DELETE, so the
         * audit (invariant_violations, 0004) never sees a removed result
         * as a missing one: a result is written in the transaction that
         * makes its payment final, so a payment whose result is gone
         * finished at or before the latest created_at removed */
        return run_number(
            sr->work, "relay cleanup",
            "WITH b AS MATERIALIZED (SELECT at, through FROM relay_progress"
            "   WHERE at < now() - $1::bigint * interval '1 millisecond'"
            "   ORDER BY at DESC LIMIT 1),"
            " d AS (DELETE FROM outbox WHERE id IN ("
            "  SELECT o.id FROM outbox o"
            "   WHERE o.id <= (SELECT through FROM b)"
            "     AND co_outbox_published(o.id, o.parked_at, o.published_at)"
            "     AND (o.reopened_at IS NULL"
            "          OR o.reopened_at < (SELECT at FROM b))"
            "   ORDER BY o.id LIMIT $2::int FOR UPDATE SKIP LOCKED)"
            " RETURNING created_at),"
            " m AS (UPDATE outbox_cleanup SET published_through ="
            "  greatest(published_through,"
            "           (SELECT max(created_at) FROM d))"
            "  WHERE id = 1 AND EXISTS (SELECT 1 FROM d)),"
            " p AS (DELETE FROM relay_progress"
            "        WHERE at < (SELECT at FROM b))"
            " SELECT count(*) FROM d",
            2, v, false, deleted, errstr, errstr_size);
}

int store_relay_oldest_age(struct store_relay *sr, int64_t *age_ms,
                           char *errstr, size_t errstr_size)
{
        char through[24], *done = NULL;
        const char *v[2] = { through, NULL };
        int rc;

        *age_ms = 0;
        if ((rc = cursor_read(sr, through, sizeof(through), &done, errstr,
                              errstr_size)) != STORE_OK)
                return rc;
        v[1] = done;
        rc   = run_number(sr->work, "relay backlog",
                          "SELECT greatest(0, (extract(epoch FROM"
                            "        now() - created_at) * 1000)::bigint)"
                            "  FROM outbox WHERE id > $1::bigint"
                            "   AND NOT $2::int8multirange @> id"
                            "   AND parked_at IS NULL"
                            " ORDER BY id LIMIT 1",
                          2, v, false, age_ms, errstr, errstr_size);
        free(done);
        return rc;
}

int store_relay_wal_position(struct store_relay *sr, char *lsn, size_t lsn_size,
                             char *errstr, size_t errstr_size)
{
        PGresult *res;
        int rc;

        /* the insert position of an empty page points past the page's
         * header (24 bytes, 40 at a segment's start), which a standby
         * that has everything flushed does not reach until more WAL
         * comes: the end of the last record is the page's start */
        res = run(sr->work, "WAL position",
                  "SELECT (CASE WHEN (l - '0/0'::pg_lsn) % seg = 40"
                  " THEN l - 40 WHEN (l - '0/0'::pg_lsn) % blk = 24"
                  " THEN l - 24 ELSE l END)::text"
                  "  FROM pg_current_wal_insert_lsn() l,"
                  "  (SELECT max(setting::numeric) FILTER (WHERE name ="
                  "          'wal_segment_size') AS seg,"
                  "          max(setting::numeric) FILTER (WHERE name ="
                  "          'wal_block_size') AS blk"
                  "     FROM pg_settings) z",
                  0, NULL, &rc, errstr, errstr_size);
        if (!res)
                return rc;
        snprintf(lsn, lsn_size, "%s", PQgetvalue(res, 0, 0));
        PQclear(res);
        return STORE_OK;
}

int store_relay_standbys_flushed(struct store_relay *sr, const char *lsn,
                                 int *flushed, int *hidden, char *errstr,
                                 size_t errstr_size)
{
        const char *v[1] = { lsn };
        PGresult *res;
        int rc;

        *flushed = *hidden = 0;
        /* a walsender of a logical slot is no standby a failover can
         * promote, and neither is a WAL receiver (pg_receivewal
         * --synchronous as a WAL archiver runs it, pg_basebackup's WAL
         * stream): it reports a flush position but never a replay
         * position, which every standby does once it has said where it
         * is */
        res = run(sr->work, "standbys",
                  "SELECT count(*) FILTER (WHERE r.flush_lsn >= $1::pg_lsn"
                  "                          AND r.replay_lsn IS NOT NULL),"
                  "       count(*) FILTER (WHERE r.flush_lsn IS NULL"
                  "                          AND r.state IS NULL)"
                  "  FROM pg_stat_replication r"
                  " WHERE NOT EXISTS (SELECT 1 FROM pg_replication_slots s"
                  "                    WHERE s.active_pid = r.pid"
                  "                      AND s.slot_type = 'logical')",
                  1, v, &rc, errstr, errstr_size);
        if (!res)
                return rc;
        *flushed = atoi(PQgetvalue(res, 0, 0));
        *hidden  = atoi(PQgetvalue(res, 0, 1));
        PQclear(res);
        return STORE_OK;
}

int store_relay_republish(const char *conninfo,
                          const struct store_republish *sel, int64_t *reset,
                          char *errstr, size_t errstr_size)
{
        PGconn *conn;
        const char *v[5];
        char after[24] = "0";
        int rc         = STORE_OK;

        *reset = 0;
        conn   = connect_one(conninfo ? conninfo : "", "chargeonce republish",
                           errstr, errstr_size);
        if (!conn)
                return STORE_ERR_CONN;
        v[0] = sel->since;
        v[1] = sel->until;
        v[2] = sel->event_id;
        v[3] = sel->message_key;
        v[4] = after;
        /*
         * Walks the ids upwards, so a row that a running relay publishes
         * again meanwhile is not reset twice; bounded: each round resets
         * up to 1000 rows above the last one or ends the loop. A row is
         * opened again by co_relay_reopen (0027: through goes below it,
         * the published ids between stay published, the row gets
         * reopened_at; published_at, which only rows published before
         * 0027 hold, goes back to NULL). The rows are those of
         * co_republish_candidates (0027), which the --dry-run counts
         * too.
         */
        for (long round = 0; round < 100000000L; round++) {
                PGresult *res = run(
                    conn, "republish",
                    "WITH c AS MATERIALIZED ("
                    "  SELECT id FROM co_republish_candidates("
                    "         $1::timestamptz, $2::timestamptz, $3::text,"
                    "         $4::text, $5::bigint)"
                    "   ORDER BY id LIMIT 1000),"
                    " r AS MATERIALIZED (SELECT co_relay_reopen(array_agg(id))"
                    "                      FROM c)"
                    " SELECT (SELECT max(id) FROM c), (SELECT count(*) FROM c),"
                    "        (SELECT count(*) FROM r)",
                    5, v, &rc, errstr, errstr_size);
                if (!res)
                        break;
                if (PQgetisnull(res, 0, 0)) {
                        PQclear(res);
                        break;
                }
                snprintf(after, sizeof(after), "%s", PQgetvalue(res, 0, 0));
                *reset += strtoll(PQgetvalue(res, 0, 1), NULL, 10);
                PQclear(res);
        }
        PQfinish(conn);
        return rc;
}

int store_relay_park(struct store_relay *sr, int64_t id, const char *reason,
                     int attempts, int64_t *parked, char *errstr,
                     size_t errstr_size)
{
        char num[24], att[16];
        const char *v[3] = { num, reason, att };

        *parked = 0;
        snprintf(num, sizeof(num), "%" PRId64, id);
        snprintf(att, sizeof(att), "%d", attempts > 0 ? attempts : 0);
        return run_number(
            sr->work, "relay park",
            "UPDATE outbox SET parked_at = now(), park_reason = $2,"
            "       publish_attempts = publish_attempts + $3::int"
            " WHERE id = $1::bigint AND parked_at IS NULL"
            "   AND NOT co_outbox_published(id, parked_at, published_at)",
            3, v, true, parked, errstr, errstr_size);
}

int store_relay_unpark(const char *conninfo, int64_t id, int64_t *unparked,
                       char *errstr, size_t errstr_size)
{
        PGconn *conn;
        char num[24];
        const char *v[1] = { num };
        int rc;

        *unparked = 0;
        snprintf(num, sizeof(num), "%" PRId64, id);
        conn = connect_one(conninfo ? conninfo : "", "chargeonce unpark",
                           errstr, errstr_size);
        if (!conn)
                return STORE_ERR_CONN;
        /* the NOTIFY of 0003 is for inserts only: the relays find the
         * row at their next poll (relay.poll_interval) */
        rc = run_number(conn, "unpark",
                        "UPDATE outbox SET parked_at = NULL, park_reason = NULL"
                        " WHERE parked_at IS NOT NULL AND published_at IS NULL"
                        "   AND ($1::bigint = 0 OR id = $1::bigint)",
                        1, v, true, unparked, errstr, errstr_size);
        PQfinish(conn);
        return rc;
}

void store_relay_parked_free(struct store_relay_parked *p, size_t n)
{
        for (size_t i = 0; p && i < n; i++) {
                free(p[i].event_id);
                free(p[i].tenant_id);
                free(p[i].payment_id);
                free(p[i].status);
                free(p[i].parked_at);
                free(p[i].reason);
        }
        free(p);
}

static char *dup_or_null(PGresult *res, int r, int c)
{
        if (PQgetisnull(res, r, c))
                return NULL;
        return xstrdup(PQgetvalue(res, r, c));
}

int store_relay_parked_list(const char *conninfo,
                            struct store_relay_parked **out, size_t *n,
                            char *errstr, size_t errstr_size)
{
        PGconn *conn;
        PGresult *res;
        int rc, rows;

        *out = NULL;
        *n   = 0;
        conn = connect_one(conninfo ? conninfo : "", "chargeonce audit", errstr,
                           errstr_size);
        if (!conn)
                return STORE_ERR_CONN;
        res = run(conn, "parked rows",
                  "SELECT id, event_id, tenant_id, payment_id, status,"
                  "       to_char(parked_at AT TIME ZONE 'UTC',"
                  "               'YYYY-MM-DD\"T\"HH24:MI:SS\"Z\"'),"
                  "       park_reason, payload_bytes, publish_attempts"
                  "  FROM outbox_parked ORDER BY id",
                  0, NULL, &rc, errstr, errstr_size);
        if (!res) {
                PQfinish(conn);
                return rc;
        }
        rows = PQntuples(res);
        if (rows > 0)
                *out = xcalloc((size_t)rows, sizeof(**out));
        for (int r = 0; r < rows; r++) {
                struct store_relay_parked *p = &(*out)[r];
                p->id            = strtoll(PQgetvalue(res, r, 0), NULL, 10);
                p->event_id      = dup_or_null(res, r, 1);
                p->tenant_id     = dup_or_null(res, r, 2);
                p->payment_id    = dup_or_null(res, r, 3);
                p->status        = dup_or_null(res, r, 4);
                p->parked_at     = dup_or_null(res, r, 5);
                p->reason        = dup_or_null(res, r, 6);
                p->payload_bytes = strtoll(PQgetvalue(res, r, 7), NULL, 10);
                p->attempts      = strtoll(PQgetvalue(res, r, 8), NULL, 10);
        }
        *n = (size_t)rows;
        PQclear(res);
        PQfinish(conn);
        return STORE_OK;
}

void store_relay_schema_explain(struct store_relay *sr, char *errstr,
                                size_t errstr_size)
{
        if (sr->work && PQstatus(sr->work) == CONNECTION_OK)
                store_schema_explain_conn(sr->work, errstr, errstr_size);
}
