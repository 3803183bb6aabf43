/* SPDX-License-Identifier: Apache-2.0 */
/*
 * store/gc: tombstones and the removal of bulky rows (see gc.h). Every
 * call is one statement outside BEGIN: one short transaction.
 *
 * Never removes an outbox row that is not published, never touches a key
 * that is processing or in review, never puts a value into errstr.
 */
#include "store/gc.h"
#include "store/store_int.h"

#include <libpq-fe.h>

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/*
 * The keys gc collects (alias k: the payments, which are the keys since
 * 0017; $1 = the retention in ms). The dry run and the batch share it, so
 * their counts cannot drift apart. The retention runs from the moment the
 * payment became final (finished_at): a review resolved long after its
 * claim keeps its evidence, the operator's decision included, for the
 * whole retention after the decision. The NOT EXISTS reads
 * outbox_payment_idx: a key with an unpublished or parked result waits
 * (its rows would be half removed otherwise).
 */
#define GC_KEY_PRED                                                            \
        " k.tombstoned_at IS NULL"                                             \
        " AND k.status IN ('succeeded', 'failed')"                             \
        " AND k.expires_at < now()"                                            \
        " AND k.finished_at < now() - $1::bigint * interval '1 millisecond'"   \
        " AND NOT EXISTS (SELECT 1 FROM outbox o"                              \
        "                  WHERE o.payment_id = k.payment_id"                  \
        "                    AND NOT co_outbox_published(o.id,"                \
        "                          o.parked_at, o.published_at))"

/*
 * The candidates, at most LIM (SQL; NULL: no limit), LOCK appended to
 * each part, as the CTEs gc_new, gc_old and sel (their union). gc_new
 * reads payments_lease_idx (0030) from its start: a payment keeps its
 * lease's expiry when it becomes final and gc's tombstone clears it, so
 * the index holds no tombstone, and the expiry is never before
 * finished_at (0029: a late finish moves it), so a payment final for the
 * retention is found by it, at most a lease's length later. gc_old reads
 * payments_unleased_idx: the final payments of before 0029, which have
 * no expiry, oldest first.
 */
#define GC_SEL(LIM, LOCK)                                                      \
        " gc_new AS (SELECT k.payment_id, k.tenant_id, k.idem_key"             \
        "   FROM payments k"                                                   \
        "  WHERE k.lease_expires_at < now() - $1::bigint"                      \
        "        * interval '1 millisecond' AND" GC_KEY_PRED                   \
        "  ORDER BY k.lease_expires_at LIMIT " LIM LOCK "),"                   \
        " gc_old AS (SELECT k.payment_id, k.tenant_id, k.idem_key"             \
        "   FROM payments k"                                                   \
        "  WHERE k.lease_expires_at IS NULL AND k.created_at < now()"          \
        "        - $1::bigint * interval '1 millisecond' AND" GC_KEY_PRED      \
        "  ORDER BY k.created_at"                                              \
        "  LIMIT greatest(" LIM " - (SELECT count(*) FROM gc_new), 0)" LOCK    \
        "),"                                                                   \
        " sel AS (SELECT * FROM gc_new UNION ALL SELECT * FROM gc_old)"

#define GC_RETRIES 5

static bool retryable(const PGresult *res)
{
        const char *s = PQresultErrorField(res, PG_DIAG_SQLSTATE);
        return s && (!strcmp(s, "40P01") || !strcmp(s, "40001"));
}

/*
 * Runs sql with text parameters; a deadlock or serialization failure is
 * run again after a short pause. Returns the result (owned by the caller)
 * or NULL with *rc = STORE_ERR / STORE_ERR_CONN and errstr set.
 */
static PGresult *run(struct store *st, const char *what, const char *sql,
                     int nparams, const char *const *values, int *rc,
                     char *errstr, size_t errstr_size)
{
        PGconn *conn = store_pgconn(st);

        for (int attempt = 0;; attempt++) {
                PGresult *res;
                ExecStatusType s;

                if (!conn || PQstatus(conn) != CONNECTION_OK) {
                        snprintf(errstr, errstr_size,
                                 "%s: no database connection", what);
                        *rc = STORE_ERR_CONN;
                        return NULL;
                }
                res = PQexecParams(conn, sql, nparams, NULL, values, NULL, NULL,
                                   0);
                s   = PQresultStatus(res);
                if (s == PGRES_TUPLES_OK || s == PGRES_COMMAND_OK) {
                        *rc = STORE_OK;
                        return res;
                }
                if (attempt + 1 < GC_RETRIES && retryable(res)) {
                        struct timespec ts = { 0, (long)(attempt + 1) *
                                                      20000000L };
                        PQclear(res);
                        nanosleep(&ts, NULL);
                        continue;
                }
                store_format_error(res, conn, what, errstr, errstr_size);
                PQclear(res);
                *rc = PQstatus(conn) == CONNECTION_OK ? STORE_ERR
                                                      : STORE_ERR_CONN;
                return NULL;
        }
}

/* Reads row 0's columns 0..n) as numbers into out[]; checks the shape. */
static int read_row(PGresult *res, const char *what, int64_t *out, int n,
                    char *errstr, size_t errstr_size)
{
        if (PQntuples(res) != 1 || PQnfields(res) != n) {
                snprintf(errstr, errstr_size, "%s: unexpected result shape",
                         what);
                PQclear(res);
                return STORE_ERR;
        }
        for (int i = 0; i < n; i++)
                out[i] = store_i64_field(res, 0, i);
        PQclear(res);
        return STORE_OK;
}

/* The dry run's counts: the keys a batch would take (no limit: $2 NULL,
 * nothing locked), and their rows. */
#define GC_COUNT_SEL GC_SEL("$2::bigint", "")
static const char count_sql[] =
    "WITH" GC_COUNT_SEL " SELECT (SELECT count(*) FROM sel),"
    "  (SELECT count(*) FROM inbox i"
    "    WHERE (i.tenant_id, i.idem_key) IN"
    "          (SELECT tenant_id, idem_key FROM sel)),"
    "  (SELECT count(*) FROM gateway_evidence e"
    "    WHERE e.payment_id IN (SELECT payment_id FROM sel)),"
    "  (SELECT count(*) FROM outbox o"
    "    WHERE o.payment_id IN (SELECT payment_id FROM sel)"
    "      AND co_outbox_published(o.id, o.parked_at,"
    "                              o.published_at))";

int store_gc_count(struct store *st, int64_t key_retention_ms, int64_t limit,
                   struct store_gc_counts *out, char *errstr,
                   size_t errstr_size)
{
        char ret[24], lim[24];
        const char *v[2] = { ret, limit > 0 ? lim : NULL };
        int64_t n[4];
        PGresult *res;
        int rc;

        memset(out, 0, sizeof(*out));
        snprintf(ret, sizeof(ret), "%" PRId64, key_retention_ms);
        snprintf(lim, sizeof(lim), "%" PRId64, limit);
        res = run(st, "gc count", count_sql, 2, v, &rc, errstr, errstr_size);
        if (!res)
                return rc;
        if ((rc = read_row(res, "gc count", n, 4, errstr, errstr_size)) !=
            STORE_OK)
                return rc;
        out->tombstones = n[0];
        out->inbox      = n[1];
        out->evidence   = n[2];
        out->outbox     = n[3];
        return STORE_OK;
}

int store_gc_left(struct store *st, int64_t key_retention_ms,
                  struct store_gc_left *out, char *errstr, size_t errstr_size)
{
        char ret[24];
        const char *v[1] = { ret };
        int64_t n[3];
        PGresult *res;
        int rc;

        memset(out, 0, sizeof(*out));
        snprintf(ret, sizeof(ret), "%" PRId64, key_retention_ms);
        res = run(st, "gc left",
                  "SELECT count(*) FILTER (WHERE k.status = 'processing'),"
                  "  count(*) FILTER (WHERE k.status = 'review'),"
                  "  count(*) FILTER (WHERE k.status IN ('succeeded', 'failed')"
                  "   AND EXISTS (SELECT 1 FROM outbox o"
                  "                WHERE o.payment_id = k.payment_id"
                  "                  AND NOT co_outbox_published(o.id,"
                  "                        o.parked_at, o.published_at)))"
                  "  FROM payments k"
                  " WHERE k.tombstoned_at IS NULL AND k.expires_at < now()"
                  "   AND coalesce(k.finished_at, k.created_at) < now()"
                  "       - $1::bigint * interval '1 millisecond'",
                  1, v, &rc, errstr, errstr_size);
        if (!res)
                return rc;
        if ((rc = read_row(res, "gc left", n, 3, errstr, errstr_size)) !=
            STORE_OK)
                return rc;
        out->processing = n[0];
        out->review     = n[1];
        out->held       = n[2];
        return STORE_OK;
}

int store_gc_begin(struct store *st, int64_t key_retention_ms, int64_t *run_id,
                   char *errstr, size_t errstr_size)
{
        char ret[24];
        const char *v[1] = { ret };
        PGresult *res;
        int rc;

        *run_id = 0;
        snprintf(ret, sizeof(ret), "%" PRId64, key_retention_ms);
        res = run(st, "gc begin",
                  "INSERT INTO gc_runs (key_retention_ms) VALUES ($1::bigint)"
                  " RETURNING id",
                  1, v, &rc, errstr, errstr_size);
        if (!res)
                return rc;
        return read_row(res, "gc begin", run_id, 1, errstr, errstr_size);
}

int store_gc_batch(struct store *st, int64_t run_id, int64_t key_retention_ms,
                   int max, struct store_gc_counts *out, char *errstr,
                   size_t errstr_size)
{
        char ret[24], lim[16], id[24];
        const char *v[3] = { ret, lim, id };
        int64_t n[4];
        PGresult *res;
        int rc;

        memset(out, 0, sizeof(*out));
        snprintf(ret, sizeof(ret), "%" PRId64, key_retention_ms);
        snprintf(lim, sizeof(lim), "%d", max);
        snprintf(id, sizeof(id), "%" PRId64, run_id);
        /*
         * Locks: the payments, which are the keys (SKIP LOCKED: one a
         * webhook is applying to is left for the next batch), then the
         * rows deleted. Each
         * data-modifying part runs once; RETURNING carries the counts.
         * Every table is reached through an index with = ANY (array) or
         * IN (semi-join), never by joining a CTE scan as the inner side
         * of a nested loop: that made a batch quadratic (20,000 keys in
         * one batch took 60 s; now 1 s, measured; 500 keys ~40 ms).
         */
        res = run(
            st, "gc batch",
            "WITH" GC_SEL(
                "$2::int",
                " FOR UPDATE OF k SKIP LOCKED") ","
                                                " ids AS (SELECT "
                                                "coalesce(array_agg(payment_id)"
                                                ", '{}') AS pids"
                                                "           FROM sel),"
                                                " tk AS (UPDATE payments p SET "
                                                "tombstoned_at = now(),"
                                                "   payment_method = NULL, "
                                                "lease_expires_at = NULL"
                                                "   WHERE p.payment_id = ANY "
                                                "((SELECT pids FROM "
                                                "ids)::uuid[])"
                                                "  RETURNING 1),"
                                                " di AS (DELETE FROM inbox i "
                                                "WHERE (i.tenant_id, "
                                                "i.idem_key) IN"
                                                "   (SELECT tenant_id, "
                                                "idem_key FROM sel) RETURNING "
                                                "1),"
                                                " de AS (DELETE FROM "
                                                "gateway_evidence e"
                                                "   WHERE e.payment_id = ANY "
                                                "((SELECT pids FROM "
                                                "ids)::uuid[])"
                                                "  RETURNING 1),"
                                                " dob AS (DELETE FROM outbox o"
                                                "   WHERE o.payment_id = ANY "
                                                "((SELECT pids FROM "
                                                "ids)::uuid[])"
                                                "     AND "
                                                "co_outbox_published(o.id, "
                                                "o.parked_at, o.published_at)"
                                                "   RETURNING o.created_at),"
                                                /* as the relay's retention does
                                                 * (0004): the audit then takes
                                                 * a removed result for a
                                                 * published one, never a
                                                 * missing one */
                                                " mk AS (UPDATE outbox_cleanup "
                                                "SET published_through ="
                                                "   greatest(published_through,"
                                                "            (SELECT "
                                                "max(created_at) FROM dob))"
                                                "   WHERE id = 1 AND EXISTS "
                                                "(SELECT 1 FROM dob) RETURNING "
                                                "1),"
                                                " n AS (SELECT (SELECT "
                                                "count(*) FROM tk) AS t,"
                                                "   (SELECT count(*) FROM di) "
                                                "AS i, (SELECT count(*) FROM "
                                                "de) AS e,"
                                                "   (SELECT count(*) FROM dob) "
                                                "AS o),"
                                                " r AS (UPDATE gc_runs g SET "
                                                "batches = batches + 1,"
                                                "   tombstones = tombstones + "
                                                "n.t, inbox_deleted ="
                                                "   inbox_deleted + n.i, "
                                                "evidence_deleted = "
                                                "evidence_deleted +"
                                                "   n.e, outbox_deleted = "
                                                "outbox_deleted + n.o"
                                                "   FROM n WHERE g.id = "
                                                "$3::bigint RETURNING 1)"
                                                /* the run's row must take the
                                                   counts, or nothing commits */
                                                " SELECT n.t, n.i, n.e, n.o "
                                                "FROM n"
                                                "  WHERE co_assert((SELECT "
                                                "count(*) FROM r) = 1,"
                                                "                  'gc_runs "
                                                "row of this run')",
            3, v, &rc, errstr, errstr_size);
        if (!res)
                return rc;
        if ((rc = read_row(res, "gc batch", n, 4, errstr, errstr_size)) !=
            STORE_OK)
                return rc;
        out->tombstones = n[0];
        out->inbox      = n[1];
        out->evidence   = n[2];
        out->outbox     = n[3];
        return STORE_OK;
}

/*
 * The inbox's late copies (0018): rows of tombstoned keys recorded after
 * the key's batch, received before hi and at or after lo.
 *   hi  the run's start less its retention (a dry run: now less it), as
 *       for the keys;
 *   lo  the window the finished runs before covered (max late_through),
 *       less GC_LATE_MARGIN, or the oldest row when none did.
 * A row is written with received_at = its transaction's start, which
 * comes before its commit: the margin covers a claim or an answer that
 * began before the previous run's end and committed after it (bounded
 * by db.statement_timeout far below an hour). An older row of a key that
 * is not a tombstone yet is left: its key's batch deletes it.
 * inbox_received_brin is read for [lo, hi) only.
 */
#define GC_LATE_MARGIN "interval '1 hour'"
#define GC_LATE_LO                                                             \
        "coalesce((SELECT max(r.late_through) FROM gc_runs r"                  \
        "           WHERE r.finished_at IS NOT NULL),"                         \
        "         '-infinity'::timestamptz) - " GC_LATE_MARGIN
/*
 * The late copies with their tombstone's payment (k), whose answer, if
 * the payment has one for them, is published: an answer still waiting
 * keeps its copy's row (else a redelivery now would be answered twice
 * under one result event id).
 */
#define GC_LATE_SEL                                                            \
        " SELECT i.tenant_id, i.event_id, k.payment_id FROM inbox i"           \
        "  JOIN LATERAL (SELECT k.payment_id FROM payments k"                  \
        "                 WHERE k.tenant_id = i.tenant_id"                     \
        "                   AND k.idem_key = i.idem_key"                       \
        "                   AND k.tombstoned_at IS NOT NULL LIMIT 1) k"        \
        "   ON true"                                                           \
        "  WHERE i.received_at >= (" GC_LATE_LO ")"                            \
        "    AND i.received_at < (SELECT hi FROM win)"                         \
        "    AND NOT EXISTS (SELECT 1 FROM outbox o"                           \
        "                     WHERE o.payment_id = k.payment_id"               \
        "                       AND o.intent_event_id = i.event_id"            \
        "                       AND NOT co_outbox_published(o.id,"             \
        "                             o.parked_at, o.published_at))"
/*
 * The published answers of sel's copies (a replay names the payment:
 * outbox_payment_idx). Deleted with the copy, as a key's batch deletes
 * its published results: a redelivery of the copy is answered again
 * under the same derived result event id, and the audit would take two
 * rows of one event id for a reuse. A conflict's answer names no payment:
 * left to relay.retention, as for a key's batch.
 */
#define GC_LATE_ANSWERS                                                        \
        " o.payment_id = ANY ((SELECT coalesce(array_agg(payment_id), '{}')"   \
        "                        FROM sel)::uuid[])"                           \
        " AND (o.tenant_id, o.intent_event_id) IN"                             \
        "     (SELECT tenant_id, event_id FROM sel)"                           \
        " AND co_outbox_published(o.id, o.parked_at, o.published_at)"

int store_gc_late_count(struct store *st, int64_t key_retention_ms,
                        struct store_gc_counts *out, char *errstr,
                        size_t errstr_size)
{
        char ret[24];
        const char *v[1] = { ret };
        int64_t n[2];
        PGresult *res;
        int rc;

        memset(out, 0, sizeof(*out));
        snprintf(ret, sizeof(ret), "%" PRId64, key_retention_ms);
        res = run(st, "gc late count",
                  "WITH win AS (SELECT now() - $1::bigint"
                  "               * interval '1 millisecond' AS hi),"
                  " sel AS MATERIALIZED (" GC_LATE_SEL ")"
                  " SELECT (SELECT count(*) FROM sel),"
                  "  (SELECT count(*) FROM outbox o WHERE" GC_LATE_ANSWERS ")",
                  1, v, &rc, errstr, errstr_size);
        if (!res)
                return rc;
        if ((rc = read_row(res, "gc late count", n, 2, errstr, errstr_size)) !=
            STORE_OK)
                return rc;
        out->inbox  = n[0];
        out->outbox = n[1];
        return STORE_OK;
}

int store_gc_late_batch(struct store *st, int64_t run_id, int max,
                        struct store_gc_counts *out, char *errstr,
                        size_t errstr_size)
{
        char lim[16], id[24];
        const char *v[2] = { lim, id };
        int64_t n[2];
        PGresult *res;
        int rc;

        memset(out, 0, sizeof(*out));
        snprintf(lim, sizeof(lim), "%d", max);
        snprintf(id, sizeof(id), "%" PRId64, run_id);
        /* rows a claim is recording now are skipped (SKIP LOCKED); the
         * counts go to the run's row in the same statement, and the
         * answers removed move outbox_cleanup's mark as a key's batch
         * does */
        res = run(st, "gc late batch",
                  "WITH win AS (SELECT started_at - key_retention_ms"
                  "               * interval '1 millisecond' AS hi"
                  "               FROM gc_runs WHERE id = $2::bigint),"
                  " sel AS (" GC_LATE_SEL " LIMIT $1::int"
                  "    FOR UPDATE OF i SKIP LOCKED),"
                  " d AS (DELETE FROM inbox i WHERE (i.tenant_id, i.event_id)"
                  "   IN (SELECT tenant_id, event_id FROM sel) RETURNING 1),"
                  " dob AS (DELETE FROM outbox o WHERE" GC_LATE_ANSWERS
                  "   RETURNING o.created_at),"
                  " mk AS (UPDATE outbox_cleanup SET published_through ="
                  "   greatest(published_through,"
                  "            (SELECT max(created_at) FROM dob))"
                  "   WHERE id = 1 AND EXISTS (SELECT 1 FROM dob) RETURNING 1),"
                  " r AS (UPDATE gc_runs g SET inbox_deleted ="
                  "   inbox_deleted + (SELECT count(*) FROM d),"
                  "   outbox_deleted = outbox_deleted + (SELECT count(*)"
                  "                                        FROM dob)"
                  "   WHERE g.id = $2::bigint RETURNING 1)"
                  " SELECT (SELECT count(*) FROM d), (SELECT count(*) FROM dob)"
                  "  WHERE co_assert((SELECT count(*) FROM r) = 1,"
                  "                  'gc_runs row of this run')",
                  2, v, &rc, errstr, errstr_size);
        if (!res)
                return rc;
        if ((rc = read_row(res, "gc late batch", n, 2, errstr, errstr_size)) !=
            STORE_OK)
                return rc;
        out->inbox  = n[0];
        out->outbox = n[1];
        return STORE_OK;
}

int store_gc_end(struct store *st, int64_t run_id, bool late_done, char *errstr,
                 size_t errstr_size)
{
        char id[24];
        const char *v[2] = { id, late_done ? "t" : "f" };
        PGresult *res;
        int rc;

        snprintf(id, sizeof(id), "%" PRId64, run_id);
        res = run(st, "gc end",
                  "UPDATE gc_runs SET finished_at = now(),"
                  "  late_through = CASE WHEN $2::boolean THEN started_at"
                  "    - key_retention_ms * interval '1 millisecond' END"
                  " WHERE id = $1::bigint",
                  2, v, &rc, errstr, errstr_size);
        if (!res)
                return rc;
        PQclear(res);
        return STORE_OK;
}
