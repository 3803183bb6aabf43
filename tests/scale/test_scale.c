/* SPDX-License-Identifier: Apache-2.0 */
/*
 * test_scale: many chargeonce processes in one consumer group on the real
 * broker, PostgreSQL and the gateway simulator (docs/scaling.md).
 *
 *   test_scale eager [SEED]        ctest scale_eager: the range assignor
 *                                  (eager protocol)
 *   test_scale cooperative [SEED]  ctest scale_cooperative:
 *                                  cooperative-sticky
 *
 * The seed (printed) shapes the load and the simulator's fault draws;
 * without one, CHARGEONCE_SCALE_SEED or the clock. A run prints the crash
 * campaign's line (crashstats.h; scripts/crash-campaign.sh).
 *
 * One run: an intents topic of 12 partitions; three `chargeonce consume`
 * (each with its relay and reconciler), one `chargeonce relay` and one
 * `chargeonce reconcile` alone, each with its own worker.id; a simulator
 * that loses answers after the charge, answers 500 after the charge, is
 * slow now and then and declines some cards; a seeded load on a thread
 * (SCALE_INTENTS intents over SCALE_LOAD_MS) with every kind of copy:
 * redelivered event ids, client retries with new event ids, concurrent
 * copies on other partitions, the key reused with another amount, the key
 * string in another tenant, a rejected intent, poison (not JSON). During
 * the load: kill -9 of consumer 1 (never restarted), SIGTERM of consumer 2
 * and its restart under the same worker.id, a fourth consumer joins.
 *
 * Checked at the end (truth from the simulator, the result topic, the DLQ
 * topic and the database, never from chargeonce's counters): 0 double
 * charges and charges = succeeded payments; every intent exactly one
 * non-replayed final result, every other copy at most one result and a
 * replayed one of the same status, every conflict and rejected message
 * its one result; per message key, the first occurrences of results on
 * the topic in outbox id order (so a replayed result never precedes its
 * original); the poison in the DLQ; invariant_violations empty; nothing
 * left processing; the outbox drained; SIGTERM exits 0.
 *
 * Membership: every consumer is a static member (the key
 * group.instance.id = its own name). With SCALE_MEMBERSHIP=dynamic in the
 * environment they are dynamic members (group.instance.id=none).
 *
 * Printed: the time each rebalance took, from the consumers' own
 * "assigned N partition(s)" / "revoking N partition(s)" log lines (see
 * rebalance_report()).
 */
#include "cases.h"
#include "crashstats.h"
#include "scale.h"
#include "scenario.h"
#include "testenv.h"

#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define N_PARTITIONS  12
#define SCALE_INTENTS 1600
#define SCALE_LOAD_MS 26000
/* when, into the load, each disruption comes (ms) */
#define AT_KILL    5000
#define AT_SIGTERM 14000
#define AT_JOIN    21000

static void sleep_ms(int ms)
{
        struct timespec ts = { ms / 1000, (long)(ms % 1000) * 1000000L };
        nanosleep(&ts, NULL);
}

int64_t scale_now_ms(void)
{
        struct timespec ts;
        clock_gettime(CLOCK_REALTIME, &ts);
        return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* ------------------------------------------------------------------ */
/* the load                                                             */

struct load {
        struct scenario *sc;
        unsigned seed;
        struct scale_sent *sent; /* SCALE_MAX_SENT */
        int n_sent;
        int n_poison;
        char poison[SCALE_MAX_POISON][48];
};

static struct scale_sent *record(struct load *l, const char *tenant,
                                 const char *key, const char *event_id,
                                 enum scale_kind kind)
{
        struct scale_sent *s;

        SC_CHECK(l->n_sent < SCALE_MAX_SENT, "too many messages");
        s = &l->sent[l->n_sent++];
        snprintf(s->tenant, sizeof(s->tenant), "%s", tenant);
        snprintf(s->key, sizeof(s->key), "%s", key);
        snprintf(s->event_id, sizeof(s->event_id), "%s", event_id);
        s->kind = kind;
        return s;
}

/* Intent i and, by the seed, one kind of copy of it. */
static void produce_one(struct load *l, int i, unsigned *r)
{
        struct scenario *sc = l->sc;
        char key[32], order[32], ev[40];
        struct intent_spec is = { NULL,
                                  "shop-s",
                                  key,
                                  order,
                                  100 + i,
                                  "VND",
                                  i % 25 == 3 ? "pm_decline_x" : "pm_tok" };
        int k                 = (int)(rand_r(r) % 100);

        snprintf(key, sizeof(key), "sk-%05d", i);
        snprintf(order, sizeof(order), "so-%05d", i);
        sc_produce_intent(sc, -1, &is, ev);
        record(l, is.tenant, key, ev, SK_ORIGINAL);
        if (k < 5) { /* redelivery: the same event id, nothing new */
                is.event_id = ev;
                sc_produce_intent(sc, -1, &is, NULL);
        } else if (k < 10) { /* client retry: a new event id */
                sc_produce_intent(sc, -1, &is, ev);
                record(l, is.tenant, key, ev, SK_COPY);
        } else if (k < 14) { /* concurrent copies on two other partitions */
                int p = (int)(rand_r(r) % N_PARTITIONS);
                for (int c = 0; c < 2; c++) {
                        sc_produce_intent(sc, (p + 5 * c) % N_PARTITIONS, &is,
                                          ev);
                        record(l, is.tenant, key, ev, SK_COPY);
                }
        } else if (k < 18) { /* the key again with another amount */
                is.amount++;
                sc_produce_intent(sc, -1, &is, ev);
                record(l, is.tenant, key, ev, SK_CONFLICT);
        } else if (k < 21) { /* the key string in another tenant */
                is.tenant = "shop-t";
                sc_produce_intent(sc, -1, &is, ev);
                record(l, is.tenant, key, ev, SK_ORIGINAL);
        } else if (k < 23) { /* an invalid intent of its own */
                snprintf(key, sizeof(key), "sk-rej-%05d", i);
                is.amount = -5;
                sc_produce_intent(sc, -1, &is, ev);
                record(l, is.tenant, key, ev, SK_REJECTED);
        }
        if (i % 400 == 17 && l->n_poison < SCALE_MAX_POISON) {
                char *v = l->poison[l->n_poison++];
                snprintf(v, sizeof(l->poison[0]), "{\"poison\": %d, \"seed\"",
                         i);
                sc_produce(sc, -1, "shop-s/poison", v, strlen(v));
        }
}

/* The load thread: SCALE_INTENTS intents spread over SCALE_LOAD_MS. */
static void *load_thread(void *arg)
{
        struct load *l = arg;
        unsigned r     = l->seed;
        int64_t t0     = scale_now_ms();

        for (int i = 0; i < SCALE_INTENTS; i++) {
                int64_t due = t0 + (int64_t)i * SCALE_LOAD_MS / SCALE_INTENTS;
                int64_t now = scale_now_ms();
                if (due > now)
                        sleep_ms((int)(due - now));
                produce_one(l, i, &r);
        }
        sc_flush(l->sc);
        return NULL;
}

/* ------------------------------------------------------------------ */
/* the processes                                                        */

static bool dynamic_members(void)
{
        const char *m = getenv("SCALE_MEMBERSHIP");
        return m && !strcmp(m, "dynamic");
}

/* The membership setting of consumer n into out: static members get
 * group.instance.id (static membership) = their own name; dynamic ones
 * "none" (a worker.id would otherwise make them static). */
static bool membership(int n, char *out, size_t outsz)
{
        if (dynamic_members())
                snprintf(out, outsz, "group.instance.id=none");
        else
                snprintf(out, outsz, "group.instance.id=scale-c%d", n);
        return true;
}

struct procs {
        struct scenario *sc;
        struct sim *s;
        char strategy[96];
        struct scale_life lives[SCALE_MAX_LIVES];
        int n_lives;
        struct co cons[5]; /* 1..4 */
        int cons_life[5];
        struct co relay, recon;
};

static void consumer_start(struct procs *p, int n)
{
        char wid[64], inst[128];
        bool member_set  = membership(n, inst, sizeof(inst));
        const char *xs[] = { "consumer.batch_linger=2ms",
                             "lease.duration=2s",
                             "reconcile.interval=200ms",
                             "reconcile.review_after=10m",
                             "relay.poll_interval=100ms",
                             "gateway.max_attempts=6",
                             "gateway.deadline=4s",
                             "kafka.consumer.session.timeout.ms=6000",
                             "kafka.consumer.heartbeat.interval.ms=1000",
                             p->strategy,
                             wid,
                             member_set ? inst : NULL,
                             NULL };
        struct scale_life *lf;

        snprintf(wid, sizeof(wid), "worker.id=scale-c%d", n);
        SC_CHECK(p->n_lives < SCALE_MAX_LIVES, "lives");
        co_start(p->sc, &p->cons[n], "consume", p->s, xs, NULL);
        lf = &p->lives[p->n_lives];
        snprintf(lf->name, sizeof(lf->name), "c%d", n);
        memcpy(lf->log, p->cons[n].log, sizeof(lf->log));
        lf->start_ms    = scale_now_ms();
        lf->end_ms      = INT64_MAX;
        p->cons_life[n] = p->n_lives++;
}

static void consumer_gone(struct procs *p, int n)
{
        p->lives[p->cons_life[n]].end_ms = scale_now_ms();
}

static void others_start(struct procs *p)
{
        static const char *const relay[] = { "worker.id=scale-relay",
                                             "relay.poll_interval=100ms",
                                             NULL };
        static const char *const recon[] = {
                "worker.id=scale-reconcile", "lease.duration=2s",
                "reconcile.interval=200ms",  "reconcile.review_after=10m",
                "gateway.deadline=4s",       NULL
        };
        co_start(p->sc, &p->relay, "relay", p->s, relay, NULL);
        co_start(p->sc, &p->recon, "reconcile", p->s, recon, NULL);
}

/* Waits until t0 + at_ms. */
static void until(int64_t t0, int at_ms)
{
        int64_t now = scale_now_ms();
        if (t0 + at_ms > now)
                sleep_ms((int)(t0 + at_ms - now));
}

/* Every disruption of the run, while the load thread produces. */
static void disrupt(struct procs *p, struct scale_event *ev, int *n_ev,
                    int64_t t0)
{
        int rc;

        until(t0, AT_KILL);
        ev[*n_ev].at_ms = scale_now_ms();
        snprintf(ev[(*n_ev)++].what, sizeof(ev[0].what), "kill -9 c1");
        co_stop(&p->cons[1], SIGKILL, 5000);
        crashstats_kill();
        consumer_gone(p, 1);

        until(t0, AT_SIGTERM);
        ev[*n_ev].at_ms = scale_now_ms();
        snprintf(ev[(*n_ev)++].what, sizeof(ev[0].what), "SIGTERM c2, restart");
        rc = co_stop(&p->cons[2], SIGTERM, 60000);
        consumer_gone(p, 2);
        SC_CHECK(rc == 0, "c2: SIGTERM exit %d", rc);
        consumer_start(p, 2);

        until(t0, AT_JOIN);
        ev[*n_ev].at_ms = scale_now_ms();
        snprintf(ev[(*n_ev)++].what, sizeof(ev[0].what), "c4 joins");
        consumer_start(p, 4);
}

static void scale(const char *assignor)
{
        struct scenario sc;
        struct sim s;
        struct procs *p = calloc(1, sizeof(*p));
        struct load *l  = calloc(1, sizeof(*l));
        struct scale_event ev[8];
        int n_ev = 0, argc, rc, n_intents = 0;
        char **argv          = cases_args(&argc);
        const char *env_seed = getenv("CHARGEONCE_SCALE_SEED");
        char simopts[256];
        pthread_t th;
        int64_t t0;

        SC_CHECK(p && l, "oom");
        l->sent = calloc(SCALE_MAX_SENT, sizeof(*l->sent));
        SC_CHECK(l->sent, "oom");
        l->seed = argc >= 1  ? (unsigned)strtoul(argv[0], NULL, 10)
                  : env_seed ? (unsigned)strtoul(env_seed, NULL, 10)
                             : (unsigned)time(NULL);
        printf("scale (%s): seed %u, membership %s (reproduce: test_scale "
               "%s %u)\n",
               assignor, l->seed,
               dynamic_members() ? "dynamic" : "static (group.instance.id)",
               strstr(assignor, "cooperative") ? "cooperative" : "eager",
               l->seed);
        fflush(stdout);
        crashstats_begin(strstr(assignor, "cooperative") ? "scale_cooperative"
                                                         : "scale_eager",
                         l->seed);

        sc_init(&sc, "scale", N_PARTITIONS);
        /* the seed also draws the simulator's faults */
        snprintf(simopts, sizeof(simopts),
                 "--latency-ms 0:10 --p-drop-after-charge 0.04 "
                 "--p-500-after-charge 0.04 --p-slow 0.03 --slow-ms 300 "
                 "--seed %u",
                 l->seed);
        sim_start(&sc, &s, simopts);
        p->sc = &sc;
        p->s  = &s;
        snprintf(p->strategy, sizeof(p->strategy),
                 "kafka.partition.assignment.strategy=%s", assignor);
        l->sc = &sc;

        t0             = scale_now_ms();
        ev[n_ev].at_ms = t0;
        snprintf(ev[n_ev++].what, sizeof(ev[0].what), "c1-c3 start");
        for (int n = 1; n <= 3; n++)
                consumer_start(p, n);
        others_start(p);
        SC_CHECK(pthread_create(&th, NULL, load_thread, l) == 0, "thread");
        disrupt(p, ev, &n_ev, t0);
        pthread_join(th, NULL);
        ev[n_ev].at_ms = scale_now_ms();
        snprintf(ev[n_ev++].what, sizeof(ev[0].what), "load ends");

        sc_wait_finished(&sc, 120000);
        for (int i = 0; i < l->n_sent; i++)
                n_intents += l->sent[i].kind == SK_ORIGINAL;
        crashstats_intents(n_intents);
        crashstats_checking(); /* scale_check() stops at the first */
        scale_check(&sc, &s, l->sent, l->n_sent, l->poison, l->n_poison);
        crashstats_done(0);
        ev[n_ev].at_ms = scale_now_ms();
        snprintf(ev[n_ev++].what, sizeof(ev[0].what), "checked, SIGTERM all");
        for (int n = 2; n <= 4; n++) {
                rc = co_stop(&p->cons[n], SIGTERM, 60000);
                consumer_gone(p, n);
                SC_CHECK(rc == 0, "c%d: SIGTERM exit %d", n, rc);
        }
        SC_CHECK(co_stop(&p->relay, SIGTERM, 60000) == 0, "relay: SIGTERM");
        SC_CHECK(co_stop(&p->recon, SIGTERM, 60000) == 0, "reconcile: SIGTERM");
        scale_rebalance_report(p->lives, p->n_lives, ev, n_ev, N_PARTITIONS);
        printf("scale (%s): %d messages (%d poison), %.1f s in all; 0 double "
               "charges, one final result per intent, per-key order kept, "
               "invariants hold\n",
               assignor, l->n_sent, l->n_poison,
               (double)(scale_now_ms() - t0) / 1000.0);
        sim_stop(&s);
        sc_cleanup(&sc);
        free(l->sent);
        free(l);
        free(p);
}

static int setup(void)
{
        return testenv_have_services() ? 0 : TESTENV_SKIP;
}

int main(int argc, char **argv)
{
        static const struct test_case cases[] = {
                { "eager", NULL, scale, "range" },
                { "cooperative", NULL, scale, "cooperative-sticky" },
        };
        static const struct test_suite suite = {
                .name    = "test_scale",
                .cases   = cases,
                .n_cases = sizeof(cases) / sizeof(cases[0]),
                .setup   = setup,
        };

        return cases_main(&suite, argc, argv);
}
