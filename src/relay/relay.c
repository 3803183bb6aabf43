/* SPDX-License-Identifier: Apache-2.0 */
/*
 * relay: outbox -> result topic (see relay.h, docs/relay.md): the
 * lifecycle and the loop. The rounds (fetch, produce, await, mark, park)
 * are in round.c.
 *
 * The loop: rounds follow each other while there is work, up to
 * RELAY_ROUNDS_IN_FLIGHT at once: while a round awaits its reports, the
 * loop also watches the database socket, and a NOTIFY (or
 * relay.poll_interval) starts the next round at once. With nothing in
 * flight it waits for a NOTIFY or relay.poll_interval, in waits of at
 * most 100 ms. With nothing in flight it rebalances the shards (a due
 * rebalance holds new rounds back until then); it runs the retention
 * cleanup and refreshes its counters as they fall due.
 *
 * It must never: mark a row published before its delivery report
 * succeeded; produce a row while an earlier unparked row of its key is
 * unmarked; log a full idempotency key or a payload.
 */
#include "relay/relay.h"

#include "kafka/producer.h"
#include "relay/policy.h"
#include "relay/relay_int.h"
#include "store/relay_sql.h"
#include "util/log.h"
#include "util/timeutil.h"
#include "util/xalloc.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

/* Back-off after a failed round: 100 ms doubling to 10 s, jittered
 * (relay_backoff_next); an error of the topic goes straight to 10 s. */
#define RELAY_BACKOFF_MIN 100
#define RELAY_BACKOFF_MAX 10000
/* Retention cleanup: at most this many DELETEs per cleanup tick. */
#define RELAY_CLEANUP_ROUNDS 20
/* The oldest unpublished row's age is refreshed this often. */
#define RELAY_AGE_EVERY_MS 1000
/* relay_cursor is moved up this often (store_relay_advance): the fetch
 * reads every row above it, i.e. what was published since about two of
 * these. */
#define RELAY_ADVANCE_EVERY_MS 100
/* Longest wait of the idle loop: a stop is seen at least this often. */
#define RELAY_WAIT_MAX_MS 100
/* With rounds in flight and room for another: the producer's reports are
 * waited for this long, then the database socket is looked at without
 * waiting (a report is never held up by it; a NOTIFY by at most this). */
#define RELAY_WATCH_MS 2

int relay_stop_level(const struct relay *r)
{
        return r->stop ? flow_stop_level(r->stop) : FLOW_RUN;
}

static void sleep_ms(int64_t ms)
{
        struct timespec ts = { (time_t)(ms / 1000),
                               (long)(ms % 1000) * 1000000L };
        nanosleep(&ts, NULL);
}

void relay_stats_add(struct relay *r, uint64_t published, uint64_t failed,
                     uint64_t parked, uint64_t deleted, bool batch)
{
        pthread_mutex_lock(&r->mu);
        r->stats.published += published;
        metrics_add(r->o.metrics, METRIC_RESULTS_PUBLISHED, 0, published);
        r->stats.publish_failures += failed;
        r->stats.parked += parked;
        r->stats.deleted += deleted;
        if (batch)
                r->stats.batches++;
        pthread_mutex_unlock(&r->mu);
}

void relay_get_stats(struct relay *r, struct relay_stats *out)
{
        pthread_mutex_lock(&r->mu);
        *out = r->stats;
        pthread_mutex_unlock(&r->mu);
}

void relay_destroy(struct relay *r)
{
        if (!r)
                return;
        /* purges what is left: the reports of every round in flight
         * still write into its slots, freed only after */
        kproducer_destroy(r->kp, 0);
        r->kp = NULL;
        store_relay_destroy(r->db);
        relay_flights_free(r);
        free(r->ids);
        pthread_mutex_destroy(&r->mu);
        free(r);
}

/* The producer's message.max.bytes (librdkafka's limit of one message). */
static size_t producer_max_msg(struct kproducer *kp)
{
        char buf[32];
        size_t sz = sizeof(buf);
        long long v;

        if (rd_kafka_conf_get(rd_kafka_conf(kproducer_handle(kp)),
                              "message.max.bytes", buf,
                              &sz) != RD_KAFKA_CONF_OK)
                return 1000000; /* librdkafka's default */
        v = atoll(buf);
        return v > 0 ? (size_t)v : 1000000;
}

static uint32_t relay_rand(struct relay *r)
{
        uint32_t x = r->rng;

        x ^= x << 13;
        x ^= x >> 17;
        x ^= x << 5;
        return r->rng = x;
}

struct relay *relay_new(const struct relay_opts *o, char *errstr,
                        size_t errstr_size)
{
        struct relay *r = xcalloc(1, sizeof(*r));

        pthread_mutex_init(&r->mu, NULL);
        r->o            = *o;
        r->window       = o->batch_size * 4;
        r->lc           = (struct log_ctx)LOG_CTX_INIT;
        r->lc.component = "relay";
        r->lc.topic     = o->topic;
        r->ids =
            xcalloc(o->batch_size * RELAY_ROUNDS_IN_FLIGHT, sizeof(*r->ids));
        relay_flights_new(r);
        if (!(r->db = store_relay_connect(o->conninfo, o->shards, errstr,
                                          errstr_size)))
                goto fail;
        if (!(r->kp = kproducer_new(o->kafka, RELAY_CLIENT_ID, errstr,
                                    errstr_size)))
                goto fail;
        r->max_msg = producer_max_msg(r->kp);
        r->rng     = (uint32_t)time_mono_ms() ^ (uint32_t)(uintptr_t)r ^
                 (uint32_t)getpid();
        if (!r->rng)
                r->rng = 2463534242u;
        return r;
fail:
        relay_destroy(r);
        return NULL;
}

void relay_producer_renew(struct relay *r, const char *why)
{
        char err[512];
        struct kproducer *kp;

        log_warn(&r->lc, "replacing the producer: %s", why);
        kproducer_destroy(r->kp, 0); /* fails what is left: slots alive */
        r->kp = NULL;
        kp    = kproducer_new(r->o.kafka, RELAY_CLIENT_ID, err, sizeof(err));
        r->kp = kp;
        if (!kp)
                log_error(&r->lc, "new producer: %s", err);
        else
                r->max_msg = producer_max_msg(kp);
}

/* Never a busy loop: the loop sleeps until retry_at. */
int64_t relay_backoff(struct relay *r, bool longest)
{
        int64_t delay = relay_backoff_next(
            longest ? RELAY_BACKOFF_MAX : r->backoff_ms, RELAY_BACKOFF_MIN,
            RELAY_BACKOFF_MAX, relay_rand(r), &r->backoff_ms);

        r->retry_at = time_mono_ms() + delay;
        return delay;
}

static void cleanup(struct relay *r)
{
        char err[512];
        int64_t total = 0;

        for (int i = 0; i < RELAY_CLEANUP_ROUNDS; i++) {
                int64_t del = 0;
                if (relay_stop_level(r))
                        break;
                if (store_relay_cleanup(r->db, r->o.retention_ms,
                                        r->o.cleanup_batch, &del, err,
                                        sizeof(err)) != STORE_OK) {
                        log_warn(&r->lc, "%s", err);
                        break;
                }
                total += del;
                if (del < r->o.cleanup_batch)
                        break;
        }
        if (total) {
                relay_stats_add(r, 0, 0, 0, (uint64_t)total, false);
                log_debug(&r->lc, "retention: %" PRId64 " row(s) removed",
                          total);
        }
}

static void log_stats(struct relay *r)
{
        struct relay_stats s;

        relay_get_stats(r, &s);
        log_info(&r->lc,
                 "stats: published %" PRIu64 ", publish failures %" PRIu64
                 ", parked %" PRIu64 ", oldest unpublished %" PRId64
                 " ms, shards %d of %d, relays %d, removed %" PRIu64,
                 s.published, s.publish_failures, s.parked,
                 s.oldest_unpublished_age_ms, s.shards_held, r->o.shards,
                 s.relays, s.deleted);
}

/* The loop's state: its timers and what the last steps found. */
struct loop {
        struct flow_tick rebal, poll, clean, age, stats, adv;
        int64_t adv_err_logged; /* last failed advance logged (mono) */
        int64_t db_err_logged;
        int held;  /* shards held */
        bool more; /* the last round (or a NOTIFY) says there is work */
};

/* Whether both database connections are up; if not, waits a little. */
static bool db_ready(struct relay *r, struct loop *l, int64_t now)
{
        char err[512];

        if (store_relay_ensure(r->db, err, sizeof(err)) == STORE_OK)
                return true;
        if (now - l->db_err_logged > 10000) {
                log_warn(&r->lc, "%s; retrying", err);
                l->db_err_logged = now;
        }
        l->held = 0;
        sleep_ms(100);
        return false;
}

/* Takes this relay's fair share of the shards (store_relay_rebalance). */
static void rebalance(struct relay *r, struct loop *l)
{
        char err[512];
        int members = 0, before = l->held;

        if (store_relay_rebalance(r->db, &l->held, &members, err,
                                  sizeof(err)) != STORE_OK) {
                log_warn(&r->lc, "%s", err);
                l->held = store_relay_held(r->db);
        } else if (l->held != before) {
                log_info(&r->lc, "holding %d of %d shard(s) (%d relay(s))",
                         l->held, r->o.shards, members);
                l->more = true;
        }
        pthread_mutex_lock(&r->mu);
        r->stats.shards_held = l->held;
        if (members)
                r->stats.relays = members;
        pthread_mutex_unlock(&r->mu);
}

/*
 * Starts a round when one is due and may start, beside a round in flight
 * too. Shards change hands only with nothing in flight: a due rebalance
 * holds new rounds back until the rounds in flight are finished.
 */
static void maybe_publish(struct relay *r, struct loop *l, int64_t now)
{
        int n;

        if (l->held <= 0 || now < r->retry_at ||
            (!l->more && now < l->poll.next_ms) || !relay_round_may_start(r))
                return;
        if (relay_rounds_busy(r) && flow_tick_wait(&l->rebal, now, 1) == 0)
                return;
        n = relay_round_start(r);
        if (n < 0) {
                (void)relay_backoff(r, false);
                l->more = false;
        } else {
                /* a full batch: more rows are waiting now; otherwise the
                 * next round is for a NOTIFY, the poll, or the marks of a
                 * round finished (they free the next row of their keys) */
                l->more = (size_t)n >= r->o.batch_size;
        }
        l->poll.next_ms = time_mono_ms() + r->o.poll_ms;
}

/*
 * With rounds in flight: serves their reports and finishes what it can;
 * while another round could start, watches the database socket too (a
 * NOTIFY starts it at the next turn). False when stopping gave the
 * rounds up.
 */
static bool serve(struct relay *r, struct loop *l)
{
        bool watch = l->held > 0 && relay_round_may_start(r);

        if (relay_rounds_serve(r, watch ? RELAY_WATCH_MS : 10) > 0)
                l->more = true;
        if (r->abandoned)
                return false;
        if (watch && store_relay_wait(r->db, 0) == 1)
                l->more = true;
        return true;
}

/* Cleanup, the oldest row's age and the stats line, when due. */
static void housekeeping(struct relay *r, struct loop *l, int64_t now)
{
        char err[512];
        int64_t age = 0;

        if (flow_tick_due(&l->adv, now)) {
                int64_t through;

                if (store_relay_advance(r->db, &through, err, sizeof(err)) !=
                        STORE_OK &&
                    now - l->adv_err_logged >= 10000) {
                        log_warn(&r->lc, "%s", err);
                        l->adv_err_logged = now;
                }
                l->adv.next_ms = time_mono_ms() + RELAY_ADVANCE_EVERY_MS;
        }
        if (flow_tick_due(&l->clean, now)) {
                cleanup(r);
                l->clean.next_ms = time_mono_ms() + r->o.cleanup_ms;
        }
        if (flow_tick_due(&l->age, now) &&
            store_relay_oldest_age(r->db, &age, err, sizeof(err)) == STORE_OK) {
                pthread_mutex_lock(&r->mu);
                r->stats.oldest_unpublished_age_ms = age;
                pthread_mutex_unlock(&r->mu);
        }
        if (flow_tick_due(&l->stats, now))
                log_stats(r);
}

/* Idle: a NOTIFY, the poll fallback, a timer or the retry wakes us. */
static void idle_wait(struct relay *r, struct loop *l, int64_t now)
{
        int64_t wait = flow_tick_wait(&l->poll, now, RELAY_WAIT_MAX_MS);

        wait = flow_tick_wait(&l->rebal, now, wait);
        wait = flow_tick_wait(&l->clean, now, wait);
        if (r->retry_at > now && r->retry_at - now < wait)
                wait = r->retry_at - now;
        if (store_relay_wait(r->db, (int)wait) == 1)
                l->more = true;
}

/*
 * With nothing in flight: the stop flag, the database, the rebalance.
 * Returns 1 (go on), 0 (the database is down: loop again), -1 (drained:
 * return 0), -2 (a second signal: return FLOW_EXIT_NOW).
 */
static int between_rounds(struct relay *r, struct loop *l, int64_t now)
{
        enum flow_step step = flow_drain_step(&r->drain, relay_stop_level(r),
                                              now, r->o.drain_ms, 0);

        if (step == FLOW_STEP_EXIT)
                return -2;
        if (step != FLOW_STEP_RUN)
                return -1; /* nothing in flight: drained */
        if (!db_ready(r, l, now))
                return 0;
        if (flow_tick_due(&l->rebal, now))
                rebalance(r, l);
        return 1;
}

int relay_run(struct relay *r, const atomic_int *stop)
{
        int64_t now   = time_mono_ms();
        struct loop l = {
                .rebal = { r->o.rebalance_ms, 0 },
                .poll  = { r->o.poll_ms, 0 },
                .clean = { r->o.cleanup_ms, now + r->o.cleanup_ms },
                .age   = { RELAY_AGE_EVERY_MS, 0 },
                .adv   = { RELAY_ADVANCE_EVERY_MS, 0 },
                .stats = { r->o.stats_ms, now + r->o.stats_ms },
                .more  = true,
        };
        int rc = 0;

        r->stop      = stop;
        r->drain     = (struct flow_drain){ 0 };
        r->abandoned = false;
        r->loop_id   = metrics_loop_register(r->o.metrics, "relay");
        log_info(&r->lc,
                 "relaying the outbox to %s: %d shard(s), batches of %zu, "
                 "poll every %" PRId64 " ms",
                 r->o.topic, r->o.shards, r->o.batch_size, r->o.poll_ms);
        for (;;) {
                metrics_loop_beat(r->o.metrics, r->loop_id);
                now = time_mono_ms();
                if (!relay_rounds_busy(r)) {
                        int step = between_rounds(r, &l, now);
                        if (step == 0)
                                continue;
                        if (step < 0) {
                                rc = step == -2 ? FLOW_EXIT_NOW : 0;
                                break;
                        }
                }
                maybe_publish(r, &l, now);
                if (relay_rounds_busy(r) && !serve(r, &l)) {
                        /* gave up the rounds: a second signal (exit now,
                         * as docs/relay.md says) or the drain's time */
                        if (flow_stop_level(stop) >= FLOW_EXIT)
                                rc = FLOW_EXIT_NOW;
                        break;
                }
                if (r->fatal) {
                        rc = 1;
                        break;
                }
                now = time_mono_ms();
                housekeeping(r, &l, now);
                if (relay_rounds_busy(r))
                        continue;
                if (r->kp)
                        kproducer_poll(r->kp, 0);
                /* more work only counts with a shard to do it in: a
                 * relay holding none waits (it used to spin) */
                if (l.more && l.held > 0 && now >= r->retry_at)
                        continue;
                idle_wait(r, &l, now);
        }
        metrics_loop_unregister(r->o.metrics, r->loop_id);
        r->loop_id = -1;
        if (rc == 0)
                log_stats(r);
        r->stop = NULL;
        return rc;
}

int relay_republish(const char *conninfo, const struct relay_republish *sel,
                    int64_t *reset, char *errstr, size_t errstr_size)
{
        struct store_republish q = { sel->since, sel->until, sel->event_id,
                                     sel->message_key };

        return store_relay_republish(conninfo, &q, reset, errstr,
                                     errstr_size) == STORE_OK
                   ? 0
                   : -1;
}

int relay_unpark(const char *conninfo, int64_t id, int64_t *unparked,
                 char *errstr, size_t errstr_size)
{
        return store_relay_unpark(conninfo, id, unparked, errstr,
                                  errstr_size) == STORE_OK
                   ? 0
                   : -1;
}
