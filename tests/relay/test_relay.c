/* SPDX-License-Identifier: Apache-2.0 */
/*
 * test_relay: `chargeonce relay` on the real broker and PostgreSQL. Outbox
 * rows are inserted with SQL (N rows over K keys, increasing ids); the
 * result topic is read back and checked like a downstream would: drop
 * event ids already seen, then every row must be there once and, per key,
 * in outbox id order. One scenario per run:
 *
 *   test_relay crash [SEED]
 *                         kill -9 the relay 20 times between produce and
 *                         mark (failpoints) or at random moments (the
 *                         random delays drawn from SEED; by default the
 *                         process id); prints the crash campaign's line
 *                         (crashstats.h)
 *   test_relay multi2     two relays at once, 10,000 rows over 500 keys
 *   test_relay multi3     three relays, one killed and replaced midway
 *   test_relay outage     the broker stopped for 10 s while publishing
 *   test_relay db_reconnect
 *                         the relay's database connections ended twice
 *                         with rows behind: all published once, in order
 *   test_relay retention  cleanup of old published rows only; republish
 *                         of an intent, a key and a time range
 *   test_relay latency    idle latency from commit to the topic, rows/s
 *   test_relay inproc     relay_new + cmd_engine_start/stop (as consume
 *                         runs it), counters
 *   test_relay park       a row over the topic's max.message.bytes and one
 *                         over the producer's message.max.bytes among 300:
 *                         both parked once, every other row published in
 *                         per-key order, audit lists them, unpark after
 *                         the limit is raised publishes one
 *   test_relay notopic    the results topic does not exist: nothing is
 *                         parked, produce attempts stay few (back-off),
 *                         all is published once the topic is created
 *   test_relay overlap    a round's reports held back (failpoint): a row
 *                         of another key committed meanwhile is published
 *                         at once, a row of the held row's key only after
 *                         it
 *   test_relay compact    --compact-results refused beside a relay of an
 *                         earlier release; compact rows published with the
 *                         bytes built for them, one that cannot be built
 *                         parked
 *
 * Never trusts the relay's own counters: truth is the topic and the table.
 */
#include "cases.h"
#include "crashstats.h"
#include "scenario.h"
#include "testenv.h"

#include "cmd/engine.h"
#include "cmd/opts.h"
#include "flow/flow.h"
#include "payment/result.h"
#include "relay/relay.h"
#include "util/config.h"
#include "util/uuid.h"

#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define T_WAIT 120000

static int64_t now_ms(void)
{
        struct timespec ts;
        clock_gettime(CLOCK_MONOTONIC, &ts);
        return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static void sleep_ms(int ms)
{
        struct timespec ts = { ms / 1000, (long)(ms % 1000) * 1000000L };
        nanosleep(&ts, NULL);
}

static void exec_sql(struct scenario *sc, const char *sql)
{
        PGresult *res     = PQexec(sc->pg, sql);
        ExecStatusType st = PQresultStatus(res);
        SC_CHECK(st == PGRES_COMMAND_OK || st == PGRES_TUPLES_OK, "%s: %s", sql,
                 PQresultErrorMessage(res));
        PQclear(res);
}

/*
 * Inserts n rows for keys 0..nkeys-1 ("t<k%3>/key-<k>"), row g of this
 * call getting key (base + g) * 7919 % nkeys, ids increasing with g. The
 * payload carries the event id and the sequence number.
 */
static void insert_rows(struct scenario *sc, long base, long n, int nkeys)
{
        char sql[2048];
        snprintf(sql, sizeof(sql),
                 "WITH g AS (SELECT g, gen_random_uuid() AS e,"
                 "       ((g * 7919) %% %d) AS k"
                 "  FROM generate_series(%ld, %ld) g)"
                 " INSERT INTO outbox (event_id, message_key, tenant_id,"
                 "       idem_key, intent_event_id, status, payload)"
                 " SELECT e, 't' || (k %% 3) || '/key-' || k, 't' || (k %% 3),"
                 "       'key-' || k, gen_random_uuid()::text, 'conflict',"
                 "       json_build_object('event_id', e, 'seq', g,"
                 "                         'k', k)::text"
                 "   FROM g ORDER BY g",
                 nkeys, base + 1, base + n);
        exec_sql(sc, sql);
}

static long unpublished(struct scenario *sc)
{
        return sc_sql_long(sc, "SELECT count(*) FROM outbox"
                               " WHERE" SC_UNPUBLISHED);
}

static bool wait_published(struct scenario *sc, int timeout_ms)
{
        return sc_wait_sql(sc,
                           "SELECT NOT EXISTS (SELECT 1 FROM outbox"
                           " WHERE" SC_UNPUBLISHED ")",
                           timeout_ms);
}

/* ---- the downstream check ---- */

struct row {
        char event_id[40];
        char key[64];
        long id;
        int seen;
        bool parked; /* must not be on the topic */
        char *first_value;
};

static int row_cmp(const void *a, const void *b)
{
        return strcmp(((const struct row *)a)->event_id,
                      ((const struct row *)b)->event_id);
}


struct verdict {
        long rows, messages, duplicates;
        long removed; /* messages of rows no longer in the outbox */
};

/*
 * Reads the result topic and checks: every outbox row once after dropping
 * seen event ids, key and headers right, per key the first occurrences in
 * id order, a repeated event id carries the same bytes. A parked row must
 * not be there at all.
 */
static struct verdict verify(struct scenario *sc, int idle_ms, bool removed_ok)
{
        PGresult *res    = PQexec(sc->pg, "SELECT event_id, message_key, id,"
                                             "       parked_at IS NOT NULL"
                                             "  FROM outbox ORDER BY event_id");
        struct verdict v = { 0, 0, 0, 0 };
        struct row *rows;
        struct sc_msg *m;
        size_t nm;
        int nk = 0;
        struct lastid {
                char key[64];
                long id;
        } * last;

        SC_CHECK(PQresultStatus(res) == PGRES_TUPLES_OK, "%s",
                 PQresultErrorMessage(res));
        v.rows = PQntuples(res);
        rows   = calloc((size_t)v.rows + 1, sizeof(*rows));
        last   = calloc((size_t)v.rows + 1, sizeof(*last));
        SC_CHECK(rows && last, "oom");
        for (long r = 0; r < v.rows; r++) {
                snprintf(rows[r].event_id, sizeof(rows[r].event_id), "%s",
                         PQgetvalue(res, (int)r, 0));
                snprintf(rows[r].key, sizeof(rows[r].key), "%s",
                         PQgetvalue(res, (int)r, 1));
                rows[r].id     = atol(PQgetvalue(res, (int)r, 2));
                rows[r].parked = !strcmp(PQgetvalue(res, (int)r, 3), "t");
        }
        PQclear(res);
        nm         = sc_read_topic(sc, sc->t_results, idle_ms, &m);
        v.messages = (long)nm;
        for (size_t i = 0; i < nm; i++) {
                char eid[40], st[32];
                struct row key, *r;
                int k;

                SC_CHECK(sc_header(m[i].headers, "event_id", eid, sizeof(eid)),
                         "message %zu has no event_id header", i);
                SC_CHECK(sc_header(m[i].headers, "status", st, sizeof(st)),
                         "message %zu has no status header", i);
                snprintf(key.event_id, sizeof(key.event_id), "%s", eid);
                r = bsearch(&key, rows, (size_t)v.rows, sizeof(*rows), row_cmp);
                if (!r && removed_ok) {
                        v.removed++;
                        continue;
                }
                SC_CHECK(r, "event id %s is not in the outbox", eid);
                SC_CHECK(!r->parked, "parked row id %ld is on the topic",
                         r->id);
                SC_CHECK(m[i].key && !strcmp(m[i].key, r->key),
                         "event %s: message key differs", eid);
                SC_CHECK(m[i].value && strstr(m[i].value, eid),
                         "event %s: payload is not its row's", eid);
                if (r->seen++) {
                        v.duplicates++;
                        SC_CHECK(!strcmp(r->first_value, m[i].value),
                                 "event %s re-published with other bytes", eid);
                        continue;
                }
                r->first_value = m[i].value;
                /* first occurrence: per key, ids must increase */
                for (k = 0; k < nk; k++)
                        if (!strcmp(last[k].key, r->key))
                                break;
                if (k == nk) {
                        snprintf(last[nk].key, sizeof(last[nk].key), "%s",
                                 r->key);
                        last[nk++].id = 0;
                }
                SC_CHECK(r->id > last[k].id,
                         "key order broken: id %ld first seen after id %ld "
                         "of the same key",
                         r->id, last[k].id);
                last[k].id = r->id;
        }
        for (long r = 0; r < v.rows; r++)
                SC_CHECK(rows[r].seen || rows[r].parked,
                         "row id %ld (event %s) never published", rows[r].id,
                         rows[r].event_id);
        sc_messages_free(m, nm);
        free(rows);
        free(last);
        printf("verify: %ld rows, %ld messages, %ld duplicates, %d keys in "
               "order\n",
               v.rows, v.messages, v.duplicates, nk);
        return v;
}

static void stop_ok(struct co *c)
{
        int rc = co_stop(c, SIGTERM, 30000);
        SC_CHECK(rc == 0, "chargeonce relay exited %d on SIGTERM", rc);
}

/* Distinct backends holding shard locks of this database. */
static long shard_holders(struct scenario *sc)
{
        return sc_sql_long(sc, "SELECT count(DISTINCT pid) FROM pg_locks"
                               " WHERE locktype = 'advisory' AND granted"
                               "   AND classid = 746129102 AND objsubid = 2"
                               "   AND database = (SELECT oid FROM pg_database"
                               "       WHERE datname = current_database())");
}

static bool wait_holders(struct scenario *sc, long want, int timeout_ms)
{
        int64_t end = now_ms() + timeout_ms;
        do {
                if (shard_holders(sc) >= want)
                        return true;
                sleep_ms(50);
        } while (now_ms() < end);
        return false;
}

/* ------------------------------------------------------------------ */

static void crash(void)
{
        static const char *const xs[] = { "relay.batch_size=40",
                                          "relay.poll_interval=200ms", NULL };
        struct scenario sc;
        struct co c;
        struct verdict v;
        char fp[128];
        int kills = 0, argc;
        long total;
        char **argv   = cases_args(&argc);
        unsigned seed = argc >= 1 ? (unsigned)strtoul(argv[0], NULL, 10)
                                  : (unsigned)getpid();

        printf("relay crash: seed %u (reproduce: test_relay crash %u)\n", seed,
               seed);
        crashstats_begin("relay_crash", seed);
        sc_init(&sc, "relay_crash", 3);
        insert_rows(&sc, 0, 2400, 60);
        total = 2400;
        crashstats_intents((int)total);
        srand(seed);
        for (int i = 0; i < 20; i++) {
                const char *env[2] = { fp, NULL };
                int64_t end        = now_ms() + 30000;
                bool random_kill   = i % 5 == 4;
                int rc             = -1;

                /* every restart finds rows to publish: a random kill
                 * can come late (how many rows a relay marks before it
                 * depends on the machine's load), so the kills, not the
                 * timing, decide how many restarts the run has */
                if (unpublished(&sc) == 0) {
                        insert_rows(&sc, total, 400, 60);
                        total += 400;
                        crashstats_intents((int)total);
                }

                if (i % 2 == 0)
                        snprintf(fp, sizeof(fp),
                                 "CHARGEONCE_FAILPOINTS=relay.before_mark="
                                 "%d*kill",
                                 2 + i % 4);
                else
                        snprintf(fp, sizeof(fp),
                                 "CHARGEONCE_FAILPOINTS=relay.after_produce="
                                 "%d*kill",
                                 2 + i % 3);
                co_start(&sc, &c, "relay", NULL, xs, random_kill ? NULL : env);
                if (random_kill) {
                        /* at a random moment once it publishes: a
                         * fixed delay either killed it before its first
                         * round or after it had published everything
                         * (2,000 rows take well under a second) */
                        long before = unpublished(&sc);

                        for (int w = 0; w < 1000 && co_alive(&c) &&
                                        unpublished(&sc) == before;
                             w++)
                                sleep_ms(10);
                        sleep_ms(rand() % 100);
                        rc = co_stop(&c, SIGKILL, 5000);
                } else {
                        /* until the failpoint kills it, or all is out */
                        while (now_ms() < end) {
                                rc = co_wait(&c, 50);
                                if (rc >= 0)
                                        break;
                                if (unpublished(&sc) == 0) {
                                        rc = co_stop(&c, SIGKILL, 5000);
                                        break;
                                }
                        }
                        if (rc < 0)
                                rc = co_stop(&c, SIGKILL, 5000);
                }
                SC_CHECK(rc == 128 + SIGKILL, "restart %d: exit status %d", i,
                         rc);
                kills++;
                crashstats_kill();
                printf("restart %d (%s): %ld unpublished\n", i,
                       random_kill ? "SIGKILL at a random moment" : fp + 22,
                       unpublished(&sc));
        }
        SC_CHECK(kills == 20, "%d kills", kills);
        co_start(&sc, &c, "relay", NULL, xs, NULL);
        SC_CHECK(wait_published(&sc, T_WAIT), "%ld rows left unpublished",
                 unpublished(&sc));
        /* with nothing left it may not have started yet: a SIGTERM before
         * its handler is installed would end it 143 */
        SC_CHECK(wait_holders(&sc, 1, T_WAIT), "the last relay never ran");
        stop_ok(&c);
        crashstats_checking(); /* verify() stops at the first broken one */
        v = verify(&sc, 3000, false);
        SC_CHECK(v.rows == total, "%ld rows, %ld inserted", v.rows, total);
        crashstats_done(0);
        SC_CHECK(v.duplicates > 0,
                 "no duplicate at all: the kills never hit between produce "
                 "and mark");
        sc_cleanup(&sc);
}

static void multi(int nrelays)
{
        static const char *const xs[] = { "relay.batch_size=200",
                                          "relay.rebalance_interval=200ms",
                                          NULL };
        struct scenario sc;
        struct co c[4];
        int64_t t0;
        long max_holders = 0;

        sc_init(&sc, nrelays == 2 ? "relay_multi2" : "relay_multi3", 3);
        for (int i = 0; i < nrelays; i++)
                co_start(&sc, &c[i], "relay", NULL, xs, NULL);
        SC_CHECK(wait_holders(&sc, nrelays, 20000),
                 "the shards were not shared out between %d relays", nrelays);
        t0 = now_ms();
        for (int chunk = 0; chunk < 10; chunk++) {
                long h;
                insert_rows(&sc, chunk * 1000L, 1000, 500);
                h = shard_holders(&sc);
                if (h > max_holders)
                        max_holders = h;
                if (nrelays == 3 && chunk == 4) {
                        /* one dies mid-drain; a new one takes its place */
                        SC_CHECK(co_stop(&c[1], SIGKILL, 5000) == 137, "kill");
                        co_start(&sc, &c[1], "relay", NULL, xs, NULL);
                }
                sleep_ms(100);
        }
        SC_CHECK(wait_published(&sc, T_WAIT), "%ld rows left unpublished",
                 unpublished(&sc));
        printf("%d relays: 10000 rows published in %lld ms (inserted over "
               "~1 s); up to %ld relays held shards\n",
               nrelays, (long long)(now_ms() - t0), max_holders);
        SC_CHECK(max_holders >= nrelays, "only %ld relays worked", max_holders);
        for (int i = 0; i < nrelays; i++)
                stop_ok(&c[i]);
        SC_CHECK(verify(&sc, 3000, false).rows == 10000, "rows");
        sc_cleanup(&sc);
}

static void services(const char *what)
{
        char cmd[1024];
        const char *src = getenv("CHARGEONCE_SOURCE_DIR");
        const char *dir = getenv("CHARGEONCE_TEST_DIR");

        SC_CHECK(src && dir, "CHARGEONCE_SOURCE_DIR / CHARGEONCE_TEST_DIR");
        snprintf(cmd, sizeof(cmd),
                 "'%s/tests/harness/services.sh' %s '%s' >/dev/null", src, what,
                 dir);
        SC_CHECK(system(cmd) == 0, "services.sh %s failed", what);
}

static void outage(void)
{
        static const char *const xs[] = { "relay.batch_size=100", NULL };
        struct scenario sc;
        struct co c;
        int64_t t0;
        long waiting;

        sc_init(&sc, "relay_outage", 3);
        co_start(&sc, &c, "relay", NULL, xs, NULL);
        insert_rows(&sc, 0, 1000, 100);
        SC_CHECK(wait_published(&sc, T_WAIT), "first rows");
        insert_rows(&sc, 1000, 3000, 100);
        services("stop-kafka");
        t0 = now_ms();
        printf("broker stopped with %ld row(s) unpublished\n",
               unpublished(&sc));
        insert_rows(&sc, 4000, 1000, 100);
        while (now_ms() - t0 < 10000)
                sleep_ms(200);
        waiting = unpublished(&sc);
        printf("after 10 s without a broker: %ld row(s) waiting\n", waiting);
        SC_CHECK(waiting > 0, "rows were marked while the broker was down");
        SC_CHECK(co_alive(&c), "the relay died with the broker");
        services("start-again-kafka");
        t0 = now_ms();
        insert_rows(&sc, 5000, 1000, 100);
        SC_CHECK(wait_published(&sc, T_WAIT),
                 "%ld rows left unpublished after the broker came back",
                 unpublished(&sc));
        printf("caught up %lld ms after the broker was started again\n",
               (long long)(now_ms() - t0));
        stop_ok(&c);
        SC_CHECK(verify(&sc, 3000, false).rows == 6000, "rows");
        sc_cleanup(&sc);
}

/*
 * The relay's database connections ended under it (pg_terminate_backend,
 * as a failover or a restart of PostgreSQL ends them) twice, each time
 * with rows committed behind: it connects again, prepares its
 * statements again on the new connection and publishes everything once,
 * in key order.
 */
static void db_reconnect(void)
{
        struct scenario sc;
        struct co c;

        sc_init(&sc, "relay_db_reconnect", 3);
        co_start(&sc, &c, "relay", NULL, NULL, NULL);
        insert_rows(&sc, 0, 500, 50);
        SC_CHECK(wait_published(&sc, T_WAIT), "first rows");
        for (int round = 1; round <= 2; round++) {
                long ended = sc_sql_long(
                    &sc, "SELECT count(pg_terminate_backend(pid))"
                         "  FROM pg_stat_activity"
                         " WHERE datname = current_database()"
                         "   AND application_name LIKE 'chargeonce relay%%'");
                SC_CHECK(ended == 2, "ended %ld relay connection(s), want 2",
                         ended);
                insert_rows(&sc, 500 * round, 500, 50);
                SC_CHECK(wait_published(&sc, 30000),
                         "%ld rows left unpublished after the relay's "
                         "connections ended (time %d)",
                         unpublished(&sc), round);
                SC_CHECK(co_alive(&c), "the relay died with its connections");
        }
        stop_ok(&c);
        SC_CHECK(verify(&sc, 3000, false).rows == 1500, "rows");
        sc_cleanup(&sc);
}

/* `chargeonce relay ARGS`: its exit status; its output (both streams)
 * into out. */
static int run_relay_cmd(struct scenario *sc, const char *args, char *out,
                         size_t outsz)
{
        char cmd[2048];
        size_t n = 0;
        FILE *p;
        int st;

        snprintf(cmd, sizeof(cmd), "'%s' -X 'db.conninfo=%s' relay %s 2>&1",
                 getenv("CHARGEONCE_BIN"), sc->conninfo, args);
        p = popen(cmd, "r");
        SC_CHECK(p, "popen");
        out[0] = '\0';
        while (n + 1 < outsz && fgets(out + n, (int)(outsz - n), p))
                n += strlen(out + n);
        while (fgets(cmd, sizeof(cmd), p)) /* the rest, unkept */
                ;
        st = pclose(p);
        printf("  relay %s: %s", args, out);
        return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

/* Runs `chargeonce relay ARGS` on the scenario's database; its status,
 * and in *reset the count its republish or unpark line gives (-1: none). */
static int run_republish(struct scenario *sc, const char *args, long *reset)
{
        char out[4096];
        int st = run_relay_cmd(sc, args, out, sizeof(out));

        *reset = -1;
        for (const char *line = out; line && *line;) {
                if (!strncmp(line, "republish: ", 11))
                        *reset = atol(line + 11);
                else if (!strncmp(line, "republish --dry-run: ", 21))
                        *reset = atol(line + 21);
                else if (!strncmp(line, "unpark --dry-run: ", 18))
                        *reset = atol(line + 18);
                line = strchr(line, '\n');
                line = line ? line + 1 : NULL;
        }
        return st;
}

static void retention(void)
{
        static const char *const xs[] = { "relay.retention=1h",
                                          "relay.cleanup_interval=200ms",
                                          "relay.cleanup_batch=7", NULL };
        struct scenario sc;
        struct co c;
        struct verdict v;
        const char *s;
        char intent[64], key[64], args[256];
        long reset, expect;

        sc_init(&sc, "relay_retention", 3);
        insert_rows(&sc, 0, 300, 30);
        co_start(&sc, &c, "relay", NULL, xs, NULL);
        SC_CHECK(wait_published(&sc, T_WAIT), "published");

        /* rows 1..100 published 2 h ago, 101..200 50 min ago, 201..250
         * 30 min ago, 251..300 10 min ago (relay_progress, 0027: the
         * relay, which noted the 300 as published, writes no entry again
         * until its cursor passes row 300), and 20 old rows never
         * published */
        SC_CHECK(sc_wait_sql(&sc,
                             "SELECT max(through) >= 300 FROM relay_progress",
                             T_WAIT),
                 "relay_progress does not reach row 300");
        exec_sql(&sc, "BEGIN");
        exec_sql(&sc, "DELETE FROM relay_progress");
        exec_sql(&sc, "INSERT INTO relay_progress (at, through) VALUES"
                      " (now() - '2h'::interval, 100),"
                      " (now() - '50m'::interval, 200),"
                      " (now() - '30m'::interval, 250),"
                      " (now() - '10m'::interval, 300)");
        exec_sql(&sc, "COMMIT");
        exec_sql(&sc, "ALTER TABLE outbox DISABLE TRIGGER outbox_notify");
        exec_sql(&sc, "BEGIN");
        insert_rows(&sc, 300, 20, 30);
        exec_sql(&sc, "UPDATE outbox SET created_at = now() - '3h'::interval"
                      " WHERE id > 300");
        exec_sql(&sc, "COMMIT");
        exec_sql(&sc, "ALTER TABLE outbox ENABLE TRIGGER outbox_notify");
        SC_CHECK(sc_wait_sql(&sc,
                             "SELECT NOT EXISTS (SELECT 1 FROM outbox"
                             " WHERE id <= 100)",
                             T_WAIT),
                 "old published rows not removed");
        SC_CHECK(wait_published(&sc, T_WAIT), "old unpublished rows");
        sleep_ms(600); /* a few more cleanup ticks */
        SC_CHECK(sc_sql_long(&sc, "SELECT count(*) FROM outbox") == 220,
                 "%ld rows left, want 220 (200 recent + 20 late)",
                 sc_sql_long(&sc, "SELECT count(*) FROM outbox"));

        /* a time range: the 50 rows published 30 min ago; the dry run
         * counts them and changes nothing */
        SC_CHECK(run_republish(&sc,
                               "--republish-since 40m --until 20m --dry-run",
                               &reset) == 0 &&
                     reset == 50,
                 "republish range --dry-run: %ld", reset);
        SC_CHECK(sc_sql_long(
                     &sc, "SELECT count(*) FROM outbox WHERE" SC_UNPUBLISHED) ==
                     0,
                 "republish --dry-run changed rows");
        SC_CHECK(run_republish(&sc, "--republish-since 40m --until 20m",
                               &reset) == 0 &&
                     reset == 50,
                 "republish range: %ld", reset);
        SC_CHECK(wait_published(&sc, T_WAIT), "republished range");
        /* one intent */
        s = sc_sql(&sc, "SELECT intent_event_id FROM outbox WHERE id = 150");
        SC_CHECK(s, "intent");
        snprintf(intent, sizeof(intent), "%s", s);
        snprintf(args, sizeof(args), "--republish-intent %s", intent);
        SC_CHECK(run_republish(&sc, args, &reset) == 0 && reset == 1,
                 "republish intent: %ld", reset);
        SC_CHECK(wait_published(&sc, T_WAIT), "republished intent");
        /* one key: its rows still retained */
        s = sc_sql(&sc, "SELECT message_key FROM outbox WHERE id = 290");
        SC_CHECK(s, "key");
        snprintf(key, sizeof(key), "%s", s);
        expect = sc_sql_long(&sc,
                             "SELECT count(*) FROM outbox WHERE"
                             " message_key = '%s'",
                             key);
        snprintf(args, sizeof(args), "--republish-key %s --dry-run", key);
        SC_CHECK(run_republish(&sc, args, &reset) == 0 && reset == expect,
                 "republish key --dry-run: %ld of %ld", reset, expect);
        snprintf(args, sizeof(args), "--republish-key %s", key);
        SC_CHECK(run_republish(&sc, args, &reset) == 0 && reset == expect,
                 "republish key: %ld of %ld", reset, expect);
        SC_CHECK(run_republish(&sc, "--until 20m", &reset) == 2,
                 "--until alone must be a usage error");
        SC_CHECK(run_republish(&sc, "--republish-since yesterday", &reset) == 2,
                 "a bad time must be a usage error");
        SC_CHECK(wait_published(&sc, T_WAIT), "republished rows");
        stop_ok(&c);
        v = verify(&sc, 3000, true);
        SC_CHECK(v.rows == 220, "rows");
        /* rows 1..100 went out once and were removed; the republished
         * ones (50 + 1 + a key's) went out twice */
        SC_CHECK(v.removed == 100, "%ld messages of removed rows", v.removed);
        SC_CHECK(v.duplicates == 50 + 1 + expect || v.duplicates == 50 + expect,
                 "%ld duplicates", v.duplicates);
        sc_cleanup(&sc);
}

static int cmp_i64(const void *a, const void *b)
{
        int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
        return x < y ? -1 : x > y;
}

static void latency(void)
{
        static const char *const xs[] = { "relay.poll_interval=10s", NULL };
        struct scenario sc;
        struct co c;
        rd_kafka_conf_t *conf = testenv_kafka_conf();
        rd_kafka_t *rk;
        rd_kafka_topic_partition_list_t *l;
        char err[256];
        int64_t lat[21], t0, ms;
        const int n = 21;
        long total  = 20000;

        sc_init(&sc, "relay_latency", 3);
        co_start(&sc, &c, "relay", NULL, xs, NULL);
        SC_CHECK(wait_holders(&sc, 1, 20000), "the relay took no shard");
        rd_kafka_conf_set(conf, "group.id", "latency", err, sizeof(err));
        rk = rd_kafka_new(RD_KAFKA_CONSUMER, conf, err, sizeof(err));
        SC_CHECK(rk, "%s", err);
        rd_kafka_poll_set_consumer(rk);
        l = rd_kafka_topic_partition_list_new(3);
        for (int p = 0; p < 3; p++)
                rd_kafka_topic_partition_list_add(l, sc.t_results, p)->offset =
                    RD_KAFKA_OFFSET_END;
        SC_CHECK(rd_kafka_assign(rk, l) == 0, "assign");
        rd_kafka_topic_partition_list_destroy(l);
        /* sample 0 warms up (metadata, producer id); not counted. The poll
         * fallback is 10 s, so only the NOTIFY can be this fast. */
        for (int i = 0; i < n; i++) {
                rd_kafka_message_t *m = NULL;
                int64_t end;
                sleep_ms(i == 0 ? 1000 : 200);
                insert_rows(&sc, i, 1, 1000 + i);
                t0  = now_ms();
                end = t0 + 20000;
                while (now_ms() < end) {
                        m = rd_kafka_consumer_poll(rk, 5);
                        if (m && !m->err)
                                break;
                        if (m)
                                rd_kafka_message_destroy(m);
                        m = NULL;
                }
                SC_CHECK(m, "sample %d never arrived", i);
                lat[i] = now_ms() - t0;
                rd_kafka_message_destroy(m);
        }
        rd_kafka_consumer_close(rk);
        rd_kafka_destroy(rk);
        qsort(lat + 1, (size_t)n - 1, sizeof(*lat), cmp_i64);
        printf("idle latency, commit to consumer, %d samples: min %lld ms, "
               "median %lld ms, p90 %lld ms, max %lld ms\n",
               n - 1, (long long)lat[1], (long long)lat[1 + (n - 1) / 2],
               (long long)lat[1 + (n - 1) * 9 / 10], (long long)lat[n - 1]);
        SC_CHECK(lat[1 + (n - 1) / 2] < 100, "median idle latency %lld ms",
                 (long long)lat[1 + (n - 1) / 2]);

        /* throughput: a backlog drained by one relay from its start */
        stop_ok(&c);
        insert_rows(&sc, 100, total, 1000);
        t0 = now_ms();
        co_start(&sc, &c, "relay", NULL, NULL, NULL);
        SC_CHECK(wait_published(&sc, T_WAIT), "backlog");
        ms = now_ms() - t0;
        printf("throughput: %ld rows over 1000 keys in %lld ms from the "
               "relay's start: %lld rows/s\n",
               total, (long long)ms, (long long)(total * 1000 / (ms ? ms : 1)));
        stop_ok(&c);
        sc_cleanup(&sc);
}

/* cmd/engine's view of relay_run(). */
static int run_relay(void *engine, const atomic_int *stop)
{
        return relay_run(engine, stop);
}

/* relay_new(), then relay_run() on a thread of its own (cmd_engine_start
 * / cmd_engine_stop) in this process, as `consume` runs it. */
static void inproc(void)
{
        struct scenario sc;
        struct config *cfg = config_new();
        struct cmd_opts o;
        struct cmd_engine_thread *t;
        struct relay *r;
        struct relay_stats st;
        atomic_int no_signal = FLOW_RUN;
        char err[512], kv[1200];

        sc_init(&sc, "relay_inproc", 3);
        snprintf(kv, sizeof(kv), "db.conninfo=%s", sc.conninfo);
        SC_CHECK(config_set_arg(cfg, kv, err, sizeof(err)) == 0, "%s", err);
        snprintf(kv, sizeof(kv), "kafka.bootstrap.servers=%s", testenv_kafka());
        SC_CHECK(config_set_arg(cfg, kv, err, sizeof(err)) == 0, "%s", err);
        snprintf(kv, sizeof(kv), "topic.results=%s", sc.t_results);
        SC_CHECK(config_set_arg(cfg, kv, err, sizeof(err)) == 0, "%s", err);
        SC_CHECK(config_set_arg(cfg, "relay.batch_size=50", err, sizeof(err)) ==
                     0,
                 "%s", err);
        cmd_opts_fill(&o, cfg);
        insert_rows(&sc, 0, 500, 20);
        r = relay_new(&o.relay, err, sizeof(err));
        SC_CHECK(r, "relay_new: %s", err);
        t = cmd_engine_start("relay", run_relay, r, err, sizeof(err));
        SC_CHECK(t, "cmd_engine_start: %s", err);
        insert_rows(&sc, 500, 500, 20);
        SC_CHECK(wait_published(&sc, T_WAIT), "%ld rows left unpublished",
                 unpublished(&sc));
        relay_get_stats(r, &st);
        SC_CHECK(st.published == 1000 && st.shards_held == 16 &&
                     st.relays == 1 && st.parked == 0,
                 "stats: published %llu, shards %d, relays %d, parked %llu",
                 (unsigned long long)st.published, st.shards_held, st.relays,
                 (unsigned long long)st.parked);
        /* stop in the middle of work: in-flight rows finish and are marked
         * or stay unpublished, never half */
        insert_rows(&sc, 1000, 2000, 20);
        sleep_ms(30);
        SC_CHECK(cmd_engine_stop(t, &no_signal) == 0, "relay_run: not drained");
        relay_destroy(r);
        printf("stopped with %ld row(s) left for the next relay\n",
               unpublished(&sc));
        r = relay_new(&o.relay, err, sizeof(err));
        SC_CHECK(r, "relay_new: %s", err);
        t = cmd_engine_start("relay", run_relay, r, err, sizeof(err));
        SC_CHECK(t, "cmd_engine_start: %s", err);
        SC_CHECK(wait_published(&sc, T_WAIT), "%ld rows left unpublished",
                 unpublished(&sc));
        SC_CHECK(cmd_engine_stop(t, &no_signal) == 0, "relay_run: not drained");
        relay_destroy(r);
        cmd_opts_free(&o);
        config_destroy(cfg);
        SC_CHECK(verify(&sc, 3000, false).rows == 3000, "rows");
        sc_cleanup(&sc);
}


/* Sets the topic's max.message.bytes (AlterConfigs) and waits until the
 * broker describes the new value. */
static void topic_max_bytes(const char *topic, const char *value)
{
        char err[256];
        rd_kafka_t *rk = rd_kafka_new(RD_KAFKA_PRODUCER, testenv_kafka_conf(),
                                      err, sizeof(err));
        rd_kafka_queue_t *q;
        int64_t end = now_ms() + 30000;
        bool seen   = false;

        SC_CHECK(rk, "%s", err);
        q = rd_kafka_queue_new(rk);
        {
                rd_kafka_ConfigResource_t *cr =
                    rd_kafka_ConfigResource_new(RD_KAFKA_RESOURCE_TOPIC, topic);
                const rd_kafka_AlterConfigs_result_t *res;
                const rd_kafka_ConfigResource_t **rs;
                rd_kafka_event_t *ev;
                size_t n = 0;

                SC_CHECK(rd_kafka_ConfigResource_set_config(
                             cr, "max.message.bytes", value) == 0,
                         "set_config");
                rd_kafka_AlterConfigs(rk, &cr, 1, NULL, q);
                ev = rd_kafka_queue_poll(q, 30000);
                SC_CHECK(ev && !rd_kafka_event_error(ev), "AlterConfigs: %s",
                         ev ? rd_kafka_event_error_string(ev) : "timeout");
                res = rd_kafka_event_AlterConfigs_result(ev);
                rs  = res ? rd_kafka_AlterConfigs_result_resources(res, &n)
                          : NULL;
                SC_CHECK(rs && n == 1 && !rd_kafka_ConfigResource_error(rs[0]),
                         "AlterConfigs %s: %s", topic,
                         rs && n ? rd_kafka_ConfigResource_error_string(rs[0])
                                 : "no result");
                rd_kafka_event_destroy(ev);
                rd_kafka_ConfigResource_destroy(cr);
        }
        while (!seen && now_ms() < end) {
                rd_kafka_ConfigResource_t *cr =
                    rd_kafka_ConfigResource_new(RD_KAFKA_RESOURCE_TOPIC, topic);
                const rd_kafka_DescribeConfigs_result_t *res;
                const rd_kafka_ConfigResource_t **rs;
                rd_kafka_event_t *ev;
                size_t n = 0, nc = 0;

                rd_kafka_DescribeConfigs(rk, &cr, 1, NULL, q);
                ev  = rd_kafka_queue_poll(q, 30000);
                res = ev ? rd_kafka_event_DescribeConfigs_result(ev) : NULL;
                rs  = res ? rd_kafka_DescribeConfigs_result_resources(res, &n)
                          : NULL;
                if (rs && n == 1) {
                        const rd_kafka_ConfigEntry_t **ce =
                            rd_kafka_ConfigResource_configs(rs[0], &nc);
                        for (size_t i = 0; i < nc; i++)
                                if (!strcmp(rd_kafka_ConfigEntry_name(ce[i]),
                                            "max.message.bytes") &&
                                    rd_kafka_ConfigEntry_value(ce[i]) &&
                                    !strcmp(rd_kafka_ConfigEntry_value(ce[i]),
                                            value))
                                        seen = true;
                }
                if (ev)
                        rd_kafka_event_destroy(ev);
                rd_kafka_ConfigResource_destroy(cr);
                if (!seen)
                        sleep_ms(100);
        }
        SC_CHECK(seen, "max.message.bytes of %s never became %s", topic, value);
        rd_kafka_queue_destroy(q);
        rd_kafka_destroy(rk);
}

/* Runs `chargeonce audit`; *ids gets the outbox ids of its outbox_parked
 * lines (at most max). Returns its exit status. */
static int run_audit(struct scenario *sc, long *ids, int max, int *nids)
{
        char cmd[2048], line[4096];
        FILE *p;
        int st;

        snprintf(cmd, sizeof(cmd), "'%s' -X 'db.conninfo=%s' audit 2>/dev/null",
                 getenv("CHARGEONCE_BIN"), sc->conninfo);
        p = popen(cmd, "r");
        SC_CHECK(p, "popen");
        *nids = 0;
        while (fgets(line, sizeof(line), p)) {
                const char *o;
                printf("  audit: %s", line);
                if (!strstr(line, "\"kind\":\"outbox_parked\""))
                        continue;
                o = strstr(line, "\"outbox_id\":");
                SC_CHECK(o && *nids < max, "audit line without outbox_id");
                ids[(*nids)++] = atol(o + strlen("\"outbox_id\":"));
                SC_CHECK(!strstr(line, "key-"),
                         "audit shows an idempotency key");
        }
        st = pclose(p);
        return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

/* Lines of a file that contain needle. */
static long count_in_file(const char *path, const char *needle)
{
        FILE *f = fopen(path, "r");
        char line[8192];
        long n = 0;

        SC_CHECK(f, "%s", path);
        while (fgets(line, sizeof(line), f))
                if (strstr(line, needle))
                        n++;
        fclose(f);
        return n;
}

/* Prints the lines of a file that contain needle (what the relay said). */
static void print_lines(const char *path, const char *needle)
{
        FILE *f = fopen(path, "r");
        char line[8192];

        SC_CHECK(f, "%s", path);
        while (fgets(line, sizeof(line), f))
                if (strstr(line, needle))
                        printf("  log: %s", line);
        fclose(f);
}

static bool file_has(const char *path, const char *needle)
{
        return count_in_file(path, needle) > 0;
}

/*
 * Rows that can never be produced are parked, the rest goes on. The
 * results topic accepts 8 KB messages; row 100 is 20 KB (the broker
 * refuses it) and row 200 is 1.1 MB (over the producer's
 * message.max.bytes: never sent). Ten rows per round over 30 keys, so
 * the 20 KB row shares its batch with others of its partition, which the
 * broker refuses with it.
 */
static void park(void)
{
        static const char *const xs[] = { "relay.batch_size=10",
                                          "relay.poll_interval=200ms", NULL };
        struct scenario sc;
        struct co c;
        struct sc_msg *m;
        size_t nm;
        long ids[8], a100, a200, reset, later, max_other;
        int nids, tries, found;
        char p100[64], p200[64], eid100[40];
        const char *s;

        sc_init(&sc, "relay_park", 3);
        topic_max_bytes(sc.t_results, "8192");
        insert_rows(&sc, 0, 300, 30);
        exec_sql(&sc, "UPDATE outbox SET payload = json_build_object("
                      "  'event_id', event_id, 'pad', repeat('x', 20000))::text"
                      " WHERE id = 100");
        exec_sql(&sc, "UPDATE outbox SET payload = json_build_object("
                      "  'event_id', event_id, 'pad', repeat('y', 1100000))"
                      "::text WHERE id = 200");
        later =
            sc_sql_long(&sc, "SELECT count(*) FROM outbox o WHERE id > 100 AND"
                             " message_key = (SELECT message_key FROM outbox"
                             "                 WHERE id = 100)");
        SC_CHECK(later > 0, "no later row of row 100's key");
        co_start(&sc, &c, "relay", NULL, xs, NULL);
        SC_CHECK(sc_wait_sql(&sc,
                             "SELECT count(*) FILTER (WHERE" SC_UNPUBLISHED
                             "   AND parked_at IS NULL) = 0 AND"
                             " count(*) FILTER (WHERE parked_at IS NOT NULL)"
                             "   = 2 FROM outbox",
                             T_WAIT),
                 "%ld row(s) unpublished, %ld parked", unpublished(&sc),
                 sc_sql_long(&sc, "SELECT count(*) FROM outbox"
                                  " WHERE parked_at IS NOT NULL"));
        SC_CHECK(sc_sql_long(&sc, "SELECT count(*) FROM outbox WHERE"
                                  " parked_at IS NOT NULL AND id IN (100, 200)"
                                  " AND" SC_UNPUBLISHED) == 2,
                 "other rows than 100 and 200 parked");
        s = sc_sql(&sc, "SELECT parked_at FROM outbox WHERE id = 100");
        SC_CHECK(s, "parked_at");
        snprintf(p100, sizeof(p100), "%s", s);
        s = sc_sql(&sc, "SELECT parked_at FROM outbox WHERE id = 200");
        SC_CHECK(s, "parked_at");
        snprintf(p200, sizeof(p200), "%s", s);
        /* produce attempts, not time: the broker's refusal once in a batch
         * and once alone; the oversized row never produced */
        a100      = sc_sql_long(&sc, "SELECT publish_attempts FROM outbox"
                                          " WHERE id = 100");
        a200      = sc_sql_long(&sc, "SELECT publish_attempts FROM outbox"
                                          " WHERE id = 200");
        max_other = sc_sql_long(&sc, "SELECT max(publish_attempts) FROM outbox"
                                     " WHERE id NOT IN (100, 200)");
        printf("parked: row 100 after %ld produce attempt(s), row 200 after "
               "%ld; other rows at most %ld attempt(s) (%ld rows of row "
               "100's key after it)\n",
               a100, a200, max_other, later);
        SC_CHECK(a100 >= 1 && a100 <= 2, "row 100: %ld produce attempts", a100);
        SC_CHECK(a200 == 0, "row 200 was produced %ld time(s)", a200);
        SC_CHECK(max_other <= 2, "a row was produced %ld times", max_other);
        /* parked once: a second of more rounds changes nothing */
        sleep_ms(1500);
        SC_CHECK(sc_sql_long(&sc,
                             "SELECT count(*) FROM outbox WHERE"
                             " (id = 100 AND parked_at = '%s'"
                             "  AND publish_attempts = %ld) OR"
                             " (id = 200 AND parked_at = '%s'"
                             "  AND publish_attempts = 0)",
                             p100, a100, p200) == 2,
                 "a parked row was tried again");
        SC_CHECK(count_in_file(c.log, "outbox row 100 ") == 1 &&
                     count_in_file(c.log, "outbox row 200 ") == 1,
                 "each parked row must be logged once: %ld, %ld",
                 count_in_file(c.log, "outbox row 100 "),
                 count_in_file(c.log, "outbox row 200 "));
        SC_CHECK(!file_has(c.log, "xxxxxxxxxxxxxxxx") &&
                     !file_has(c.log, "yyyyyyyyyyyyyyyy") &&
                     !file_has(c.log, "/key-"),
                 "the relay logged a payload or a key");
        /* every other row once, per key in id order; parked ones absent */
        SC_CHECK(verify(&sc, 3000, false).rows == 300, "rows");

        /* the audit lists both */
        SC_CHECK(run_audit(&sc, ids, 8, &nids) == 1, "audit exit status");
        SC_CHECK(nids == 2 && ids[0] == 100 && ids[1] == 200,
                 "audit lists %d parked row(s)", nids);

        /* raise the topic's limit, unpark row 100: published. The broker
         * applies a new topic config shortly after it describes it; a
         * row refused meanwhile is parked again, so unpark again. */
        topic_max_bytes(sc.t_results, "1000000");
        s = sc_sql(&sc, "SELECT event_id FROM outbox WHERE id = 100");
        SC_CHECK(s, "event id");
        snprintf(eid100, sizeof(eid100), "%s", s);
        /* the dry run counts both parked rows, and unparks none */
        SC_CHECK(run_republish(&sc, "--unpark all --dry-run", &reset) == 0 &&
                     reset == 2 &&
                     sc_sql_long(&sc, "SELECT count(*) FROM outbox WHERE"
                                      " parked_at IS NOT NULL") == 2,
                 "--unpark all --dry-run: %ld", reset);
        for (tries = 1; tries <= 5; tries++) {
                SC_CHECK(run_republish(&sc, "--unpark 100", &reset) == 0,
                         "--unpark 100");
                SC_CHECK(sc_wait_sql(&sc,
                                     "SELECT" SC_PUBLISHED " OR"
                                     " parked_at IS NOT NULL FROM outbox"
                                     " WHERE id = 100",
                                     T_WAIT),
                         "row 100 neither published nor parked");
                if (sc_sql_long(&sc, "SELECT count(*) FROM outbox WHERE"
                                     " id = 100 AND" SC_PUBLISHED))
                        break;
                sleep_ms(1000);
        }
        SC_CHECK(tries <= 5, "row 100 not published after raising the limit");
        printf("row 100 published after %d unpark(s)\n", tries);
        /* unparking row 200 without a fix parks it again, unproduced */
        SC_CHECK(run_republish(&sc, "--unpark all", &reset) == 0, "--unpark");
        SC_CHECK(sc_wait_sql(&sc,
                             "SELECT parked_at IS NOT NULL FROM outbox"
                             " WHERE id = 200",
                             T_WAIT),
                 "row 200 not parked again");
        SC_CHECK(sc_sql_long(&sc, "SELECT publish_attempts FROM outbox"
                                  " WHERE id = 200") == 0,
                 "row 200 produced");
        SC_CHECK(run_republish(&sc, "--unpark 0", &reset) == 2,
                 "--unpark 0 must be a usage error");
        SC_CHECK(run_republish(&sc, "--unpark 12x", &reset) == 2,
                 "--unpark 12x must be a usage error");
        SC_CHECK(run_audit(&sc, ids, 8, &nids) == 1 && nids == 1 &&
                     ids[0] == 200,
                 "audit after the unpark: %d row(s)", nids);
        stop_ok(&c);

        /* row 100 is on the topic once, with its bytes */
        nm    = sc_read_topic(&sc, sc.t_results, 3000, &m);
        found = 0;
        for (size_t i = 0; i < nm; i++) {
                char eid[40];
                if (!sc_header(m[i].headers, "event_id", eid, sizeof(eid)) ||
                    strcmp(eid, eid100))
                        continue;
                found++;
                SC_CHECK(m[i].value && strlen(m[i].value) > 20000 &&
                             strstr(m[i].value, eid100),
                         "row 100's payload differs");
        }
        sc_messages_free(m, nm);
        SC_CHECK(found == 1, "row 100 on the topic %d time(s)", found);
        sc_cleanup(&sc);
}

/*
 * An error of the topic parks nothing and does not spin: the results
 * topic does not exist (the broker does not create topics) for 15 s,
 * then it is created and every row goes out. Produce attempts, not time,
 * show the back-off: a relay retrying at once would queue each row about
 * once a second here (librdkafka reports the unknown topic within
 * kafka.topic.metadata.propagation.max.ms = 1 s).
 */
static void notopic(void)
{
        char topic[128], xt[200];
        const char *xs[] = { "relay.batch_size=50",
                             "kafka.topic.metadata.propagation.max.ms=1000",
                             "kafka.message.timeout.ms=5000", xt, NULL };
        struct scenario sc;
        struct co c;
        long attempts, total, rounds;
        int64_t t0;

        sc_init(&sc, "relay_notopic", 3);
        SC_CHECK(strlen(sc.t_results) + 6 <= sizeof(sc.t_results), "name");
        snprintf(topic, sizeof(topic), "%.120s_late", sc.t_results);
        snprintf(xt, sizeof(xt), "topic.results=%s", topic);
        insert_rows(&sc, 0, 200, 20);
        co_start(&sc, &c, "relay", NULL, xs, NULL);
        t0 = now_ms();
        while (now_ms() - t0 < 15000) {
                SC_CHECK(co_alive(&c), "the relay died without its topic");
                sleep_ms(500);
        }
        attempts = sc_sql_long(&sc, "SELECT max(publish_attempts) FROM outbox");
        total    = sc_sql_long(&sc, "SELECT sum(publish_attempts) FROM outbox");
        printf("15 s without the topic: at most %ld produce attempt(s) per "
               "row, %ld in all, %ld row(s) waiting\n",
               attempts, total, unpublished(&sc));
        SC_CHECK(sc_sql_long(&sc, "SELECT count(*) FROM outbox"
                                  " WHERE parked_at IS NOT NULL") == 0,
                 "rows parked for an error of the topic");
        SC_CHECK(unpublished(&sc) == 200, "rows marked without a topic");
        SC_CHECK(attempts >= 1 && attempts <= 5,
                 "%ld produce attempts of one row in 15 s", attempts);
        print_lines(c.log, "\"component\":\"relay\"");
        rounds = count_in_file(c.log, "every row waits");
        SC_CHECK(rounds >= 1, "no error logged for the missing topic");
        /* one line per failed round: 10 s back-off (5 to 10 s jittered) */
        SC_CHECK(rounds <= 4, "%ld failed rounds in 15 s", rounds);
        SC_CHECK(testenv_topic_create(topic, 3) == 0, "create %s", topic);
        t0 = now_ms();
        SC_CHECK(wait_published(&sc, T_WAIT), "%ld row(s) left unpublished",
                 unpublished(&sc));
        printf("all published %lld ms after the topic was created\n",
               (long long)(now_ms() - t0));
        stop_ok(&c);
        snprintf(sc.t_results, sizeof(sc.t_results), "%.127s", topic);
        SC_CHECK(verify(&sc, 3000, false).rows == 200, "rows");
        sc_cleanup(&sc);
}

/*
 * relay.wait_for_standbys: with no standby streaming from this primary
 * (the harness has none), a relay that waits for one publishes nothing
 * and says why, also while a WAL receiver that is no standby
 * (pg_receivewal --synchronous) has flushed every commit: a failover
 * cannot promote it, so the results it holds are no safer; started
 * without the wait, the relay publishes everything. (The wait against a
 * real standby that is cut off and a failover to it:
 * netfault_failover_async_wait.)
 */
static void standby_wait(void)
{
        static const char *const xs[] = { "relay.wait_for_standbys=1", NULL };
        struct scenario sc;
        struct co c;
        char wdir[512];
        pid_t wal;
        int64_t t0;

        sc_init(&sc, "relay_standby", 3);
        insert_rows(&sc, 0, 50, 10);
        /* it has flushed the rows' WAL when this returns */
        wal = testenv_wal_receiver_start(wdir, sizeof(wdir), 20000);
        SC_CHECK(wal > 0, "pg_receivewal did not stream (above)");
        co_start(&sc, &c, "relay", NULL, xs, NULL);
        SC_CHECK(wait_holders(&sc, 1, 20000), "the relay took no shard");
        /* two of its waits (2 s each) */
        t0 = now_ms();
        while (now_ms() - t0 < 5000 &&
               !count_in_file(c.log, "results wait: 0 of the 1 standby"))
                sleep_ms(100);
        sleep_ms(2500);
        SC_CHECK(count_in_file(c.log, "results wait: 0 of the 1 standby") >= 1,
                 "no log of the wait");
        SC_CHECK(unpublished(&sc) == 50,
                 "%ld row(s) published with no standby to have them",
                 50 - unpublished(&sc));
        stop_ok(&c);
        testenv_wal_receiver_stop(wal, wdir);
        co_start(&sc, &c, "relay", NULL, NULL, NULL);
        SC_CHECK(wait_published(&sc, T_WAIT), "%ld row(s) left unpublished",
                 unpublished(&sc));
        stop_ok(&c);
        SC_CHECK(verify(&sc, 3000, false).rows == 50, "rows");
        sc_cleanup(&sc);
}

/* One row of key tenant/idem, committed now (or with the caller's
 * transaction); its outbox id. */
static long insert_one(struct scenario *sc, const char *tenant,
                       const char *idem)
{
        return sc_sql_long(sc,
                           "WITH g AS (SELECT gen_random_uuid() AS e)"
                           " INSERT INTO outbox (event_id, message_key,"
                           "       tenant_id, idem_key, intent_event_id,"
                           "       status, payload)"
                           " SELECT e, '%s/%s', '%s', '%s',"
                           "       gen_random_uuid()::text, 'conflict',"
                           "       json_build_object('event_id', e)::text"
                           "   FROM g RETURNING id",
                           tenant, idem, tenant, idem);
}

/*
 * Overlapped rounds: row A (key K) produced, its round's reports held
 * back (failpoint relay.hold_reports: its reports count as not in for
 * 5 s), then row X of another key and row B of K committed together.
 * X is published (marked) while A's round still waits: the next round
 * did not wait for it. B is not: its key has A in flight, so it goes out
 * only after A is marked, and after A on the topic. (A relay with serial
 * rounds publishes nothing while A's round waits; one that fetched B
 * beside X would mark them together.)
 */
static void overlap(void)
{
        /* no rebalance after the first: a due one holds new rounds back
         * until the rounds in flight are finished */
        static const char *const xs[]  = { "relay.poll_interval=10s",
                                           "relay.rebalance_interval=60s",
                                           NULL };
        static const char *const env[] = {
                "CHARGEONCE_FAILPOINTS=relay.hold_reports=2*error",
                "CHARGEONCE_FAILPOINTS_LOG=1", NULL
        };
        struct scenario sc;
        struct co c;
        char q[128];
        long a, x, b;
        int64_t t0;

        sc_init(&sc, "relay_overlap", 3);
        co_start(&sc, &c, "relay", NULL, xs, env);
        SC_CHECK(wait_holders(&sc, 1, 20000), "the relay took no shard");
        /* the first round warms the producer up (metadata, producer id:
         * about a second) */
        CO_IGNORE(insert_one(&sc, "t2", "key-w"));
        SC_CHECK(wait_published(&sc, 20000), "the first row");
        a  = insert_one(&sc, "t0", "key-k");
        t0 = now_ms();
        while (now_ms() - t0 < 5000 &&
               !count_in_file(c.log, "failpoint relay.hold_reports hit 2"))
                sleep_ms(10);
        printf("A (id %ld) produced, its round held: %s\n", a,
               count_in_file(c.log, "relay.hold_reports hit 2") ? "yes" : "no");
        exec_sql(&sc, "BEGIN");
        x = insert_one(&sc, "t1", "key-x");
        b = insert_one(&sc, "t0", "key-k");
        exec_sql(&sc, "COMMIT");
        t0 = now_ms();
        snprintf(q, sizeof(q),
                 "SELECT" SC_PUBLISHED " FROM outbox WHERE id = %ld", x);
        SC_CHECK(sc_wait_sql(&sc, q, 3000),
                 "X (id %ld) not published within 3 s while A's round "
                 "waited: no overlap",
                 x);
        printf("X (id %ld) published %lld ms after its commit\n", x,
               (long long)(now_ms() - t0));
        SC_CHECK(sc_sql_long(&sc,
                             "SELECT count(*) FROM outbox WHERE id IN "
                             "(%ld, %ld) AND" SC_UNPUBLISHED,
                             a, b) == 2,
                 "A (id %ld) or B (id %ld) marked before A's round's "
                 "reports were in",
                 a, b);
        SC_CHECK(wait_published(&sc, T_WAIT), "%ld row(s) left unpublished",
                 unpublished(&sc));
        /* and A before B in the topic: verify() checks each key's order */
        stop_ok(&c);
        SC_CHECK(verify(&sc, 3000, false).rows == 4, "rows");
        sc_cleanup(&sc);
}

static void multi2(void)
{
        multi(2);
}

static void multi3(void)
{
        multi(3);
}

static int setup(void)
{
        return testenv_have_services() ? 0 : TESTENV_SKIP;
}

#define N_COMPACT 60

/*
 * Compact results (0028) through the real relay. --compact-results on is
 * refused (exit 1, nothing changed) while a relay of an earlier release
 * is connected (a session named as its connections are), allowed once it
 * is gone; the dry run says so and changes nothing, and says loudly
 * when one connects after it was turned on. Then 60 results over
 * 6 keys, every other one stored compact (its detail from
 * payment_result_detail), are published once each in per-key order, each
 * with exactly the bytes payment_result_build gave; a compact row whose
 * detail gives no result is parked (the audit lists it, the log never
 * holds its detail's values) and the later rows of its key go on.
 */
static void compact(void)
{
        static const char *const xs[] = { "relay.batch_size=7",
                                          "relay.poll_interval=200ms", NULL };
        struct scenario sc;
        struct co c;
        struct sc_msg *m;
        char *json[N_COMPACT], ev[N_COMPACT][UUID_STR_LEN], out[4096];
        char ci[2048], eid[40], intent[UUID_STR_LEN], pay[UUID_STR_LEN];
        char key[32], tenant[8], order[32], mk[48];
        long ids[4];
        int nids, seen = 0, compacted = 0;
        size_t nm;
        PGconn *old;

        sc_init(&sc, "relay_compact", 3);
        SC_CHECK(run_relay_cmd(&sc, "--compact-results on --dry-run", out,
                               sizeof(out)) == 0 &&
                     strstr(out, "compact results: off") &&
                     strstr(out, "would store the payments"),
                 "--compact-results on --dry-run");
        snprintf(ci, sizeof(ci), "%s application_name='chargeonce relay'",
                 sc.conninfo);
        old = PQconnectdb(ci);
        SC_CHECK(PQstatus(old) == CONNECTION_OK, "the old relay's session");
        SC_CHECK(run_relay_cmd(&sc, "--compact-results on", out, sizeof(out)) ==
                         1 &&
                     strstr(out, "1 relay connection(s) of a release before"),
                 "on beside an old relay");
        SC_CHECK(sc_sql_long(&sc, "SELECT count(*) FROM result_format"
                                  " WHERE compact") == 0,
                 "on beside an old relay changed the switch");
        PQfinish(old);
        SC_CHECK(sc_wait_sql(&sc,
                             "SELECT NOT EXISTS (SELECT 1 FROM"
                             " pg_stat_activity WHERE application_name ="
                             " 'chargeonce relay')",
                             T_WAIT),
                 "the old relay's session stays");
        SC_CHECK(run_relay_cmd(&sc, "--compact-results on", out, sizeof(out)) ==
                         0 &&
                     strstr(out, "compact results: on from now"),
                 "--compact-results on");
        SC_CHECK(sc_sql_long(&sc, "SELECT count(*) FROM result_format"
                                  " WHERE compact") == 1,
                 "the switch is not on");
        /* an old relay that connects after: said loudly, exit 1 */
        old = PQconnectdb(ci);
        SC_CHECK(PQstatus(old) == CONNECTION_OK, "the old relay's session");
        SC_CHECK(run_relay_cmd(&sc, "--compact-results on --dry-run", out,
                               sizeof(out)) == 1 &&
                     strstr(out, "Compact results are ON"),
                 "already on beside an old relay");
        PQfinish(old);

        for (int i = 0; i < N_COMPACT; i++) {
                struct payment_result r;
                char *detail = NULL, err[256];
                size_t len;
                const char *v[9];
                PGresult *res;
                bool broken = i == 31, as_compact = i % 2 == 1;

                SC_CHECK(uuid_v4(ev[i]) && uuid_v4(intent) && uuid_v4(pay),
                         "uuid");
                snprintf(tenant, sizeof(tenant), "t%d", i % 3);
                snprintf(key, sizeof(key), "key-%d", i % 6);
                snprintf(order, sizeof(order), "ord \"%d\"\n", i);
                snprintf(mk, sizeof(mk), "%s/%s", tenant, key);
                memset(&r, 0, sizeof(r));
                r.event_id        = ev[i];
                r.intent_event_id = intent;
                r.tenant_id       = tenant;
                r.idempotency_key = key;
                r.order_id        = order;
                r.payment_id      = pay;
                r.status          = i % 4 == 1   ? PAYMENT_STATUS_FAILED
                                    : i % 4 == 3 ? PAYMENT_STATUS_REVIEW
                                                 : PAYMENT_STATUS_SUCCEEDED;
                r.has_amount      = true;
                r.amount          = 1000 + i;
                r.currency        = "VND";
                if (r.status == PAYMENT_STATUS_SUCCEEDED)
                        r.provider_charge_id = "ch_\xc3\xa9";
                else {
                        r.error_code    = "card_declined";
                        r.error_message = "declined \\ \"x\"";
                }
                r.occurred_at = "2026-12-06T10:00:00.250Z";
                SC_CHECK(payment_result_build(&r, &json[i], &len, err,
                                              sizeof(err)) == 0 &&
                             payment_result_detail(&r, intent, &detail, &len,
                                                   err, sizeof(err)) == 0,
                         "build: %s", err);
                v[0] = ev[i];
                v[1] = mk;
                v[2] = tenant;
                v[3] = key;
                v[4] = pay;
                v[5] = intent;
                v[6] = payment_status_name(r.status);
                v[7] = as_compact ? NULL : json[i];
                v[8] = !as_compact ? NULL
                       : broken    ? "{\"order_id\":\"SECRET-ORDER\"}"
                                   : detail;
                res  = PQexecParams(
                     sc.pg,
                     "INSERT INTO outbox (event_id, message_key, tenant_id,"
                      " idem_key, payment_id, intent_event_id, status, payload,"
                      " detail) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)",
                     9, NULL, v, NULL, NULL, 0);
                SC_CHECK(PQresultStatus(res) == PGRES_COMMAND_OK, "insert: %s",
                         PQresultErrorMessage(res));
                PQclear(res);
                free(detail);
                compacted += as_compact;
        }
        SC_CHECK(sc_sql_long(&sc, "SELECT count(*) FROM outbox WHERE"
                                  " payload IS NULL") == compacted,
                 "compact rows");
        co_start(&sc, &c, "relay", NULL, xs, NULL);
        SC_CHECK(sc_wait_sql(&sc,
                             "SELECT count(*) FILTER (WHERE" SC_UNPUBLISHED
                             "   AND parked_at IS NULL) = 0 AND"
                             " count(*) FILTER (WHERE parked_at IS NOT NULL)"
                             "   = 1 FROM outbox",
                             T_WAIT),
                 "%ld row(s) unpublished", unpublished(&sc));
        SC_CHECK(sc_sql_long(&sc, "SELECT id FROM outbox WHERE parked_at IS"
                                  " NOT NULL AND park_reason LIKE"
                                  " '%%stored result cannot be built%%'") == 32,
                 "row 32 (the broken detail) not parked for it");
        SC_CHECK(sc_sql_long(&sc, "SELECT count(*) FROM outbox o WHERE id > 32"
                                  " AND message_key = (SELECT message_key FROM"
                                  " outbox WHERE id = 32)") > 0,
                 "no later row of the broken row's key");
        SC_CHECK(verify(&sc, 3000, false).rows == N_COMPACT, "rows");
        nm = sc_read_topic(&sc, sc.t_results, 3000, &m);
        for (size_t k = 0; k < nm; k++) {
                int i;

                SC_CHECK(sc_header(m[k].headers, "event_id", eid, sizeof(eid)),
                         "no event_id header");
                for (i = 0; i < N_COMPACT; i++)
                        if (!strcmp(ev[i], eid))
                                break;
                SC_CHECK(i < N_COMPACT && i != 31, "event %s", eid);
                SC_CHECK(m[k].value && !strcmp(m[k].value, json[i]),
                         "row %d: the bytes published are not the ones "
                         "built",
                         i + 1);
                seen++;
        }
        SC_CHECK(seen == N_COMPACT - 1, "%d messages", seen);
        sc_messages_free(m, nm);
        SC_CHECK(run_audit(&sc, ids, 4, &nids) == 1 && nids == 1 &&
                     ids[0] == 32,
                 "audit lists %d parked row(s)", nids);
        stop_ok(&c);
        SC_CHECK(count_in_file(c.log, "outbox row 32 ") == 1,
                 "the park is logged once");
        SC_CHECK(!file_has(c.log, "SECRET-ORDER") && !file_has(c.log, "/key-"),
                 "the relay logged a detail's value or a key");
        for (int i = 0; i < N_COMPACT; i++)
                free(json[i]);
        sc_cleanup(&sc);
}

int main(int argc, char **argv)
{
        static const struct test_case cases[] = {
                { "crash", crash, NULL, NULL },
                { "multi2", multi2, NULL, NULL },
                { "multi3", multi3, NULL, NULL },
                { "outage", outage, NULL, NULL },
                { "db_reconnect", db_reconnect, NULL, NULL },
                { "retention", retention, NULL, NULL },
                { "latency", latency, NULL, NULL },
                { "inproc", inproc, NULL, NULL },
                { "park", park, NULL, NULL },
                { "notopic", notopic, NULL, NULL },
                { "standby_wait", standby_wait, NULL, NULL },
                { "overlap", overlap, NULL, NULL },
                { "compact", compact, NULL, NULL },
        };
        static const struct test_suite suite = {
                .name    = "test_relay",
                .cases   = cases,
                .n_cases = sizeof(cases) / sizeof(cases[0]),
                .setup   = setup,
        };

        return cases_main(&suite, argc, argv);
}
