/* SPDX-License-Identifier: Apache-2.0 */
/*
 * store_relay_cursor: how the relay finds its rows (0021, 0022,
 * store_relay_advance in src/store/relay_sql.c). Every outbox row at or
 * below relay_cursor.through is published, parked or never committed; the
 * cursor moves only once the transactions that might still commit an id
 * below it have ended (a barrier), so a result committed late, however
 * many results committed after it were published meanwhile, is fetched
 * and published; an insert rolled back is passed; a row opened again
 * (republished, unparked) brings the cursor back below it, and the rows
 * published between stay published; the mark writes no outbox row (0027:
 * the ids go into relay_cursor.done); writers holding their inserts open
 * beside a relay that advances all along lose none, and none is fetched
 * twice; relay_progress tells when rows were published and bounds the
 * retention; a WAL receiver that replays nothing is no standby to the
 * relay's wait or to the replication gauges; the fetch reads the outbox
 * through its primary key even before the table's first ANALYZE.
 *
 * A chained suite (tests/common/cases.h): the cases run in order on one
 * database; store_relay_cursor_<case> runs the ones before it first.
 */
#include "cases.h"
#include "storetest.h"

#include "store/gauges.h"
#include "store/relay_sql.h"
#include "testenv.h"

#include <inttypes.h>
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static struct store_relay *sr;
static PGconn *pg, *late;
static int rows_made;
static long long fetched; /* rows offered by every fetch so far */

#define PLANT(...) CHECK(st_exec(pg, true, __VA_ARGS__))

/* A result row of its own key on conn (committed unless conn is in a
 * transaction); its id, or -1. */
static long long result_row(PGconn *conn)
{
        char key[32];

        snprintf(key, sizeof(key), "cur-%d", rows_made++);
        return st_count(conn,
                        "INSERT INTO outbox (event_id, message_key, tenant_id,"
                        " idem_key, intent_event_id, status, payload)"
                        " VALUES (gen_random_uuid(), 'tenant-a/%s',"
                        " 'tenant-a', '%s', 'ev-%s', 'rejected', '{}')"
                        " RETURNING id",
                        key, key, key);
}

static long long through(void)
{
        return st_count(pg, "SELECT through FROM relay_cursor WHERE id = 1");
}

/* Advances the cursor (twice: a barrier set by the first is resolved by
 * the second, when its transactions are over). */
static void advance(void)
{
        char err[512];
        int64_t t;

        for (int i = 0; i < 2; i++) {
                int rc = store_relay_advance(sr, &t, err, sizeof(err));
                if (rc != STORE_OK)
                        fprintf(stderr, "advance: %s\n", err);
                REQUIRE(rc == STORE_OK);
        }
}

/* Fetches and marks everything there is (the relay without Kafka); the
 * number of rows marked, and whether id was among them. */
static int publish_all(long long id, bool *saw)
{
        struct store_relay_batch b = { 0 };
        char err[512];
        int held = 0, members = 0, n = 0;

        *saw = false;
        REQUIRE(store_relay_rebalance(sr, &held, &members, err, sizeof(err)) ==
                STORE_OK);
        for (;;) {
                int64_t ids[64], marked = 0;

                REQUIRE(store_relay_fetch(sr, 64, 256, NULL, 0, &b, err,
                                          sizeof(err)) == STORE_OK);
                if (b.n == 0)
                        break;
                fetched += (long long)b.n;
                for (size_t i = 0; i < b.n; i++) {
                        ids[i] = b.rows[i].id;
                        if (ids[i] == id)
                                *saw = true;
                }
                REQUIRE(store_relay_mark(sr, ids, b.n, &marked, err,
                                         sizeof(err)) == STORE_OK);
                n += (int)marked;
                store_relay_batch_clear(&b);
        }
        return n;
}

/* Unparks row id (the trigger opens it again: the cursor goes just below
 * it) and publishes it, alone. */
static void unpark_and_publish(long long id)
{
        bool saw;

        PLANT("UPDATE outbox SET parked_at = NULL, park_reason = NULL"
              " WHERE id = %lld",
              id);
        CHECK_EQ_I(through(), id - 1);
        CHECK_EQ_I(publish_all(id, &saw), 1);
        CHECK(saw);
}

static long long unpublished(void)
{
        return st_count(pg, "SELECT count(*) FROM outbox WHERE NOT"
                            " co_outbox_published(id, parked_at, published_at)"
                            " AND parked_at IS NULL");
}

/* The migration made the cursor; with nothing to publish it reaches the
 * last row. */
static void starts(void)
{
        long long last;
        bool saw;

        CHECK_EQ_I(st_count(pg, "SELECT count(*) FROM relay_cursor"), 1);
        CHECK_EQ_I(st_count(pg, "SELECT count(*) FROM pg_indexes WHERE"
                                " indexname = 'outbox_unpublished_idx'"),
                   0);
        for (int i = 0; i < 5; i++)
                last = result_row(pg);
        CHECK(through() < last);
        CHECK_EQ_I(publish_all(0, &saw), 5);
        advance();
        CHECK_EQ_I(through(), last);
        CHECK_EQ_I(unpublished(), 0);
}

/* A result of a transaction still open is not passed, however many rows
 * after it are published; once committed it is fetched. */
static void late_commit(void)
{
        long long id, last = 0;
        bool saw;

        REQUIRE(st_exec(late, true, "BEGIN"));
        id = result_row(late);
        REQUIRE(id > 0);
        for (int i = 0; i < 20; i++)
                last = result_row(pg);
        for (int round = 0; round < 3; round++) {
                CHECK_EQ_I(publish_all(id, &saw), round == 0 ? 20 : 0);
                CHECK(!saw);
                advance();
                CHECK(through() < id);
        }
        REQUIRE(st_exec(late, true, "COMMIT"));
        CHECK_EQ_I(publish_all(id, &saw), 1);
        CHECK(saw);
        advance();
        CHECK_EQ_I(through(), last);
        CHECK_EQ_I(unpublished(), 0);
}

/* An insert rolled back leaves an id that never commits: passed once the
 * barrier of its time is over. */
static void aborted_insert(void)
{
        long long id, last;
        bool saw;

        REQUIRE(st_exec(late, true, "BEGIN"));
        id   = result_row(late);
        last = result_row(pg);
        advance();
        CHECK(through() < id);
        REQUIRE(st_exec(late, true, "ROLLBACK"));
        CHECK_EQ_I(publish_all(0, &saw), 1);
        advance();
        advance();
        CHECK_EQ_I(through(), last);
}

/* Republished (co_relay_reopen, as `relay --republish-*` calls it) and
 * unparked rows (the trigger of 0021/0027) bring the cursor back below
 * them, and a relay publishes them again, and only them: the rows
 * between, published, go into done. */
static void reopen(void)
{
        long long id = result_row(pg), gen0, t;
        bool saw;

        for (int i = 0; i < 3; i++)
                t = result_row(pg);
        CHECK_EQ_I(publish_all(id, &saw), 4);
        advance();
        CHECK_EQ_I(through(), t);
        gen0 = st_count(pg, "SELECT gen FROM relay_cursor WHERE id = 1");
        PLANT("SELECT co_relay_reopen('{%lld}')", id);
        CHECK_EQ_I(through(), id - 1);
        CHECK_EQ_I(st_count(pg, "SELECT gen FROM relay_cursor WHERE id = 1"),
                   gen0 + 1);
        CHECK_EQ_I(st_count(pg,
                            "SELECT count(*) FROM outbox WHERE id"
                            " BETWEEN %lld AND %lld AND NOT"
                            " co_outbox_published(id, parked_at,"
                            " published_at)",
                            id, t),
                   1);
        CHECK_EQ_I(publish_all(id, &saw), 1);
        CHECK(saw);
        advance();
        CHECK_EQ_I(through(), t);
        CHECK_EQ_I(st_count(pg, "SELECT count(*) FROM relay_cursor"
                                " WHERE done <> '{}'"),
                   0);
        /* parked, passed, unparked: back in line */
        PLANT("UPDATE outbox SET parked_at = now(), park_reason = 'test'"
              " WHERE id = %lld",
              id);
        t = result_row(pg);
        CHECK_EQ_I(publish_all(0, &saw), 1);
        advance();
        CHECK_EQ_I(through(), t);
        unpark_and_publish(id);
        advance();
        CHECK_EQ_I(through(), t);
}

/* A republish (co_relay_reopen) and an unpark (its trigger) of the same
 * row at once wait for each other and both succeed: each takes the row
 * before the cursor's row. (Taking the cursor's row first, the republish
 * deadlocked with an unpark that held the row.) */
static void reopen_no_deadlock(void)
{
        long long id = result_row(pg);
        PGresult *res;
        bool saw, ok = true;

        CHECK_EQ_I(publish_all(id, &saw), 1);
        advance();
        PLANT("UPDATE outbox SET parked_at = now(), park_reason = 'test'"
              " WHERE id = %lld",
              id);
        /* the unpark's transaction holds the row */
        REQUIRE(st_exec(late, true, "BEGIN"));
        REQUIRE(st_exec(late, true,
                        "SELECT 1 FROM outbox WHERE id = %lld FOR UPDATE", id));
        /* the republish, on the other connection, waits */
        {
                char sql[96];
                snprintf(sql, sizeof(sql), "SELECT co_relay_reopen('{%lld}')",
                         id);
                REQUIRE(PQsendQuery(pg, sql) == 1);
        }
        REQUIRE(st_wait_blocked_by(late, "%co_relay_reopen%"));
        CHECK(st_exec(late, true,
                      "UPDATE outbox SET parked_at = NULL, park_reason = NULL"
                      " WHERE id = %lld",
                      id));
        CHECK(st_exec(late, true, "COMMIT"));
        while ((res = PQgetResult(pg)) != NULL) {
                if (PQresultStatus(res) != PGRES_TUPLES_OK) {
                        fprintf(stderr, "republish: %s",
                                PQresultErrorMessage(res));
                        ok = false;
                }
                PQclear(res);
        }
        CHECK(ok);
        CHECK(through() < id);
        CHECK_EQ_I(publish_all(id, &saw), 1);
        CHECK(saw);
        advance();
}

/* An advance computed before a row was opened again is dropped (gen). */
static void advance_after_reopen(void)
{
        long long id = result_row(pg);
        bool saw;

        CHECK_EQ_I(publish_all(id, &saw), 1);
        advance();
        CHECK_EQ_I(through(), id);
        /* what store_relay_advance's last statement does when the row
         * was opened between its first and its last: nothing */
        REQUIRE(st_exec(late, true, "BEGIN"));
        REQUIRE(st_exec(late, true, "SELECT co_relay_reopen('{%lld}')", id));
        REQUIRE(st_exec(late, true, "COMMIT"));
        CHECK(st_exec(pg, true,
                      "UPDATE relay_cursor SET through = %lld"
                      " WHERE id = 1 AND gen = (SELECT gen - 1 FROM"
                      " relay_cursor WHERE id = 1)",
                      id));
        CHECK_EQ_I(through(), id - 1);
        advance();
        CHECK(through() < id);
        CHECK_EQ_I(publish_all(id, &saw), 1);
        CHECK(saw);
        advance();
        CHECK_EQ_I(through(), id);
}

/* The mark writes no outbox row (0027): the row keeps its version
 * (ctid, xmin), its id joins relay_cursor.done, and a second mark of it
 * counts nothing. */
static void mark_writes_no_row(void)
{
        long long id = result_row(pg);
        char sql[128], before[64], err[512];
        int64_t ids[1] = { id }, marked = -1;
        const char *v;

        snprintf(sql, sizeof(sql),
                 "SELECT ctid::text || '/' || xmin::text FROM outbox"
                 " WHERE id = %lld",
                 id);
        v = testenv_pg_value(pg, sql);
        REQUIRE(v);
        snprintf(before, sizeof(before), "%s", v);
        CHECK(store_relay_mark(sr, ids, 1, &marked, err, sizeof(err)) ==
              STORE_OK);
        CHECK_EQ_I(marked, 1);
        CHECK_EQ_I(st_count(pg,
                            "SELECT count(*) FROM outbox WHERE id = %lld"
                            " AND ctid::text || '/' || xmin::text = '%s'",
                            id, before),
                   1);
        CHECK_EQ_I(st_count(pg,
                            "SELECT count(*) FROM relay_cursor WHERE"
                            " done @> %lld::bigint",
                            id),
                   1);
        CHECK(store_relay_mark(sr, ids, 1, &marked, err, sizeof(err)) ==
              STORE_OK);
        CHECK_EQ_I(marked, 0);
        advance();
        CHECK_EQ_I(through(), id);
}

/* Ids handed out in blocks (CACHE > 1) would be drawn by sessions the
 * barrier does not name: the cursor refuses to move, the fetch goes on. */
static void sequence_cache(void)
{
        char err[512];
        int64_t t;
        long long before, id;
        bool saw;

        advance();
        before = through();
        PLANT("ALTER SEQUENCE outbox_id_seq CACHE 10");
        id = result_row(pg);
        CHECK_EQ_I(publish_all(id, &saw), 1);
        CHECK(saw);
        for (int i = 0; i < 2; i++) {
                CHECK(store_relay_advance(sr, &t, err, sizeof(err)) ==
                      STORE_ERR);
                CHECK(strstr(err, "CACHE 1") != NULL);
        }
        CHECK_EQ_I(through(), before);
        /* this session's cached ids go with the change (the others'
         * would be used up first: PostgreSQL's ALTER SEQUENCE) */
        PLANT("ALTER SEQUENCE outbox_id_seq CACHE 1");
        advance();
        advance();
        CHECK(through() >= id);
        CHECK_EQ_I(through(), st_count(pg, "SELECT pg_sequence_last_value("
                                           "'outbox_id_seq'::regclass)"));
        CHECK_EQ_I(unpublished(), 0);
}

/* Writers that hold their insert open a random while (and roll one in
 * ten back) beside a relay that publishes and advances all along: at the
 * end every committed row is published, none twice, and the cursor is at
 * the last id. */
#define WRITERS    4
#define PER_WRITER 120

static void *writer(void *arg)
{
        PGconn *conn  = st_pg();
        unsigned seed = (unsigned)(uintptr_t)arg * 2654435761u;

        for (int i = 0; i < PER_WRITER; i++) {
                struct timespec ts;

                seed = seed * 1103515245u + 12345u;
                ts   = (struct timespec){ 0, (long)(seed % 20) * 1000000L };
                REQUIRE(st_exec(conn, true, "BEGIN"));
                REQUIRE(st_exec(conn, true,
                                "INSERT INTO outbox (event_id, message_key,"
                                " tenant_id, idem_key, intent_event_id, status,"
                                " payload) VALUES (gen_random_uuid(),"
                                " 'tenant-w/w%p-%d', 'tenant-w', 'w%p-%d',"
                                " 'ev', 'rejected', '{}')",
                                arg, i, arg, i));
                nanosleep(&ts, NULL);
                REQUIRE(st_exec(conn, true,
                                (seed >> 8) % 10 == 0 ? "ROLLBACK" : "COMMIT"));
        }
        PQfinish(conn);
        return NULL;
}

static void concurrent_writers(void)
{
        pthread_t th[WRITERS];
        long long before   = st_count(pg, "SELECT count(*) FROM outbox");
        long long fetched0 = fetched;
        int marked         = 0;
        bool saw;

        CHECK_EQ_I(unpublished(), 0);
        for (intptr_t i = 0; i < WRITERS; i++)
                REQUIRE(pthread_create(&th[i], NULL, writer, (void *)(i + 1)) ==
                        0);
        for (int round = 0; round < 400; round++) {
                struct timespec ts = { 0, 5 * 1000000L };

                marked += publish_all(0, &saw);
                advance();
                nanosleep(&ts, NULL);
        }
        for (int i = 0; i < WRITERS; i++)
                pthread_join(th[i], NULL);
        for (int round = 0; round < 3; round++) {
                marked += publish_all(0, &saw);
                advance();
        }
        CHECK_EQ_I(unpublished(), 0);
        CHECK_EQ_I(marked,
                   st_count(pg, "SELECT count(*) FROM outbox") - before);
        /* none offered twice */
        CHECK_EQ_I(fetched - fetched0, marked);
        CHECK_EQ_I(through(), st_count(pg, "SELECT pg_sequence_last_value("
                                           "pg_get_serial_sequence('outbox',"
                                           " 'id')::regclass)"));
}

/* Publishes id, the only row to publish, and advances a second later:
 * through reaches it, and so does one relay_progress entry. */
static void publish_noted(long long id)
{
        bool saw;

        CHECK_EQ_I(publish_all(id, &saw), 1);
        CHECK(saw);
        nanosleep(&(struct timespec){ 1, 100 * 1000000L }, NULL);
        advance();
        CHECK_EQ_I(through(), id);
        CHECK_EQ_I(st_count(pg,
                            "SELECT count(*) FROM relay_progress"
                            " WHERE through >= %lld",
                            id),
                   1);
}

/* The relay notes when through moved (relay_progress: at most once a
 * second, by any relay); a published row's time is that of the first
 * entry reaching it, an unpublished one has none; the retention removes
 * the published rows at or below the newest entry older than itself, and
 * the entries before that one, and moves the audit's watermark. */
static void progress(void)
{
        long long id = result_row(pg), t, left, covered;
        int64_t del  = -1;
        char err[512];
        bool saw;

        publish_noted(id);
        CHECK_EQ_I(st_count(pg,
                            "SELECT count(*) FROM outbox o,"
                            " relay_progress p WHERE o.id = %lld"
                            " AND p.through >= o.id AND"
                            " co_outbox_published_at(o.id, o.parked_at,"
                            " o.published_at, o.reopened_at) = p.at",
                            id),
                   1);
        t = result_row(pg);
        CHECK_EQ_I(st_count(pg,
                            "SELECT count(*) FROM outbox o"
                            " WHERE o.id = %lld AND"
                            " co_outbox_published_at(o.id, o.parked_at,"
                            " o.published_at, o.reopened_at) IS NULL",
                            t),
                   1);
        /* an hour later, with a retention of half an hour: t, published
         * now, stays */
        PLANT("UPDATE relay_progress SET at = at - interval '1 hour'");
        CHECK_EQ_I(publish_all(t, &saw), 1);
        covered = st_count(pg, "SELECT through FROM relay_progress"
                               " ORDER BY at DESC LIMIT 1");
        CHECK(covered >= id && covered < t);
        /* the rows opened again by the cases before, within the hour,
         * stay too: published again after the entry */
        left = st_count(pg,
                        "SELECT count(*) FROM outbox WHERE id > %lld"
                        " OR reopened_at IS NOT NULL",
                        covered);
        CHECK(left > 1);
        CHECK(store_relay_cleanup(sr, 30 * 60 * 1000, 1000000, &del, err,
                                  sizeof(err)) == STORE_OK);
        CHECK(del > 0);
        CHECK_EQ_I(st_count(pg, "SELECT count(*) FROM outbox"), left);
        CHECK_EQ_I(
            st_count(pg, "SELECT count(*) FROM outbox WHERE id = %lld", t), 1);
        CHECK_EQ_I(st_count(pg, "SELECT count(*) FROM relay_progress"), 1);
        CHECK_EQ_I(st_count(pg, "SELECT count(*) FROM outbox_cleanup"
                                " WHERE published_through > '-infinity'"),
                   1);
}

/* A row parked while the cursor passed it (an entry reaches it) and
 * unparked later is published after its unpark: its time is that of an
 * entry after its reopened_at, and the retention keeps it, although an
 * entry older than the retention reaches it. */
static void progress_after_reopen(void)
{
        long long id = result_row(pg), t, later;
        int64_t del  = -1;
        char err[512];

        PLANT("UPDATE outbox SET parked_at = now(), park_reason = 'test'"
              " WHERE id = %lld",
              id);
        t = result_row(pg);
        publish_noted(t);
        /* an hour later: unparked (the trigger opens it again), published
         * and noted after the next result */
        PLANT("UPDATE relay_progress SET at = at - interval '1 hour'");
        unpark_and_publish(id);
        later = result_row(pg);
        publish_noted(later);
        CHECK_EQ_I(st_count(pg,
                            "SELECT count(*) FROM outbox o WHERE o.id ="
                            " %lld AND co_outbox_published_at(o.id,"
                            " o.parked_at, o.published_at, o.reopened_at)"
                            " > o.reopened_at",
                            id),
                   1);
        CHECK(store_relay_cleanup(sr, 30 * 60 * 1000, 1000000, &del, err,
                                  sizeof(err)) == STORE_OK);
        CHECK_EQ_I(
            st_count(pg, "SELECT count(*) FROM outbox WHERE id = %lld", id), 1);
        CHECK_EQ_I(
            st_count(pg, "SELECT count(*) FROM outbox WHERE id = %lld", t), 0);
}

/*
 * A WAL receiver is no standby (pg_receivewal --synchronous, as a WAL
 * archiver runs it): it flushes the primary's WAL but replays nothing and
 * cannot be promoted, so neither the relay's wait for standbys nor the
 * replication gauges count it (the harness has no standby of its own).
 */
static void wal_receiver_not_standby(void)
{
        struct store_replication_info ri;
        struct store *st = st_store();
        char dir[512], lsn[32], err[512];
        int flushed = -1, hidden = -1;
        pid_t pid;

        snprintf(lsn, sizeof(lsn), "%s",
                 testenv_pg_value(pg, "SELECT pg_current_wal_lsn()"));
        /* it has flushed past lsn when this returns */
        pid = testenv_wal_receiver_start(dir, sizeof(dir), 20000);
        REQUIRE(pid > 0);
        CHECK(store_relay_standbys_flushed(sr, lsn, &flushed, &hidden, err,
                                           sizeof(err)) == STORE_OK);
        CHECK_EQ_I(flushed, 0);
        CHECK_EQ_I(hidden, 0);
        CHECK(store_replication(st, 5000, &ri, err, sizeof(err)) == STORE_OK);
        CHECK_EQ_I(ri.standbys, 0);
        CHECK_EQ_I(ri.sync_standbys, 0);
        CHECK_EQ_I(ri.mode, STORE_REPL_NONE);
        testenv_wal_receiver_stop(pid, dir);
        store_destroy(st);
}

/*
 * The fetch on an outbox that has no statistics yet (a fresh database
 * before autovacuum's first ANALYZE) reads its window through the primary
 * key, estimated as the few rows it is. "id > through" alone is estimated
 * at a third of the table then, and in a latency run the planner chose a
 * sequential scan of the whole outbox and a sort for every fetch until
 * the first ANALYZE, 13 ms a fetch at 16,000 rows and more with each row
 * (the choice between the two plans is close and turns on the rows'
 * width). The range closed by the sequence's value is estimated at 0.5 %
 * of the table: asserted on the index's estimate (bitmap scans only, so
 * that the index condition's estimate is shown apart from the filter's),
 * and no sequential scan in the plan the fetch gets.
 */
static double plan_rows(PGresult *res, const char *node)
{
        for (int r = 0; r < PQntuples(res); r++) {
                const char *line = PQgetvalue(res, r, 0), *p;
                if (strstr(line, node) && (p = strstr(line, " rows=")))
                        return strtod(p + 6, NULL);
        }
        return -1;
}

static void fetch_unanalyzed(void)
{
        char thr[24];
        const char *v[7] = { "16",   "{0,1,2,3,4,5,6,7,8,9,10,11,12,13,14,15}",
                             "2000", "500",
                             "{}",   thr,
                             "{}" };
        PGresult *res;
        long long n;
        double est;
        bool seq = false;

        PLANT("ALTER TABLE outbox SET (autovacuum_enabled = false)");
        PLANT("INSERT INTO outbox (event_id, message_key, tenant_id, idem_key,"
              " intent_event_id, status, payload)"
              " SELECT gen_random_uuid(), 'tenant-a/un-' || g, 'tenant-a',"
              " 'un-' || g, 'ev-un-' || g, 'rejected', '{}'"
              " FROM generate_series(1, 20000) g");
        /* as never analyzed */
        PLANT("DELETE FROM pg_statistic WHERE starelid = 'outbox'::regclass");
        PLANT("UPDATE pg_class SET reltuples = -1 WHERE oid = "
              "'outbox'::regclass");
        n = st_count(pg, "SELECT count(*) FROM outbox");
        snprintf(thr, sizeof(thr), "%lld",
                 st_count(pg, "SELECT max(id) - 100 FROM outbox"));
        res = PQexecParams(pg, "EXPLAIN " STORE_RELAY_FETCH_SQL, 7, NULL, v,
                           NULL, NULL, 0);
        CHECK(PQresultStatus(res) == PGRES_TUPLES_OK);
        for (int r = 0; r < PQntuples(res); r++)
                seq = seq || strstr(PQgetvalue(res, r, 0),
                                    "Seq Scan on outbox") != NULL;
        CHECK(!seq);
        PQclear(res);
        PLANT("SET enable_indexscan = off");
        res = PQexecParams(pg, "EXPLAIN " STORE_RELAY_FETCH_SQL, 7, NULL, v,
                           NULL, NULL, 0);
        CHECK(PQresultStatus(res) == PGRES_TUPLES_OK);
        est = plan_rows(res, "Bitmap Index Scan on outbox_pkey");
        if (!(est >= 0 && est <= 0.01 * (double)n))
                for (int r = 0; r < PQntuples(res); r++)
                        fprintf(stderr, "plan: %s\n", PQgetvalue(res, r, 0));
        CHECK(est >= 0);
        CHECK(est <= 0.01 * (double)n);
        PQclear(res);
        PLANT("RESET enable_indexscan");
        PLANT("ALTER TABLE outbox RESET (autovacuum_enabled)");
        PLANT("ANALYZE outbox");
}

static int setup(void)
{
        char err[512];
        int rc = st_begin("store_relay_cursor");

        if (rc)
                return rc;
        pg   = st_pg();
        late = st_pg();
        sr   = store_relay_connect(st_conninfo(), 1, err, sizeof(err));
        if (!sr)
                fprintf(stderr, "relay: %s\n", err);
        REQUIRE(sr);
        return 0;
}

static void teardown(void)
{
        store_relay_destroy(sr);
        PQfinish(late);
        PQfinish(pg);
        st_end();
}

int main(int argc, char **argv)
{
        static const struct test_case cases[] = {
                { "starts", starts, NULL, NULL },
                { "late_commit", late_commit, NULL, NULL },
                { "aborted_insert", aborted_insert, NULL, NULL },
                { "reopen", reopen, NULL, NULL },
                { "reopen_no_deadlock", reopen_no_deadlock, NULL, NULL },
                { "advance_after_reopen", advance_after_reopen, NULL, NULL },
                { "mark_writes_no_row", mark_writes_no_row, NULL, NULL },
                { "sequence_cache", sequence_cache, NULL, NULL },
                { "concurrent_writers", concurrent_writers, NULL, NULL },
                { "progress", progress, NULL, NULL },
                { "progress_after_reopen", progress_after_reopen, NULL, NULL },
                { "wal_receiver_not_standby", wal_receiver_not_standby, NULL,
                  NULL },
                { "fetch_unanalyzed", fetch_unanalyzed, NULL, NULL },
        };
        return st_suite_main("store_relay_cursor", cases,
                             sizeof(cases) / sizeof(cases[0]), setup, teardown,
                             true, argc, argv);
}
