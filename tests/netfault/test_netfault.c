/* SPDX-License-Identifier: Apache-2.0 */
/*
 * test_netfault: exactly once when the network and the primary fail
 * (docs/testing.md, "Network faults and failover"). Run by
 * tests/netfault/run.sh, which gives each case a PostgreSQL and a Kafka
 * broker of its own and, for the network cases, a network namespace
 * (netns.sh):
 *
 *   test_netfault CASE [SEED] [hold=MS] [bound=MS] [rate=N] [wait=MS]
 *                 [faults=A,B] [fbound=MS] [cut=MS]
 *
 * Network cases: `chargeonce consume` runs inside the namespace and
 * reaches PostgreSQL, the broker and the simulator over a veth pair at
 * 10.213.N.1; the test's own producer, reader and SQL stay on loopback, so
 * the namespace's iptables rules cut only chargeonce's links. While a
 * seeded load of `rate` intents a second keeps arriving, each fault is
 * held `hold` ms and healed; then the test waits for results to flow
 * again and for every intent produced before the heal to be answered.
 *
 *   pg        blackhole, reset, drop-out, drop-in of the PostgreSQL link;
 *             restart: PostgreSQL stopped and started again behind a
 *             blackhole
 *   kafka     the same four of the broker link
 *   gateway   the same four of the simulator link
 *   inflight  call: cut while gateway calls are in flight (slow answers,
 *             the charge made); settle: cut while settles wait on a lock
 *             the test holds, then the lock released, so they commit with
 *             their answers lost; produce: the broker's answers dropped
 *             (drop-in) while a burst of results is produced, so the
 *             relay's produce reaches the log and its acks never return
 *
 * Failover cases (no namespace; a streaming standby, chargeonce with
 * `host=127.0.0.1,127.0.0.1 port=P1,P2 target_session_attrs=read-write`):
 *
 *   failover_sync   synchronous standby; the primary crashed (immediate
 *                   stop) mid-load and the standby promoted: results again
 *                   within fbound ms of the promotion
 *   failover_async  asynchronous standby whose replication was cut for
 *                   `cut` ms (commits it never got), the primary crashed,
 *                   the standby promoted; ops stop chargeonce, rewind the
 *                   group to before the cut with Kafka's own
 *                   ConsumerGroupCommand --to-datetime, start it again.
 *                   Reports the commits lost (the old primary's data
 *                   started aside against the standby's)
 *
 * Per fault one line, `netfault-stats case=... fault=... link=...
 * held_ms=... recover_ms=... fresh_ms=... drain_ms=... ready_red_ms=...
 * intents=... double=... lost=...`: recover_ms is the first non-replayed
 * final result appended to the result topic after the heal (the topic is
 * LogAppendTime, so that is the broker's clock) minus the heal time;
 * fresh_ms the same for an intent produced after the heal; drain_ms when
 * the last intent produced before the heal got its answer; ready_red_ms
 * how long /readyz stayed 200 after the fault (-1: all the hold). A
 * recovery later than `bound` (default 5000 ms, the target) or
 * none within `wait` fails the case, as does any violation of the checker
 * (nf_check.c: 0 double, 0 lost, one result per intent or copies with the
 * same facts, per-key order, invariant view empty, nothing processing).
 * A cut that stops every result (all but the broker's drop-in) must show
 * none appended from 3 s after it until the heal begins (`during=`), and
 * an inflight fault something in flight at the cut (`inflight=`), or the
 * case fails as not exercised. The run ends with `netfault-summary ...`.
 */
#include "cases.h"
#include "nf.h"
#include "testenv.h"

#include <curl/curl.h>
#include <signal.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

struct opts {
        unsigned seed;
        int hold_ms, bound_ms, fbound_ms, rate, wait_ms, cut_ms;
        char only[128];
        const char *set; /* set=KEY=VALUE: one more -X of chargeonce */
};

struct ctx;
struct fault;

struct fault_rec {
        const struct fault *f;
        int64_t t_fault, t_heal;
        int64_t t_healing; /* just before the heal began */
        int idx_from, idx_heal, idx_to;
        int64_t recover_ms, fresh_ms, drain_ms, red_ms;
        long exercised; /* in flight at the cut (inflight faults) */
        long during;    /* results appended from 3 s after the cut to the
                           heal: 0 when the cut stops everything */
};

struct fault {
        const char *name, *link;
        void (*act)(struct ctx *c, struct fault_rec *fr);
        const char *kind;      /* netns.sh KIND of the simple faults */
        const char *exercised; /* what `exercised` counts, or NULL */
        /* nothing can be answered while it holds (every result needs the
         * link both ways): `during` must be 0 */
        bool stops_all;
};

#define MAX_FAULTS 16

struct ctx {
        const char *name; /* the case */
        struct opts o;
        struct nf_run run;
        struct sim sim;
        struct co co;
        bool netns;
        const char *ns, *host, *peer;
        int port_pg, port_kafka, port_gw;
        struct fault_rec rec[MAX_FAULTS];
        int n_rec;
        unsigned jitter;
        const char *extra[2]; /* more -X of chargeonce, or NULL */
};

/* Settings that make recovery quick in a test (as the crash suite's). */
#define QUICK                                                                  \
        "consumer.batch_linger=2ms", "lease.duration=2s",                      \
            "reconcile.interval=200ms", "reconcile.review_after=10m",          \
            "relay.poll_interval=100ms", "gateway.max_attempts=6",             \
            "gateway.deadline=4s"

/* ------------------------------------------------------------------ */
/* options and helpers                                                  */

static void parse_opts(struct opts *o)
{
        int argc;
        char **argv = cases_args(&argc);

        memset(o, 0, sizeof(*o));
        o->seed      = (unsigned)time(NULL);
        o->hold_ms   = 8000;
        o->bound_ms  = 5000;
        o->fbound_ms = 10000;
        o->rate      = 20;
        o->wait_ms   = 60000;
        o->cut_ms    = 6000;
        for (int i = 0; i < argc; i++) {
                const char *a  = argv[i];
                const char *eq = strchr(a, '=');
                long v         = eq ? atol(eq + 1) : 0;

                if (i == 0 && !eq)
                        o->seed = (unsigned)strtoul(a, NULL, 10);
                else if (!strncmp(a, "hold=", 5) && v > 0)
                        o->hold_ms = (int)v;
                else if (!strncmp(a, "bound=", 6) && v > 0)
                        o->bound_ms = (int)v;
                else if (!strncmp(a, "fbound=", 7) && v > 0)
                        o->fbound_ms = (int)v;
                else if (!strncmp(a, "rate=", 5) && v > 0 && v <= 1000)
                        o->rate = (int)v;
                else if (!strncmp(a, "wait=", 5) && v > 0)
                        o->wait_ms = (int)v;
                else if (!strncmp(a, "cut=", 4) && v > 0)
                        o->cut_ms = (int)v;
                else if (!strncmp(a, "set=", 4) && strchr(a + 4, '='))
                        o->set = a + 4;
                else if (!strncmp(a, "faults=", 7))
                        snprintf(o->only, sizeof(o->only), ",%s,", a + 7);
                else
                        SC_CHECK(false, "unknown option %s", a);
        }
}

static const char *need_env(const char *name)
{
        const char *v = getenv(name);
        SC_CHECK(v && *v, "%s is not set (run through tests/netfault/run.sh)",
                 name);
        return v;
}

static void run_cmd(const char *what, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

static void run_cmd(const char *what, const char *fmt, ...)
{
        char cmd[2048];
        va_list ap;
        int rc;

        va_start(ap, fmt);
        vsnprintf(cmd, sizeof(cmd), fmt, ap);
        va_end(ap);
        rc = system(cmd);
        SC_CHECK(rc == 0, "%s failed (%d): %s", what, rc, cmd);
}

/* tests/harness/services.sh WHAT DIR [ARG] on the run's services. */
static void services_arg(const char *what, const char *arg)
{
        run_cmd(what, "'%s/tests/harness/services.sh' %s '%s' %s",
                need_env("CHARGEONCE_SOURCE_DIR"), what,
                need_env("CHARGEONCE_TEST_DIR"), arg ? arg : "");
}

static void services(const char *what)
{
        services_arg(what, NULL);
}

static void netns(struct ctx *c, const char *verb, const char *kind, int port)
{
        char p[16];

        snprintf(p, sizeof(p), "%d", port);
        run_cmd(verb, "'%s/tests/netfault/netns.sh' %s %s %s %s",
                need_env("CHARGEONCE_SOURCE_DIR"), verb, c->ns,
                kind ? kind : "", p);
}

static int port_of(const char *hostport)
{
        const char *colon = strrchr(hostport, ':');
        SC_CHECK(colon, "no port in %s", hostport);
        return atoi(colon + 1);
}

static size_t discard(char *d, size_t sz, size_t nm, void *u)
{
        (void)d;
        (void)u;
        return sz * nm;
}

/* GET /readyz of the chargeonce in the namespace: 200 within 1 s. */
static bool ready(struct ctx *c)
{
        CURL *h = curl_easy_init();
        char url[128];
        long st = 0;

        snprintf(url, sizeof(url), "http://%s:9108/readyz", c->peer);
        curl_easy_setopt(h, CURLOPT_URL, url);
        curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, discard);
        curl_easy_setopt(h, CURLOPT_TIMEOUT_MS, 1000L);
        if (curl_easy_perform(h) == CURLE_OK)
                curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, &st);
        curl_easy_cleanup(h);
        return st == 200;
}

/* Sleeps ms, probing /readyz (network cases) for when it turns red. */
static void hold(struct ctx *c, struct fault_rec *fr, int ms)
{
        int64_t end = nf_now_ms() + ms;

        while (nf_now_ms() < end) {
                int64_t left = end - nf_now_ms();

                if (c->netns && fr && fr->red_ms < 0 && !ready(c))
                        fr->red_ms = nf_now_ms() - fr->t_fault;
                nf_sleep_ms(left < 200 ? (int)(left > 0 ? left : 0) : 200);
        }
}

static long sim_now(struct ctx *c, const char *field)
{
        json_t *st = sim_stats(&c->sim);
        long v     = sim_stat(st, field);
        json_decref(st);
        return v;
}

/* ------------------------------------------------------------------ */
/* chargeonce                                                           */

static void consume_start(struct ctx *c)
{
        char f_conninfo[300], boot[400], url[128], listen[64];
        const char *real = need_env("CHARGEONCE_BIN");
        char nsexec[512];
        const char *xs[16] = { QUICK, NULL };
        int n              = 7, dup_end;

        if (c->netns) {
                char ci[1200];

                /* the namespace's endpoints win over co_start's
                 * loopback ones (later -X win) */
                snprintf(ci, sizeof(ci), "%s dbname=%s",
                         need_env("CHARGEONCE_TEST_PG_NS"), c->run.sc.db);
                sc_secret_file(&c->run.sc, "conninfo_ns", ci, f_conninfo,
                               sizeof(f_conninfo));
                snprintf(boot, sizeof(boot), "db.conninfo_file=%s", f_conninfo);
                xs[n++] = strdup(boot);
                snprintf(boot, sizeof(boot), "kafka.bootstrap.servers=%s",
                         need_env("CHARGEONCE_TEST_KAFKA_NS"));
                xs[n++] = strdup(boot);
                snprintf(url, sizeof(url), "gateway.url=%s", c->sim.url);
                xs[n++] = strdup(url);
                /* the namespace's own address: the test probes /readyz
                 * over the veth, on no port that a rule matches */
                snprintf(listen, sizeof(listen), "http.listen=%s:9108",
                         c->peer);
                xs[n++] = strdup(listen);
                xs[n]   = NULL;
                snprintf(nsexec, sizeof(nsexec), "%s/tests/netfault/nsexec.sh",
                         need_env("CHARGEONCE_SOURCE_DIR"));
                setenv("NETFAULT_REAL_BIN", real, 1);
                setenv("CHARGEONCE_BIN", nsexec, 1);
        }
        dup_end = n; /* xs[7 .. dup_end) are strdup'd */
        /* the case's own -X, then set= (later -X win) */
        for (int i = 0; i < 2; i++)
                if (c->extra[i])
                        xs[n++] = c->extra[i];
        if (c->o.set)
                xs[n++] = c->o.set;
        xs[n] = NULL;
        co_start(&c->run.sc, &c->co, "consume", &c->sim, xs, NULL);
        if (c->netns) {
                setenv("CHARGEONCE_BIN", real, 1);
                for (int i = 7; i < dup_end; i++)
                        free((void *)(uintptr_t)xs[i]);
        }
}

/* Waits until everything is consumed, final and published; false when
 * not within ms (the checker then says what is missing). */
static bool wait_finished(struct ctx *c, int ms)
{
        struct scenario *sc = &c->run.sc;

        if (!sc_wait_consumed(sc, ms)) {
                fprintf(stderr, "netfault: intents not consumed in %d ms\n",
                        ms);
                return false;
        }
        if (!sc_wait_sql(sc,
                         "SELECT NOT EXISTS (SELECT 1 FROM payments WHERE"
                         " status = 'processing') AND NOT EXISTS (SELECT 1"
                         " FROM outbox WHERE" SC_UNPUBLISHED ")",
                         ms)) {
                fprintf(stderr,
                        "netfault: payments processing or outbox rows "
                        "unpublished after %d ms\n",
                        ms);
                return false;
        }
        return true;
}

/* ------------------------------------------------------------------ */
/* the faults                                                           */

static int link_port(struct ctx *c, const char *link)
{
        if (!strcmp(link, "pg"))
                return c->port_pg;
        if (!strcmp(link, "kafka"))
                return c->port_kafka;
        return c->port_gw;
}

/* Removes the link's rules; t_heal is when they are all gone. */
static void heal(struct ctx *c, struct fault_rec *fr, int port)
{
        fr->t_healing = nf_now_ms();
        netns(c, "heal", NULL, port);
        fr->t_heal = nf_now_ms();
}

static void act_simple(struct ctx *c, struct fault_rec *fr)
{
        int port = link_port(c, fr->f->link);

        fr->t_fault = nf_now_ms();
        netns(c, "fault", fr->f->kind, port);
        hold(c, fr, c->o.hold_ms);
        heal(c, fr, port);
}

/* PostgreSQL stopped and started again while its link is blackholed: the
 * old connections' server ends are gone without a word reaching chargeonce
 * (their FIN and RST are dropped). */
static void act_restart(struct ctx *c, struct fault_rec *fr)
{
        int third = c->o.hold_ms / 3;

        fr->t_fault = nf_now_ms();
        netns(c, "fault", "blackhole", c->port_pg);
        hold(c, fr, third);
        services("stop-pg");
        hold(c, fr, third);
        services("start-again-pg");
        hold(c, fr, c->o.hold_ms - 2 * third);
        heal(c, fr, c->port_pg);
}

/* Gateway calls in flight at the cut: every answer is slow (the charge is
 * made at once, the answer sent 2 s later, inside gateway.timeout), and the
 * link is blackholed as soon as a few slow calls were charged. */
static void act_call(struct ctx *c, struct fault_rec *fr)
{
        long slow0;
        int64_t end;

        sim_config(&c->sim, "{\"p_slow\": 1, \"slow_ms\": 2000}");
        slow0 = sim_now(c, "faults.slow");
        end   = nf_now_ms() + 10000;
        while (sim_now(c, "faults.slow") < slow0 + 3 && nf_now_ms() < end)
                nf_sleep_ms(20);
        fr->t_fault = nf_now_ms();
        netns(c, "fault", "blackhole", c->port_gw);
        fr->exercised = sim_now(c, "faults.slow") - slow0;
        sim_config(&c->sim, "{\"p_slow\": 0}");
        hold(c, fr, c->o.hold_ms);
        heal(c, fr, c->port_gw);
}

/* How long chargeonce may take to exit on SIGTERM behind a cut of its
 * broker link: the pipeline's stop, the consumer group's close (bounded at
 * 10 s: its commit and LeaveGroup cannot be answered), the relay's and the
 * DLQ producer's flushes. Without the close's bound it waited for ever. */
#define STOP_BOUND_MS 40000

/* chargeonce stopped (SIGTERM) while its broker link is blackholed, and
 * started again after the heal. exercised: 1 when it exited 0 within
 * STOP_BOUND_MS. */
static void act_stop(struct ctx *c, struct fault_rec *fr)
{
        int64_t t0;
        long rc;

        fr->t_fault = nf_now_ms();
        netns(c, "fault", "blackhole", c->port_kafka);
        hold(c, fr, 2000);
        t0 = nf_now_ms();
        rc = co_stop(&c->co, SIGTERM, STOP_BOUND_MS);
        printf("netfault: stop: SIGTERM behind the cut: exit %ld after %lld "
               "ms (bound %d ms)\n",
               rc, (long long)(nf_now_ms() - t0), STOP_BOUND_MS);
        fflush(stdout);
        fr->exercised = rc == 0;
        hold(c, fr, c->o.hold_ms - (int)(nf_now_ms() - fr->t_fault));
        heal(c, fr, c->port_kafka);
        consume_start(c);
}

/* The test's own transaction holding SHARE on the outbox: settles (and
 * the relay's marks) wait on it. */
static PGconn *lock_outbox(struct ctx *c)
{
        PGconn *l = PQconnectdb(c->run.sc.conninfo);
        PGresult *r;

        SC_CHECK(PQstatus(l) == CONNECTION_OK, "lock connection: %s",
                 PQerrorMessage(l));
        r = PQexec(l, "BEGIN; LOCK TABLE outbox IN SHARE MODE");
        SC_CHECK(PQresultStatus(r) == PGRES_COMMAND_OK, "lock: %s",
                 PQresultErrorMessage(r));
        PQclear(r);
        return l;
}

static void unlock_outbox(PGconn *l)
{
        PGresult *r = PQexec(l, "COMMIT");
        SC_CHECK(PQresultStatus(r) == PGRES_COMMAND_OK, "unlock: %s",
                 PQresultErrorMessage(r));
        PQclear(r);
        PQfinish(l);
}

/* chargeonce's settle statements waiting on a lock */
#define SETTLES_WAITING                                                        \
        " FROM pg_stat_activity WHERE datname = current_database() AND"        \
        " wait_event_type = 'Lock' AND query LIKE '%%co_settle_input%%'"

static long settles_waiting(struct ctx *c)
{
        return sc_sql_long(&c->run.sc, "SELECT count(*)" SETTLES_WAITING);
}

/* Waits until settles queue behind the lock (at least one, then up to
 * ms for more to join). */
static long wait_settles(struct ctx *c, int ms)
{
        int64_t end = nf_now_ms() + 10000, more = 0;
        long n = 0;

        while (nf_now_ms() < end) {
                n = settles_waiting(c);
                if (n > 0 && !more)
                        more = nf_now_ms() + ms;
                if (more && nf_now_ms() >= more)
                        break;
                nf_sleep_ms(20);
        }
        return n;
}

/* The backends of the settles waiting on the lock, as an array literal. */
static void settle_pids(struct ctx *c, char *buf, size_t n)
{
        const char *v =
            sc_sql(&c->run.sc,
                   "SELECT coalesce(array_agg(pid), '{}')" SETTLES_WAITING);

        snprintf(buf, n, "%s", v ? v : "{}");
}

/* How many of those backends still run their statement: one that stopped
 * waiting for the lock has yet to write and commit, and only then does it
 * turn idle (its answer goes to the socket, lost behind the cut). */
static long settles_running(struct ctx *c, const char *pids)
{
        return sc_sql_long(&c->run.sc,
                           "SELECT count(*) FROM pg_stat_activity WHERE"
                           " pid = ANY ('%s'::int[]) AND state = 'active'"
                           " AND query LIKE '%%co_settle_input%%'",
                           pids);
}

static long finished_payments(struct ctx *c)
{
        return sc_sql_long(&c->run.sc, "SELECT count(*) FROM payments WHERE"
                                       " status <> 'processing'");
}

/* Settles whose COMMIT reaches the server and whose answer never comes
 * back: the settles wait on the test's lock, the link is blackholed, the
 * lock released; they commit on the server behind the cut. */
static void act_settle(struct ctx *c, struct fault_rec *fr)
{
        int64_t t_lock = nf_now_ms(), held_ms, end;
        PGconn *l      = lock_outbox(c);
        char pids[1024];
        long waiting, done0;

        waiting = wait_settles(c, 300);
        settle_pids(c, pids, sizeof pids);
        done0       = finished_payments(c);
        fr->t_fault = nf_now_ms();
        netns(c, "fault", "blackhole", c->port_pg);
        unlock_outbox(l);
        held_ms = nf_now_ms() - t_lock;
        /* not merely past the lock: committed, or fenced */
        end = nf_now_ms() + 5000;
        while (settles_running(c, pids) > 0 && nf_now_ms() < end)
                nf_sleep_ms(20);
        fr->exercised = finished_payments(c) - done0;
        printf("netfault: settle: %ld settle statement(s) waited on the "
               "lock (held %lld ms); %ld payment(s) settled on the server "
               "behind the cut\n",
               waiting, (long long)held_ms, fr->exercised);
        hold(c, fr, c->o.hold_ms - (int)(nf_now_ms() - fr->t_fault));
        heal(c, fr, c->port_pg);
}

/* The relay's produce reaching the log with its acks lost: results held
 * back by the lock, the broker's answers dropped (drop-in), then the
 * burst released. */
static void act_produce(struct ctx *c, struct fault_rec *fr)
{
        PGconn *l = lock_outbox(c);
        int64_t end;

        /* a backlog of settled results waits behind the lock */
        (void)wait_settles(c, 2500);
        fr->t_fault = nf_now_ms();
        netns(c, "fault", "drop-in", c->port_kafka);
        unlock_outbox(l);
        end = nf_now_ms() + 5000;
        while (!nf_results_between(&c->run, fr->t_fault, 0) &&
               nf_now_ms() < end)
                nf_sleep_ms(20);
        hold(c, fr, c->o.hold_ms - (int)(nf_now_ms() - fr->t_fault));
        fr->exercised = nf_results_between(&c->run, fr->t_fault, 0);
        heal(c, fr, c->port_kafka);
}

/* The four kinds of one link. A produce crosses a broker link that only
 * drops the broker's answers (drop-in) and reaches the log: results may
 * appear during that one. */
#define SIMPLE(link, in_stops)                                                 \
        { "blackhole", link, act_simple, "blackhole", NULL, true },            \
            { "reset", link, act_simple, "reset", NULL, true },                \
            { "drop-out", link, act_simple, "drop-out", NULL, true },          \
        {                                                                      \
                "drop-in", link, act_simple, "drop-in", NULL, in_stops         \
        }

static const struct fault faults_pg[] = {
        SIMPLE("pg", true),
        { "restart", "pg", act_restart, NULL, NULL, true },
};
static const struct fault faults_kafka[] = {
        SIMPLE("kafka", false),
        { "stop", "kafka", act_stop, NULL, "exited in time", true },
};
static const struct fault faults_gateway[]  = { SIMPLE("gateway", true) };
static const struct fault faults_inflight[] = {
        { "call", "gateway", act_call, NULL, "calls charged, answer due",
          true },
        { "settle", "pg", act_settle, NULL, "settles committed unanswered",
          true },
        { "produce", "kafka", act_produce, NULL,
          "results appended, acks dropped", false },
};

/* Every intent produced more than a second ago answered (bounded). */
static void steady(struct ctx *c)
{
        int64_t end = nf_now_ms() + c->o.wait_ms;

        while (nf_now_ms() < end) {
                int upto = 0, n = nf_intents(&c->run);
                int64_t cutoff = nf_now_ms() - 1000;

                pthread_mutex_lock(&c->run.mu);
                while (upto < n && c->run.intents[upto].produced_ms < cutoff)
                        upto++;
                pthread_mutex_unlock(&c->run.mu);
                if (upto > 0 && !nf_unanswered(&c->run, upto))
                        return;
                nf_sleep_ms(100);
        }
        printf("netfault: not steady before the fault: %d intent(s) "
               "unanswered\n",
               nf_unanswered(&c->run, nf_intents(&c->run)));
}

/* After the heal: results flowing again, for new intents too, and the
 * backlog answered (each waited at most `wait` ms). */
static void measure(struct ctx *c, struct fault_rec *fr, bool drain)
{
        int64_t end = fr->t_heal + c->o.wait_ms, t;

        fr->recover_ms = fr->fresh_ms = fr->drain_ms = -1;
        fr->during =
            nf_results_between(&c->run, fr->t_fault + 3000, fr->t_healing);
        while (nf_now_ms() < end) {
                if (fr->recover_ms < 0 &&
                    (t = nf_first_after(&c->run, fr->t_heal, 0)))
                        fr->recover_ms = t - fr->t_heal;
                if (fr->fresh_ms < 0 &&
                    (t = nf_first_after(&c->run, fr->t_heal, fr->idx_heal)))
                        fr->fresh_ms = t - fr->t_heal;
                if (drain && fr->drain_ms < 0 &&
                    (t = nf_answered_upto(&c->run, fr->idx_heal)))
                        fr->drain_ms = t > fr->t_heal ? t - fr->t_heal : 0;
                if (fr->recover_ms >= 0 && fr->fresh_ms >= 0 &&
                    (fr->drain_ms >= 0 || !drain))
                        break;
                nf_sleep_ms(50);
        }
        printf("netfault: %s %s: held %lld ms, results again after %lld ms "
               "(new intents %lld ms), backlog answered after %lld ms, "
               "/readyz red after %lld ms\n",
               fr->f->link, fr->f->name, (long long)(fr->t_heal - fr->t_fault),
               (long long)fr->recover_ms, (long long)fr->fresh_ms,
               (long long)fr->drain_ms, (long long)fr->red_ms);
        fflush(stdout);
}

static bool selected(const struct opts *o, const char *name)
{
        char w[40];

        if (!o->only[0])
                return true;
        snprintf(w, sizeof(w), ",%s,", name);
        return strstr(o->only, w) != NULL;
}

/* ------------------------------------------------------------------ */
/* the verdict                                                          */

/* Prints the per-fault lines and the summary; returns the failures
 * (violations, slow or missing recoveries, faults not exercised). */
static long verdict(struct ctx *c, const struct nf_verdict *v, int bound_ms,
                    long extra_failures)
{
        json_t *st = sim_stats(&c->sim);
        long slow = 0, unexercised = 0;

        for (int i = 0; i < c->n_rec; i++) {
                struct fault_rec *fr = &c->rec[i];
                long dbl, lost;

                nf_range(&c->run, st, fr->idx_from, fr->idx_to, &dbl, &lost);
                if (bound_ms > 0 &&
                    (fr->recover_ms < 0 || fr->recover_ms > bound_ms)) {
                        slow++;
                        fprintf(stderr,
                                "SLOW: %s %s: results again after %lld ms "
                                "(bound %d ms; -1: not within %d ms)\n",
                                fr->f->link, fr->f->name,
                                (long long)fr->recover_ms, bound_ms,
                                c->o.wait_ms);
                }
                if (fr->f->exercised && fr->exercised <= 0) {
                        unexercised++;
                        fprintf(stderr,
                                "NOT EXERCISED: %s %s: 0 %s at the cut\n",
                                fr->f->link, fr->f->name, fr->f->exercised);
                }
                if (fr->f->stops_all && fr->during > 0) {
                        unexercised++;
                        fprintf(stderr,
                                "NOT EXERCISED: %s %s: %ld results appended "
                                "while the cut held (the rules cut "
                                "nothing?)\n",
                                fr->f->link, fr->f->name, fr->during);
                }
                printf("netfault-stats case=%s fault=%s link=%s seed=%u "
                       "held_ms=%lld recover_ms=%lld fresh_ms=%lld "
                       "drain_ms=%lld ready_red_ms=%lld inflight=%ld "
                       "during=%ld bound_ms=%d intents=%d double=%ld "
                       "lost=%ld\n",
                       c->name, fr->f->name, fr->f->link, c->o.seed,
                       (long long)(fr->t_heal - fr->t_fault),
                       (long long)fr->recover_ms, (long long)fr->fresh_ms,
                       (long long)fr->drain_ms, (long long)fr->red_ms,
                       fr->exercised, fr->during, bound_ms,
                       fr->idx_to - fr->idx_from, dbl, lost);
        }
        json_decref(st);
        printf("netfault-summary case=%s seed=%u faults=%d intents=%d "
               "messages=%ld republished=%ld double=%ld lost=%ld extra=%ld "
               "disagree=%ld order=%ld violations=%ld slow=%ld "
               "unexercised=%ld\n",
               c->name, c->o.seed, c->n_rec, v->intents, v->messages,
               v->republished, v->double_charges, v->lost, v->extra,
               v->disagree, v->order, v->violations, slow, unexercised);
        if (c->netns)
                printf("netfault: reproduce: tests/netfault/run.sh %s %u "
                       "hold=%d bound=%d rate=%d%s%.*s\n",
                       c->name, c->o.seed, c->o.hold_ms, bound_ms, c->o.rate,
                       c->o.only[0] ? " faults=" : "",
                       c->o.only[0] ? (int)strlen(c->o.only) - 2 : 0,
                       c->o.only[0] ? c->o.only + 1 : "");
        else
                printf("netfault: reproduce: tests/netfault/run.sh %s %u "
                       "rate=%d fbound=%d cut=%d\n",
                       c->name, c->o.seed, c->o.rate, c->o.fbound_ms,
                       c->o.cut_ms);
        fflush(stdout);
        return v->violations + slow + unexercised + extra_failures;
}

/* ------------------------------------------------------------------ */
/* network cases                                                        */

static void ctx_init(struct ctx *c, const char *name)
{
        memset(c, 0, sizeof(*c));
        c->name = name;
        parse_opts(&c->o);
        c->jitter = c->o.seed ^ 0x5bd1e995u;
        nf_init(&c->run, c->o.seed, c->o.rate);
        curl_global_init(CURL_GLOBAL_DEFAULT);
}

/* x: one more -X of the case (over QUICK's), or NULL */
static void net_case(const char *name, const struct fault *faults, int n,
                     const char *x)
{
        struct ctx *c = calloc(1, sizeof(*c));
        char opts[256];
        struct nf_verdict v;
        bool finished;
        long failures, rc;

        SC_CHECK(c, "oom");
        ctx_init(c, name);
        c->netns      = true;
        c->ns         = need_env("CHARGEONCE_TEST_NETNS");
        c->host       = need_env("CHARGEONCE_TEST_NETNS_HOST");
        c->peer       = need_env("CHARGEONCE_TEST_NETNS_PEER");
        c->port_pg    = atoi(need_env("CHARGEONCE_TEST_PGPORT"));
        c->port_kafka = port_of(need_env("CHARGEONCE_TEST_KAFKA_NS"));
        /* as deployed (deploy/chargeonce@.service.in,
         * deploy/kubernetes/statefulset.yaml): a worker.id of its own, hence a
         * static member of the group (KIP-345). A dynamic member whose session
         * ran out on its side while its heartbeats still reached the broker
         * after a heal (TCP's backed-off retransmissions) joins again as a new
         * member, and the broker holds the group until its former self expires:
         * up to session.timeout.ms after the heal (docs/testing.md,
         * "Network faults and failover"); `set=group.instance.id=none`
         * measures that case */
        c->extra[0] = "worker.id=netfault-1";
        c->extra[1] = x;
        printf("netfault %s: seed %u, hold %d ms, bound %d ms, %d intents/s, "
               "namespace %s (reproduce: tests/netfault/run.sh %s %u "
               "hold=%d)\n",
               name, c->o.seed, c->o.hold_ms, c->o.bound_ms, c->o.rate, c->ns,
               name, c->o.seed, c->o.hold_ms);
        fflush(stdout);

        sc_init(&c->run.sc, "netfault", 4);
        nf_log_append_time(c->run.sc.t_results);
        /* the simulator on the host side of the veth: reached from the
         * namespace over the link the rules cut, and by the test locally */
        snprintf(opts, sizeof(opts), "--bind %s --seed %u --latency-ms 0:5",
                 c->host, c->o.seed);
        sim_start(&c->run.sc, &c->sim, opts);
        snprintf(c->sim.url, sizeof(c->sim.url), "http://%s:%d", c->host,
                 c->sim.port);
        c->port_gw = c->sim.port;
        nf_read_start(&c->run);
        consume_start(c);
        nf_load_start(&c->run);

        for (int i = 0; i < n; i++) {
                struct fault_rec *fr = &c->rec[c->n_rec];

                if (!selected(&c->o, faults[i].name))
                        continue;
                SC_CHECK(c->n_rec < MAX_FAULTS, "too many faults");
                c->n_rec++;
                memset(fr, 0, sizeof(*fr));
                fr->f        = &faults[i];
                fr->red_ms   = -1;
                fr->idx_from = c->n_rec > 1 ? c->rec[c->n_rec - 2].idx_to : 0;
                steady(c);
                nf_sleep_ms(300 + (int)(rand_r(&c->jitter) % 1000));
                printf("netfault: %s %s for %d ms\n", fr->f->link, fr->f->name,
                       c->o.hold_ms);
                fflush(stdout);
                fr->f->act(c, fr);
                fr->idx_heal = nf_intents(&c->run);
                measure(c, fr, true);
                fr->idx_to = nf_intents(&c->run);
        }
        SC_CHECK(c->n_rec > 0, "no fault of %s matches faults=%s", name,
                 c->o.only);
        nf_sleep_ms(1000);
        nf_load_stop(&c->run);
        if (c->n_rec)
                c->rec[c->n_rec - 1].idx_to = nf_intents(&c->run);
        finished = wait_finished(c, c->o.wait_ms);
        nf_read_stop(&c->run, 2000);
        nf_check(&c->run, &c->sim, true, &v);
        rc = co_stop(&c->co, SIGTERM, 60000);
        if (rc != 0)
                fprintf(stderr, "VIOLATION: SIGTERM: chargeonce exit %ld\n",
                        rc);
        failures = verdict(c, &v, c->o.bound_ms, (rc != 0) + !finished);
        SC_CHECK(failures == 0,
                 "%ld failure(s): violations, recoveries over %d ms or "
                 "faults not exercised (above)",
                 failures, c->o.bound_ms);
        sim_stop(&c->sim);
        sc_cleanup(&c->run.sc);
        free(c);
}

#define NET_CASE(fn, name, table, x)                                           \
        static void fn(void)                                                   \
        {                                                                      \
                net_case(name, table, sizeof(table) / sizeof(table[0]), x);    \
        }
NET_CASE(case_pg, "pg", faults_pg, NULL)
/* the stop's relay gives up its deliveries after 2 s, not 10 */
NET_CASE(case_kafka, "kafka", faults_kafka, "relay.drain_timeout=2s")
NET_CASE(case_gateway, "gateway", faults_gateway, NULL)
/* A payment's lease is renewed only while it is at the gateway: QUICK's
 * 2 s, less the time its settle queued and the fault's lock and rules,
 * ran out under CI's load, the reconciler took the payments over while
 * their settles waited on the lock, and those settles, fenced, committed
 * nothing ("not exercised") */
NET_CASE(case_inflight, "inflight", faults_inflight, "lease.duration=6s")

/* ------------------------------------------------------------------ */
/* failover                                                             */

static int file_port(const char *name)
{
        char path[512];
        FILE *f;
        int port = 0;

        snprintf(path, sizeof(path), "%s/%s", need_env("CHARGEONCE_TEST_DIR"),
                 name);
        f = fopen(path, "r");
        SC_CHECK(f && fscanf(f, "%d", &port) == 1, "no %s", path);
        fclose(f);
        return port;
}

/* The primary and the standby behind one libpq conninfo: libpq tries them
 * in order and takes the one that accepts writes. */
static void multi_host(int primary, int standby)
{
        char ci[512];

        snprintf(ci, sizeof(ci),
                 "host=127.0.0.1,127.0.0.1 port=%d,%d user=postgres "
                 "dbname=postgres target_session_attrs=read-write",
                 primary, standby);
        setenv("CHARGEONCE_TEST_PG", ci, 1);
}

/* (key, status) of every payment of db on the server at port, sorted by
 * key; *n rows. NULL when it cannot be read. */
struct pay {
        char key[32], status[16];
};

static int cmp_pay(const void *a, const void *b)
{
        return strcmp(((const struct pay *)a)->key,
                      ((const struct pay *)b)->key);
}

static struct pay *payments_at(int port, const char *db, size_t *n)
{
        char ci[256];
        PGconn *pg;
        PGresult *r;
        struct pay *p = NULL;

        *n = 0;
        snprintf(ci, sizeof(ci),
                 "host=127.0.0.1 port=%d user=postgres dbname=%s "
                 "connect_timeout=5",
                 port, db);
        pg = PQconnectdb(ci);
        SC_CHECK(PQstatus(pg) == CONNECTION_OK, "connect %d: %s", port,
                 PQerrorMessage(pg));
        r = PQexec(pg, "SELECT idem_key, status FROM payments ORDER BY 1");
        SC_CHECK(PQresultStatus(r) == PGRES_TUPLES_OK, "payments at %d: %s",
                 port, PQresultErrorMessage(r));
        p = calloc((size_t)PQntuples(r) + 1, sizeof(*p));
        SC_CHECK(p, "oom");
        for (int i = 0; i < PQntuples(r); i++) {
                snprintf(p[i].key, sizeof(p[i].key), "%s", PQgetvalue(r, i, 0));
                snprintf(p[i].status, sizeof(p[i].status), "%s",
                         PQgetvalue(r, i, 1));
        }
        *n = (size_t)PQntuples(r);
        PQclear(r);
        PQfinish(pg);
        return p;
}

static const struct fault fault_failover_sync = {
        "crash-promote", "pg", NULL, NULL, NULL, false
};
static const struct fault fault_failover_async = {
        "cut-crash-promote-rewind", "pg", NULL, NULL, NULL, false
};

/* Starts the run of a failover case: standby, chargeonce, load. */
static void failover_begin(struct ctx *c, bool sync)
{
        int pport = atoi(need_env("CHARGEONCE_TEST_PGPORT"));
        char opts[128];

        services("start-standby");
        if (sync)
                services_arg("sync-standby", "on");
        multi_host(pport, file_port("standby.port"));
        printf("netfault %s: seed %u, %d intents/s, primary %d, %s standby "
               "%d (reproduce: tests/netfault/run.sh %s %u)\n",
               c->name, c->o.seed, c->o.rate, pport,
               sync ? "synchronous" : "asynchronous", file_port("standby.port"),
               c->name, c->o.seed);
        fflush(stdout);
        sc_init(&c->run.sc, "failover", 4);
        nf_log_append_time(c->run.sc.t_results);
        snprintf(opts, sizeof(opts), "--seed %u --latency-ms 0:5", c->o.seed);
        sim_start(&c->run.sc, &c->sim, opts);
        nf_read_start(&c->run);
        consume_start(c);
        nf_load_start(&c->run);
        /* results flowing */
        steady(c);
        nf_sleep_ms(2000);
}

static void failover_sync(void)
{
        struct ctx *c = calloc(1, sizeof(*c));
        struct fault_rec *fr;
        struct nf_verdict v;
        bool finished;
        long rc, failures;

        SC_CHECK(c, "oom");
        ctx_init(c, "failover_sync");
        failover_begin(c, true);
        fr          = &c->rec[c->n_rec++];
        fr->f       = &fault_failover_sync;
        fr->red_ms  = -1;
        fr->t_fault = nf_now_ms();
        services("crash-primary");
        services("promote-standby");
        fr->t_heal    = nf_now_ms();
        fr->t_healing = fr->t_fault; /* no `during` for a failover */
        fr->idx_heal  = nf_intents(&c->run);
        printf("netfault: primary crashed, standby promoted in %lld ms\n",
               (long long)(fr->t_heal - fr->t_fault));
        measure(c, fr, true);
        nf_sleep_ms(2000);
        nf_load_stop(&c->run);
        fr->idx_to = nf_intents(&c->run);
        finished   = wait_finished(c, c->o.wait_ms);
        nf_read_stop(&c->run, 2000);
        nf_check(&c->run, &c->sim, true, &v);
        rc = co_stop(&c->co, SIGTERM, 60000);
        if (rc != 0)
                fprintf(stderr, "VIOLATION: SIGTERM: chargeonce exit %ld\n",
                        rc);
        failures = verdict(c, &v, c->o.fbound_ms, (rc != 0) + !finished);
        SC_CHECK(failures == 0, "%ld failure(s) (above)", failures);
        sim_stop(&c->sim);
        sc_cleanup(&c->run.sc);
        free(c);
}

/* What ops do after such an incident: rewind the group with Kafka's own
 * tool to before it (the group must have no member). */
static void rewind_group(struct ctx *c, int64_t to_ms)
{
        time_t secs = (time_t)(to_ms / 1000);
        struct tm tm;
        char when[64];

        gmtime_r(&secs, &tm);
        strftime(when, sizeof(when), "%Y-%m-%dT%H:%M:%S", &tm);
        run_cmd("ConsumerGroupCommand --reset-offsets",
                "java -Xmx256m -cp '%s/*' -Dlog4j.configuration=file:/dev/null "
                "org.apache.kafka.tools.consumer.group.ConsumerGroupCommand "
                "--bootstrap-server %s --group %s --topic %s --reset-offsets "
                "--to-datetime %s.%03dZ --execute >'%s/reset.log' 2>&1",
                need_env("CHARGEONCE_TEST_KAFKA_JARS"), testenv_kafka(),
                c->run.sc.group, c->run.sc.t_intents, when, (int)(to_ms % 1000),
                c->run.sc.dir);
}

/*
 * An asynchronous standby cut off under load for cut_ms, the primary
 * crashed, the standby promoted, the group rewound to before the cut.
 * wait: the relay publishes only what the standby has flushed
 * (relay.wait_for_standbys=1): then no result published before the
 * crash is of a payment the promoted standby lost or has unfinished
 * (answered_then_lost = 0), so no result published can be contradicted
 * by the intent finished again (the model's F2).
 */
static void failover_async_run(const char *name, bool wait)
{
        struct ctx *c = calloc(1, sizeof(*c));
        struct fault_rec *fr;
        struct nf_verdict v;
        struct pay *old = NULL, *sb = NULL;
        size_t n_old = 0, n_sb = 0;
        long lost_claims = 0, lost_settles = 0, forgotten = 0;
        int64_t t_cut, t_crash, t_rewind;
        bool finished;
        long rc, failures;
        int sport;

        SC_CHECK(c, "oom");
        ctx_init(c, name);
        if (wait)
                c->extra[0] = "relay.wait_for_standbys=1";
        failover_begin(c, false);
        sport       = file_port("standby.port");
        fr          = &c->rec[c->n_rec++];
        fr->f       = &fault_failover_async;
        fr->red_ms  = -1;
        t_cut       = nf_now_ms();
        fr->t_fault = t_cut;
        services("cut-replication");
        printf("netfault: replication cut for %d ms under load\n", c->o.cut_ms);
        fflush(stdout);
        nf_sleep_ms(c->o.cut_ms);
        services("crash-primary");
        t_crash = nf_now_ms();
        /* what the standby has, read before it is promoted (read-only:
         * chargeonce's read-write conninfo cannot take it yet) */
        sb = payments_at(sport, c->run.sc.db, &n_sb);
        services("promote-standby");
        fr->t_heal    = nf_now_ms();
        fr->t_healing = fr->t_fault; /* no `during` for a failover */
        fr->idx_heal  = nf_intents(&c->run);
        printf("netfault: primary crashed %lld ms after the cut, standby "
               "promoted (it had %zu payments)\n",
               (long long)(fr->t_heal - t_cut), n_sb);
        /* the intents whose claims were lost are answered only after the
         * rewind: no backlog to wait for here */
        measure(c, fr, false);

        /* ops: stop, rewind to before the incident, start again */
        rc = co_stop(&c->co, SIGTERM, 60000);
        if (rc != 0)
                fprintf(stderr,
                        "VIOLATION: SIGTERM before the rewind: exit "
                        "%ld\n",
                        rc);
        t_rewind = t_cut - 5000;
        rewind_group(c, t_rewind);
        printf("netfault: group rewound to 5 s before the cut\n");
        fflush(stdout);
        /* the promoted primary has no standby: results would wait for
         * one; ops start it without the wait until one is attached
         * (docs/deployment.md) */
        c->extra[0] = NULL;
        consume_start(c);
        nf_sleep_ms(3000);
        nf_load_stop(&c->run);
        fr->idx_to = nf_intents(&c->run);
        finished   = wait_finished(c, c->o.wait_ms);
        nf_read_stop(&c->run, 2000);
        nf_check(&c->run, &c->sim, true, &v);
        rc += co_stop(&c->co, SIGTERM, 60000);

        /* the commits the standby never got: the old primary's data,
         * started aside on a port nobody else knows */
        services("start-old-primary");
        old = payments_at(file_port("oldprimary.port"), c->run.sc.db, &n_old);
        services("stop-pg");
        for (size_t i = 0; i < n_old; i++) {
                struct pay *hit =
                    bsearch(&old[i], sb, n_sb, sizeof(*sb), cmp_pay);
                if (!hit)
                        lost_claims++;
                else if (strcmp(old[i].status, "processing") &&
                         !strcmp(hit->status, "processing"))
                        lost_settles++;
        }
        /* answered on the topic before the crash, unknown or unfinished
         * on the standby when it was promoted */
        pthread_mutex_lock(&c->run.mu);
        for (int i = 0; i < c->run.n_intents; i++) {
                struct pay k;
                struct pay *hit;

                if (!c->run.intents[i].answered_ts ||
                    c->run.intents[i].answered_ts >= t_crash)
                        continue;
                snprintf(k.key, sizeof(k.key), "k%06d", i);
                hit = bsearch(&k, sb, n_sb, sizeof(*sb), cmp_pay);
                if (!hit || !strcmp(hit->status, "processing"))
                        forgotten++;
        }
        pthread_mutex_unlock(&c->run.mu);
        printf("failover-stats case=%s seed=%u cut_ms=%d "
               "old_primary_payments=%zu standby_payments=%zu "
               "lost_claims=%ld lost_settles=%ld answered_then_lost=%ld "
               "recover_ms=%lld double=%ld double_orders=%ld disagree=%ld "
               "lost=%ld\n",
               c->name, c->o.seed, c->o.cut_ms, n_old, n_sb, lost_claims,
               lost_settles, forgotten, (long long)fr->recover_ms,
               v.double_charges, v.double_orders, v.disagree, v.lost);
        if (rc != 0)
                fprintf(stderr, "VIOLATION: SIGTERM: chargeonce exit %ld\n",
                        rc);
        /* the recovery after the promotion is reported, not bounded: the
         * rewind comes after it */
        if (wait && forgotten > 0)
                fprintf(stderr,
                        "VIOLATION: %ld result(s) published before the "
                        "crash of payments the promoted standby lost or "
                        "had unfinished, although the relay waits for it\n",
                        forgotten);
        failures =
            verdict(c, &v, 0, (rc != 0) + !finished + (wait && forgotten > 0));
        SC_CHECK(failures == 0, "%ld failure(s) (above)", failures);
        if (wait)
                SC_CHECK(n_old > 0 && lost_claims + lost_settles > 0,
                         "the failover lost no commit (%ld claims, %ld "
                         "settles): nothing was tested",
                         lost_claims, lost_settles);
        free(old);
        free(sb);
        sim_stop(&c->sim);
        sc_cleanup(&c->run.sc);
        free(c);
}

static void failover_async(void)
{
        failover_async_run("failover_async", false);
}

static void failover_async_wait(void)
{
        failover_async_run("failover_async_wait", true);
}

static int setup(void)
{
        /* run.sh gives every case its services; never a skip */
        SC_CHECK(getenv("CHARGEONCE_TEST_PG") &&
                     getenv("CHARGEONCE_TEST_KAFKA"),
                 "no services: run through tests/netfault/run.sh");
        return 0;
}

int main(int argc, char **argv)
{
        static const struct test_case cases[] = {
                { "pg", case_pg, NULL, NULL },
                { "kafka", case_kafka, NULL, NULL },
                { "gateway", case_gateway, NULL, NULL },
                { "inflight", case_inflight, NULL, NULL },
                { "failover_sync", failover_sync, NULL, NULL },
                { "failover_async", failover_async, NULL, NULL },
                { "failover_async_wait", failover_async_wait, NULL, NULL },
        };
        static const struct test_suite suite = {
                .name    = "test_netfault",
                .cases   = cases,
                .n_cases = sizeof(cases) / sizeof(cases[0]),
                .setup   = setup,
        };

        return cases_main(&suite, argc, argv);
}
