/* SPDX-License-Identifier: Apache-2.0 */
/*
 * test_crash: kill -9 at every durable step, then restart and check that
 * the invariants hold. Runs against the real broker, PostgreSQL and the
 * gateway simulator (with faults); chargeonce is the test build with
 * failpoints compiled in.
 *
 * Named cases (tests/common/cases.h; ctest runs crash_<case>):
 *
 *   test_crash POINT [SEED]    crash at failpoint POINT (kill), restart,
 *                              let the reconciler finish, check (one case
 *                              per point of CRASH_POINTS)
 *   test_crash takeover [SEED] crash before the send, then crash right
 *                              after the reconciler's takeover, then finish
 *   test_crash soak [SECONDS] [SEED]
 *                              kill -9 of consumer, relay and reconciler at
 *                              random moments, one broker restart and one
 *                              PostgreSQL restart; reproducible from SEED
 *   test_crash provider_forgets [SEED]
 *                              the provider forgets its keys, ops replay the
 *                              intents partition from offset 0 with Kafka's
 *                              own consumer-group tool: 0 new charges
 *
 * SEED (the crash campaign, scripts/crash-campaign.sh) shapes the workload
 * (which copies of which intents), the simulator's fault draws (--seed)
 * and the hit on which the failpoint fires (1 to the case's own hit).
 * Without it a case runs as CI always ran it: a fixed workload, the
 * simulator's default seed, the fixed hit. Every case prints the seed it
 * used and, for the campaign, one "crash-stats" line (crashstats.h).
 *
 * `nokeys_POINT` and `nokeys_takeover` run against a gateway that ignores
 * Idempotency-Key (simulator --ignore-idempotency, chargeonce
 * gateway.idempotency_keys = false: a query before every re-POST); CI runs
 * the failpoints around the gateway call in that mode, not all of them.
 *
 * The invariants, from the simulator's ground truth, the result topic and
 * the database: 0 double charges; 0 lost intents (every intent is final and
 * has exactly one non-replayed final result on the result topic after
 * dedup by event_id); the ledger balanced (the invariant view empty); no
 * payment left processing; the outbox drained. check_all() counts every
 * broken one (the campaign's violations) before the case fails.
 */
#include "cases.h"
#include "crashstats.h"
#include "scenario.h"
#include "testenv.h"

#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define MAX_INTENTS 4096

struct workload {
        int n; /* intents (tenant, key) expected */
        char tenant[MAX_INTENTS][16];
        char key[MAX_INTENTS][32];
        long conflicts;
};

/* Settings that make recovery quick in a test: short leases, a fast
 * reconciler, a fast relay. */
static const char *const quick[] = {
        "consumer.batch_linger=2ms", "lease.duration=2s",
        "reconcile.interval=200ms", "reconcile.review_after=10m",
        "relay.poll_interval=100ms", "gateway.max_attempts=6",
        /* the reconciler re-posts an orphan
         * only once its call cannot be in
         * flight (deadline + timeout) */
        "gateway.deadline=4s", NULL
};

static void sleep_ms(int ms)
{
        struct timespec ts = { ms / 1000, (long)(ms % 1000) * 1000000L };
        nanosleep(&ts, NULL);
}

#define SIM_FAULTS                                                             \
        "--latency-ms 0:10 --p-drop-after-charge 0.05 "                        \
        "--p-500-after-charge 0.05 --p-500-before-charge 0.03 "                \
        "--p-429 0.02 --retry-after 1 --p-slow 0.03 --slow-ms 300"

/* A gateway that ignores keys, and chargeonce told so. */
static const char *const quick_nokeys[] = { "consumer.batch_linger=2ms",
                                            "lease.duration=2s",
                                            "reconcile.interval=200ms",
                                            "reconcile.review_after=10m",
                                            "relay.poll_interval=100ms",
                                            "gateway.max_attempts=6",
                                            "gateway.deadline=4s",
                                            "gateway.idempotency_keys=false",
                                            NULL };

/* The mode of the case running: set_nokeys(). */
static bool nokeys;
static const char *sim_faults      = SIM_FAULTS;
static const char *const *settings = quick;

/* The seed given after the case's name into *seed (true), or false and
 * *seed untouched (the case's default). */
static bool case_seed(unsigned *seed)
{
        int argc;
        char **argv = cases_args(&argc);

        if (argc < 1)
                return false;
        *seed = (unsigned)strtoul(argv[0], NULL, 10);
        return true;
}

/* The simulator's options: the mode's faults, and the seed of its fault
 * draws when the case was given one. */
static const char *sim_opts(char *buf, size_t size, const char *opts,
                            bool seeded, unsigned seed)
{
        if (!seeded)
                return opts;
        snprintf(buf, size, "%s --seed %u", opts, seed);
        return buf;
}

/* n intents with 20% duplicates of every kind (deterministic from seed). */
static void produce_workload(struct scenario *sc, struct workload *w, int n,
                             unsigned seed, const char *prefix)
{
        for (int i = 0; i < n && w->n < MAX_INTENTS - 1; i++) {
                char key[32], order[32], ev[40];
                struct intent_spec is = { NULL,
                                          "shop-c",
                                          key,
                                          order,
                                          100 + i,
                                          "VND",
                                          i % 40 == 3 ? "pm_decline_x"
                                                      : "pm_tok" };
                int r                 = (int)(rand_r(&seed) % 100);

                snprintf(key, sizeof(key), "%s-%05d", prefix, i);
                snprintf(order, sizeof(order), "%s-o%05d", prefix, i);
                sc_produce_intent(sc, -1, &is, ev);
                snprintf(w->tenant[w->n], sizeof(w->tenant[0]), "shop-c");
                snprintf(w->key[w->n], sizeof(w->key[0]), "%s", key);
                w->n++;
                if (r < 5) {
                        is.event_id = ev; /* redelivery */
                        sc_produce_intent(sc, -1, &is, NULL);
                } else if (r < 10) { /* client retry */
                        sc_produce_intent(sc, -1, &is, NULL);
                } else if (r < 15) { /* same key, other amount */
                        is.amount++;
                        sc_produce_intent(sc, -1, &is, NULL);
                        w->conflicts++;
                } else if (r < 20) { /* same key, other tenant */
                        is.tenant = "shop-d";
                        sc_produce_intent(sc, -1, &is, NULL);
                        snprintf(w->tenant[w->n], sizeof(w->tenant[0]),
                                 "shop-d");
                        snprintf(w->key[w->n], sizeof(w->key[0]), "%s", key);
                        w->n++;
                }
        }
        sc_flush(sc);
}

struct result_row {
        char tenant[16], key[32], event_id[40], status[16];
        bool replayed;
};

static int cmp_rows(const void *a, const void *b)
{
        const struct result_row *x = a, *y = b;
        int c = strcmp(x->tenant, y->tenant);
        if (!c)
                c = strcmp(x->key, y->key);
        if (!c)
                c = strcmp(x->event_id, y->event_id);
        return c;
}

/* A broken invariant: counted in *v, and said on stderr while fewer than
 * 20 were (a lost partition would otherwise print hundreds). */
#define VIOLATION(v, ...)                                                      \
        do {                                                                   \
                if (*(v) < 20) {                                               \
                        fprintf(stderr, "VIOLATION: ");                        \
                        fprintf(stderr, __VA_ARGS__);                          \
                        fprintf(stderr, "\n");                                 \
                }                                                              \
                (*(v))++;                                                      \
        } while (0)

/* The final results on the result topic into rows (the caller frees),
 * deduplicated by event_id; a message that is no result counts in *v. */
static size_t final_results(struct sc_msg *m, size_t n, struct result_row **out,
                            long *v)
{
        struct result_row *rows = calloc(n + 1, sizeof(*rows));
        size_t nr = 0, u = 0;

        SC_CHECK(rows, "oom");
        for (size_t i = 0; i < n; i++) {
                json_error_t e;
                json_t *j = json_loads(m[i].value ? m[i].value : "", 0, &e);
                const char *t, *k, *ev, *status;

                if (!j) {
                        VIOLATION(v, "a result is not JSON: %s", e.text);
                        continue;
                }
                t  = json_string_value(json_object_get(j, "tenant_id"));
                k  = json_string_value(json_object_get(j, "idempotency_key"));
                ev = json_string_value(json_object_get(j, "event_id"));
                status = json_string_value(json_object_get(j, "status"));
                if (!t || !k || !ev || !status)
                        VIOLATION(v, "a result lacks fields");
                else if (!m[i].headers || !strstr(m[i].headers, ev))
                        VIOLATION(v, "result %s without its event_id header",
                                  ev);
                else if ((!strcmp(status, "succeeded") ||
                          !strcmp(status, "failed") ||
                          !strcmp(status, "review")) &&
                         !json_is_true(json_object_get(j, "replayed"))) {
                        struct result_row *r = &rows[nr++];
                        snprintf(r->tenant, sizeof(r->tenant), "%s", t);
                        snprintf(r->key, sizeof(r->key), "%s", k);
                        snprintf(r->event_id, sizeof(r->event_id), "%s", ev);
                        snprintf(r->status, sizeof(r->status), "%s", status);
                }
                json_decref(j);
        }
        qsort(rows, nr, sizeof(*rows), cmp_rows);
        /* dedup by event_id: a re-published row is the same result */
        for (size_t i = 0; i < nr; i++)
                if (u == 0 || cmp_rows(&rows[u - 1], &rows[i]) != 0)
                        rows[u++] = rows[i];
        *out = rows;
        return u;
}

/* The invariants (see the top of the file): counts every broken one,
 * prints the campaign's line, then fails the case if any broke. Returns
 * the number of results read from the topic. */
static size_t check_all(struct scenario *sc, struct sim *s,
                        const struct workload *w)
{
        struct sc_msg *m;
        struct result_row *rows;
        size_t n, u;
        long v = 0, inv, payments, processing, unpublished, succeeded;
        json_t *st;

        crashstats_checking();
        crashstats_intents(w->n);
        n = sc_read_topic(sc, sc->t_results, 2000, &m);
        u = final_results(m, n, &rows, &v);
        for (int i = 0; i < w->n; i++) {
                int found = 0;
                for (size_t k = 0; k < u; k++)
                        if (!strcmp(rows[k].tenant, w->tenant[i]) &&
                            !strcmp(rows[k].key, w->key[i]))
                                found++;
                if (found != 1)
                        VIOLATION(&v,
                                  "intent %s/%s has %d non-replayed final "
                                  "results on the result topic (want 1)",
                                  w->tenant[i], w->key[i], found);
        }
        if (u != (size_t)w->n)
                VIOLATION(&v, "%zu final results for %d intents", u, w->n);
        processing = sc_sql_long(sc, "SELECT count(*) FROM payments WHERE"
                                     " status = 'processing'");
        unpublished =
            sc_sql_long(sc, "SELECT count(*) FROM outbox WHERE" SC_UNPUBLISHED);
        payments  = sc_sql_long(sc, "SELECT count(*) FROM payments");
        succeeded = sc_sql_long(sc, "SELECT count(*) FROM payments WHERE"
                                    " status = 'succeeded'");
        inv = sc_sql_long(sc, "SELECT count(*) FROM invariant_violations");
        if (processing)
                VIOLATION(&v, "%ld payments left processing", processing);
        if (unpublished)
                VIOLATION(&v, "outbox not drained: %ld rows", unpublished);
        if (payments != w->n)
                VIOLATION(&v, "%ld payments for %d intents", payments, w->n);
        v += inv; /* sc_check_invariants() below prints them */
        st = sim_stats(s);
        if (sim_stat(st, "double_charges") > 0) {
                fprintf(stderr, "VIOLATION: %ld DOUBLE CHARGES\n",
                        sim_stat(st, "double_charges"));
                v += sim_stat(st, "double_charges");
        }
        if (sim_stat(st, "succeeded_charges") != succeeded)
                VIOLATION(&v, "gateway charged %ld, succeeded payments %ld",
                          sim_stat(st, "succeeded_charges"), succeeded);
        json_decref(st);
        crashstats_done(v);
        if (inv > 0)
                sc_check_invariants(sc);
        SC_CHECK(v == 0, "%ld broken invariant(s)", v);
        free(rows);
        sc_messages_free(m, n);
        return n;
}

/* ------------------------------------------------------------------ */

/* Points in the consumer process and the hit on which each fires, so the
 * crash comes in the middle of the run, not at its first step. Each point
 * is a case of its own (main()). */
#define CRASH_POINTS(X)                                                        \
        X("claim.before_commit", 3)                                            \
        X("claim.after_commit", 3)                                             \
        X("gateway.before_send", 40)                                           \
        X("gateway.after_answer", 40)                                          \
        X("settle.before_commit", 3)                                           \
        X("settle.after_commit", 3)                                            \
        X("offset.before_store", 4)                                            \
        X("offset.after_store", 4)                                             \
        X("relay.before_produce", 3)                                           \
        X("relay.after_produce", 3)                                            \
        X("relay.before_mark", 3)
#define POINT_HIT(name, hit) { name, hit },
static const struct {
        const char *name;
        int hit;
} points[] = { CRASH_POINTS(POINT_HIT) };

static void crash_at(const char *point)
{
        struct scenario sc;
        struct sim s;
        struct co c;
        struct workload *w = calloc(1, sizeof(*w));
        char fp[128], opts[512], name[64];
        const char *env[2] = { fp, NULL };
        int hit            = -1, rc;
        unsigned seed      = 11;
        bool seeded        = case_seed(&seed);

        for (size_t i = 0; i < sizeof(points) / sizeof(*points); i++)
                if (!strcmp(points[i].name, point))
                        hit = points[i].hit;
        SC_CHECK(hit > 0, "unknown failpoint %s", point);
        if (seeded) /* a hit the fixed one implies is reached */
                hit = 1 + (int)(seed % (unsigned)hit);
        snprintf(fp, sizeof(fp), "CHARGEONCE_FAILPOINTS=%s=%d*kill", point,
                 hit);
        snprintf(name, sizeof(name), "%s%s", nokeys ? "nokeys_" : "", point);
        printf("crash at %s: seed %u, hit %d (reproduce: test_crash %s %u)\n",
               point, seed, hit, name, seed);
        crashstats_begin(name, seed);

        sc_init(&sc, "crash", 3);
        sim_start(&sc, &s,
                  sim_opts(opts, sizeof(opts), sim_faults, seeded, seed));
        produce_workload(&sc, w, 300, seed, "c");
        co_start(&sc, &c, "consume", &s, settings, env);
        rc = co_wait(&c, 120000);
        SC_CHECK(rc == 128 + SIGKILL,
                 "%s was not exercised: chargeonce ended with %d", point, rc);
        crashstats_kill();
        /* restart without failpoints: recover and finish */
        co_start(&sc, &c, "consume", &s, settings, NULL);
        sc_wait_finished(&sc, 120000);
        size_t n = check_all(&sc, &s, w);
        rc       = co_stop(&c, SIGTERM, 60000);
        SC_CHECK(rc == 0, "SIGTERM: exit %d", rc);
        printf("crash at %s (hit %d)%s: %d intents, %zu result messages, 0 "
               "double charges, 0 lost, invariants hold\n",
               point, hit, nokeys ? ", gateway ignoring keys" : "", w->n, n);
        sim_stop(&s);
        sc_cleanup(&sc);
        free(w);
}

static void takeover(void)
{
        struct scenario sc;
        struct sim s;
        struct co c;
        struct workload *w = calloc(1, sizeof(*w));
        char fp[128], opts[512];
        const char *env1[] = { fp, NULL };
        const char *env2[] = {
                "CHARGEONCE_FAILPOINTS=reconcile.after_takeover=1*kill", NULL
        };
        const char *name = nokeys ? "nokeys_takeover" : "takeover";
        int rc, hit = 20;
        unsigned seed = 5;
        bool seeded   = case_seed(&seed);

        if (seeded)
                hit = 1 + (int)(seed % (unsigned)hit);
        snprintf(fp, sizeof(fp),
                 "CHARGEONCE_FAILPOINTS=gateway.before_send=%d*kill", hit);
        printf("%s: seed %u, first crash at hit %d (reproduce: test_crash %s "
               "%u)\n",
               name, seed, hit, name, seed);
        crashstats_begin(name, seed);
        sc_init(&sc, "takeover", 3);
        sim_start(&sc, &s,
                  sim_opts(opts, sizeof(opts), sim_faults, seeded, seed));
        produce_workload(&sc, w, 200, seed, "t");
        co_start(&sc, &c, "consume", &s, settings, env1);
        rc = co_wait(&c, 120000);
        SC_CHECK(rc == 128 + SIGKILL, "first crash not reached: %d", rc);
        crashstats_kill();
        SC_CHECK(sc_sql_long(&sc, "SELECT count(*) FROM payments WHERE status"
                                  " = 'processing'") > 0,
                 "no orphaned payment to take over");
        co_start(&sc, &c, "consume", &s, settings, env2);
        rc = co_wait(&c, 120000);
        SC_CHECK(rc == 128 + SIGKILL,
                 "reconcile.after_takeover not exercised: %d", rc);
        crashstats_kill();
        co_start(&sc, &c, "consume", &s, settings, NULL);
        sc_wait_finished(&sc, 120000);
        check_all(&sc, &s, w);
        SC_CHECK(sc_sql_long(&sc, "SELECT count(*) FROM payments WHERE"
                                  " lease_epoch >= 2") >= 1,
                 "no payment was taken over");
        rc = co_stop(&c, SIGTERM, 60000);
        SC_CHECK(rc == 0, "SIGTERM: exit %d", rc);
        printf("takeover%s: crash before send, crash after takeover, "
               "finished: invariants hold\n",
               nokeys ? " (gateway ignoring keys)" : "");
        sim_stop(&s);
        sc_cleanup(&sc);
        free(w);
}

/* ------------------------------------------------------------------ */

static void services(const char *what)
{
        char cmd[1024];
        const char *src = getenv("CHARGEONCE_SOURCE_DIR");
        const char *dir = getenv("CHARGEONCE_TEST_DIR");
        SC_CHECK(src && dir, "CHARGEONCE_SOURCE_DIR / CHARGEONCE_TEST_DIR");
        snprintf(cmd, sizeof(cmd), "'%s/tests/harness/services.sh' %s '%s'",
                 src, what, dir);
        SC_CHECK(system(cmd) == 0, "services.sh %s failed", what);
}

static void soak(int seconds, unsigned seed)
{
        struct scenario sc;
        struct sim s;
        struct co procs[3];
        static const char *const cmds[3] = { "consume", "relay", "reconcile" };
        static const char *const consume_only[] = { "consumer.batch_linger=2ms",
                                                    "lease.duration=2s",
                                                    "relay.enabled=false",
                                                    "reconcile.enabled=false",
                                                    "gateway.max_attempts=6",
                                                    "gateway.deadline=4s",
                                                    NULL };
        static const char *const other[]        = { "lease.duration=2s",
                                                    "reconcile.interval=200ms",
                                                    "relay.poll_interval=100ms",
                                                    "gateway.deadline=4s", NULL };
        struct workload *w                      = calloc(1, sizeof(*w));
        time_t t0                               = time(NULL);
        int kills = 0, batch = 0;
        bool broker_done = false, pg_done = false;
        unsigned r = seed;
        char opts[512];

        printf("soak: seed %u, %d s (reproduce: test_crash soak %d %u)\n", seed,
               seconds, seconds, seed);
        fflush(stdout);
        crashstats_begin("soak", seed);
        sc_init(&sc, "soak", 3);
        sim_start(&sc, &s,
                  sim_opts(opts, sizeof(opts), sim_faults, true, seed));
        for (int i = 0; i < 3; i++)
                co_start(&sc, &procs[i], cmds[i], &s,
                         i == 0 ? consume_only : other, NULL);
        while (time(NULL) - t0 < seconds) {
                char prefix[16];
                int victim, pause_ms;

                snprintf(prefix, sizeof(prefix), "s%d", batch++);
                produce_workload(&sc, w, 40, rand_r(&r), prefix);
                pause_ms = 300 + (int)(rand_r(&r) % 1500);
                sleep_ms(pause_ms);
                victim = (int)(rand_r(&r) % 3);
                co_stop(&procs[victim], SIGKILL, 5000);
                kills++;
                crashstats_kill();
                co_start(&sc, &procs[victim], cmds[victim], &s,
                         victim == 0 ? consume_only : other, NULL);
                if (!broker_done && time(NULL) - t0 >= seconds / 3) {
                        printf("soak: restarting the Kafka broker\n");
                        services("stop-kafka");
                        sleep_ms(2000);
                        services("start-again-kafka");
                        broker_done = true;
                }
                if (!pg_done && time(NULL) - t0 >= 2 * seconds / 3) {
                        printf("soak: restarting PostgreSQL\n");
                        services("stop-pg");
                        sleep_ms(1500);
                        services("start-again-pg");
                        PQreset(sc.pg);
                        pg_done = true;
                }
                for (int i = 0; i < 3; i++)
                        if (!co_alive(&procs[i]))
                                co_start(&sc, &procs[i], cmds[i], &s,
                                         i == 0 ? consume_only : other, NULL);
        }
        if (!broker_done || !pg_done)
                SC_CHECK(seconds >= 3, "soak too short for the restarts");
        sc_wait_finished(&sc, 180000);
        check_all(&sc, &s, w);
        for (int i = 0; i < 3; i++) {
                int rc = co_stop(&procs[i], SIGTERM, 60000);
                SC_CHECK(rc == 0, "%s: SIGTERM exit %d", cmds[i], rc);
        }
        printf("soak: seed %u, %d intents, %d kill -9, broker and PostgreSQL "
               "restarted: 0 double charges, 0 lost, invariants hold\n",
               seed, w->n, kills);
        sim_stop(&s);
        sc_cleanup(&sc);
        free(w);
}

/* ------------------------------------------------------------------ */

static void forgets(void)
{
        struct scenario sc;
        struct sim s;
        struct co c;
        struct workload *w = calloc(1, sizeof(*w));
        const char *jars   = getenv("CHARGEONCE_TEST_KAFKA_JARS");
        char cmd[2048];
        char opts[128];
        json_t *st;
        long before, after;
        unsigned seed = 3;
        bool seeded   = case_seed(&seed);

        printf("forgets: seed %u (reproduce: test_crash provider_forgets "
               "%u)\n",
               seed, seed);
        crashstats_begin("provider_forgets", seed);
        SC_CHECK(jars, "CHARGEONCE_TEST_KAFKA_JARS");
        sc_init(&sc, "forgets", 3);
        sim_start(
            &sc, &s,
            sim_opts(opts, sizeof(opts), "--key-retention 1s", seeded, seed));
        produce_workload(&sc, w, 200, seed, "f");
        co_start(&sc, &c, "consume", &s, quick, NULL);
        sc_wait_finished(&sc, 120000);
        SC_CHECK(co_stop(&c, SIGTERM, 60000) == 0, "SIGTERM");
        st     = sim_stats(&s);
        before = sim_stat(st, "charges");
        json_decref(st);
        /* wait until the provider has forgotten every key (its sweep
         * runs every 100 ms once a key is past the 1 s retention) */
        for (int i = 0;; i++) {
                json_t *k = sim_stats(&s);
                long keys = sim_stat(k, "keys");
                json_decref(k);
                if (keys == 0)
                        break;
                SC_CHECK(i < 100, "the simulator still holds %ld keys", keys);
                sleep_ms(100);
        }

        /* what ops do: rewind the group with Kafka's own tool */
        snprintf(
            cmd, sizeof(cmd),
            "java -Xmx256m -cp '%s/*' -Dlog4j.configuration=file:/dev/null "
            "org.apache.kafka.tools.consumer.group.ConsumerGroupCommand "
            "--bootstrap-server %s --group %s --topic %s "
            "--reset-offsets --to-earliest --execute >'%s/reset.log' 2>&1",
            jars, testenv_kafka(), sc.group, sc.t_intents, sc.dir);
        SC_CHECK(system(cmd) == 0, "ConsumerGroupCommand --reset-offsets");
        SC_CHECK(!sc_wait_consumed(&sc, 1), "the rewind did not happen");
        co_start(&sc, &c, "consume", &s, quick, NULL);
        sc_wait_finished(&sc, 120000);
        crashstats_checking(); /* a new charge is a broken invariant */
        st    = sim_stats(&s);
        after = sim_stat(st, "charges");
        SC_CHECK(sim_stat(st, "double_charges") == 0, "double charges");
        json_decref(st);
        SC_CHECK(after == before, "%ld new charges after the replay",
                 after - before);
        check_all(&sc, &s, w);
        SC_CHECK(co_stop(&c, SIGTERM, 60000) == 0, "SIGTERM");
        printf("forgets: provider forgot its keys, partition replayed from "
               "offset 0: 0 new charges (%ld before and after)\n",
               before);
        sim_stop(&s);
        sc_cleanup(&sc);
        free(w);
}

/* ------------------------------------------------------------------ */

/* A gateway that ignores keys, and chargeonce told so (on), or the usual
 * one: the mode of the cases that follow. */
static void set_nokeys(bool on)
{
        nokeys     = on;
        settings   = on ? quick_nokeys : quick;
        sim_faults = on ? SIM_FAULTS " --ignore-idempotency" : SIM_FAULTS;
}

static void crash_at_nokeys(const char *point)
{
        set_nokeys(true);
        crash_at(point);
        set_nokeys(false);
}

static void takeover_nokeys(void)
{
        set_nokeys(true);
        takeover();
        set_nokeys(false);
}

/* soak [SECONDS] [SEED]: 30 s and a seed from the clock by default */
static void soak_case(void)
{
        int argc;
        char **argv = cases_args(&argc);

        soak(argc >= 1 ? atoi(argv[0]) : 30,
             argc >= 2 ? (unsigned)strtoul(argv[1], NULL, 10)
                       : (unsigned)time(NULL));
}

static int setup(void)
{
        return testenv_have_services() ? 0 : TESTENV_SKIP;
}

int main(int argc, char **argv)
{
#define POINT_CASE(name, hit) { name, NULL, crash_at, name },
        static const struct test_case cases[] = {
                /* clang-format off */
                CRASH_POINTS(POINT_CASE)
                /* clang-format on */
                { "takeover", takeover, NULL, NULL },
                { "nokeys_gateway.before_send", NULL, crash_at_nokeys,
                  "gateway.before_send" },
                { "nokeys_gateway.after_answer", NULL, crash_at_nokeys,
                  "gateway.after_answer" },
                { "nokeys_settle.before_commit", NULL, crash_at_nokeys,
                  "settle.before_commit" },
                { "nokeys_takeover", takeover_nokeys, NULL, NULL },
                { "provider_forgets", forgets, NULL, NULL },
                { "soak", soak_case, NULL, NULL },
        };
        static const struct test_suite suite = {
                .name    = "test_crash",
                .cases   = cases,
                .n_cases = sizeof(cases) / sizeof(cases[0]),
                .setup   = setup,
        };

        return cases_main(&suite, argc, argv);
}
