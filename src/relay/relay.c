/*
 * relay: outbox -> result topic (see relay.h, docs/relay.md).
 *
 * One round: fetch the first unpublished row of each key of the held
 * shards (at most relay.batch_size), produce them all, wait for every
 * delivery report, mark the acknowledged ones published in one UPDATE.
 * A row whose delivery failed stays unpublished and is first in line for
 * its key in the next round, so nothing later of its key goes out before
 * it. Rounds follow each other while there is work; otherwise the relay
 * waits for a NOTIFY or relay.poll_interval.
 *
 * A row that can never be produced is parked (0006) instead of being
 * retried forever in front of its key: one over the producer's
 * message.max.bytes before it is sent, one whose delivery failed with an
 * error of the row (relay/policy.c) after it failed again produced alone
 * (the broker refuses a whole batch, so the other rows of that batch get
 * the same error and must not be parked with it). Errors of the topic or
 * the broker are never parked: the round backs off (bounded exponential,
 * jittered) and every row waits.
 *
 * It must never: mark a row published before its delivery report
 * succeeded; produce a row while an earlier unparked row of its key is
 * unmarked; park a row on an error it did not get alone; log a full
 * idempotency key or a payload.
 */
#include "relay/relay.h"

#include "kafka/producer.h"
#include "relay/policy.h"
#include "store/relay_sql.h"
#include "util/config.h"
#include "util/failpoint.h"
#include "util/log.h"
#include "util/timeutil.h"

#include <inttypes.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define RELAY_CLIENT_ID "chargeonce-relay"
/* Longest wait for the reports of one round when not stopping. librdkafka
 * reports every message within message.timeout.ms (default 5 min); past
 * this the producer is replaced, which fails what is left. */
#define RELAY_ROUND_MAX_MS (20 * 60 * 1000)
/* Back-off after a failed round: 100 ms doubling to 10 s, jittered
 * (relay_backoff_next); an error of the topic goes straight to 10 s. */
#define RELAY_BACKOFF_MIN 100
#define RELAY_BACKOFF_MAX 10000
/* At most this many rows produced alone per round (each costs a round
 * trip); the others are tried again in the next round. */
#define RELAY_ISOLATE_MAX 50
/* Retention cleanup: at most this many DELETEs per cleanup tick. */
#define RELAY_CLEANUP_ROUNDS 20

enum slot_state {
        SLOT_UNSENT = 0,
        SLOT_PENDING,
        SLOT_OK,
        SLOT_FAILED,
        SLOT_PARKED, /* parked: not to be marked or retried */
};

/* One produced row, the opaque of its delivery report. */
struct slot {
        struct relay *r;
        int64_t id;
        enum slot_state state;
        rd_kafka_resp_err_t err;
        int attempts; /* produce attempts of this round */
};

struct relay {
        const struct config *cfg; /* borrowed */
        char *topic;              /* owned */
        int nshards;
        size_t batch_size, window;
        int64_t poll_ms, rebalance_ms, drain_ms, cleanup_ms, retention_ms;
        int64_t stats_ms;
        int cleanup_batch;

        struct store_relay *db; /* owned */
        struct kproducer *kp;   /* owned */
        struct slot *slots;     /* batch_size, owned; alive while kp is */
        int64_t *ids;           /* batch_size, scratch */
        size_t pending;         /* delivery reports still due */

        size_t max_msg;     /* the producer's message.max.bytes */
        int64_t backoff_ms; /* nominal, before jitter; 0 after a success */
        int64_t retry_at;
        uint32_t rng;   /* xorshift32 state for the jitter */
        bool abandoned; /* a round left reports due (stopping) */

        volatile sig_atomic_t *ext_stop; /* relay_run's flag, or NULL */
        atomic_int own_stop;             /* relay_stop's flag */

        pthread_t thread;
        pthread_mutex_t mu; /* guards stats */
        struct relay_stats stats;
        struct log_ctx lc;
};

static int stop_level(struct relay *r)
{
        int s = atomic_load(&r->own_stop);
        if (r->ext_stop && *r->ext_stop > s)
                s = (int)*r->ext_stop;
        return s;
}

static void sleep_ms(int64_t ms)
{
        struct timespec ts = { (time_t)(ms / 1000),
                               (long)(ms % 1000) * 1000000L };
        nanosleep(&ts, NULL);
}

/* @locality: the relay thread, from kproducer_poll()/kproducer_destroy() */
static void on_delivery(void *opaque, rd_kafka_resp_err_t err)
{
        struct slot *s = opaque;

        s->state = err ? SLOT_FAILED : SLOT_OK;
        s->err   = err;
        s->r->pending--;
}

static void stats_add(struct relay *r, uint64_t published, uint64_t failed,
                      uint64_t deleted, bool batch)
{
        pthread_mutex_lock(&r->mu);
        r->stats.published += published;
        r->stats.publish_failures += failed;
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

static void relay_free(struct relay *r, int flush_ms)
{
        if (!r)
                return;
        /* purges what is left: the reports still write into r->slots */
        kproducer_destroy(r->kp, flush_ms);
        r->kp = NULL;
        store_relay_destroy(r->db);
        free(r->slots);
        free(r->ids);
        free(r->topic);
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

static struct relay *relay_new(const struct config *cfg, char *errstr,
                               size_t errstr_size)
{
        struct relay *r = calloc(1, sizeof(*r));

        if (!r)
                abort();
        pthread_mutex_init(&r->mu, NULL);
        atomic_init(&r->own_stop, 0);
        r->cfg           = cfg;
        r->lc            = (struct log_ctx)LOG_CTX_INIT;
        r->lc.component  = "relay";
        r->topic         = strdup(config_str(cfg, "topic.results"));
        r->nshards       = (int)config_int(cfg, "relay.shards");
        r->batch_size    = (size_t)config_int(cfg, "relay.batch_size");
        r->window        = r->batch_size * 4;
        r->poll_ms       = config_ms(cfg, "relay.poll_interval");
        r->rebalance_ms  = config_ms(cfg, "relay.rebalance_interval");
        r->drain_ms      = config_ms(cfg, "relay.drain_timeout");
        r->cleanup_ms    = config_ms(cfg, "relay.cleanup_interval");
        r->retention_ms  = config_ms(cfg, "relay.retention");
        r->stats_ms      = config_ms(cfg, "relay.stats_interval");
        r->cleanup_batch = (int)config_int(cfg, "relay.cleanup_batch");
        r->lc.topic      = r->topic;
        r->slots         = calloc(r->batch_size, sizeof(*r->slots));
        r->ids           = calloc(r->batch_size, sizeof(*r->ids));
        if (!r->topic || !r->slots || !r->ids)
                abort();
        r->stats.shards_held = 0;
        if (!(r->db = store_relay_connect(config_str(cfg, "db.conninfo"),
                                          r->nshards, errstr, errstr_size)))
                goto fail;
        if (!(r->kp = kproducer_new(cfg, RELAY_CLIENT_ID, errstr, errstr_size)))
                goto fail;
        r->max_msg = producer_max_msg(r->kp);
        r->rng     = (uint32_t)time_mono_ms() ^ (uint32_t)(uintptr_t)r ^
                 (uint32_t)getpid();
        if (!r->rng)
                r->rng = 2463534242u;
        return r;
fail:
        relay_free(r, 0);
        return NULL;
}

/* Replaces a producer that hit a fatal error (or never reported). */
static void producer_renew(struct relay *r, const char *why)
{
        char err[512];
        struct kproducer *kp;

        log_warn(&r->lc, "replacing the producer: %s", why);
        kproducer_destroy(r->kp, 0); /* fails what is left: slots alive */
        r->kp = NULL;
        kp    = kproducer_new(r->cfg, RELAY_CLIENT_ID, err, sizeof(err));
        r->kp = kp;
        if (!kp)
                log_error(&r->lc, "new producer: %s", err);
        else
                r->max_msg = producer_max_msg(kp);
}

/*
 * Waits before the next round: bounded exponential with jitter, or the
 * longest interval at once (longest: an error every row gets alike).
 * Never a busy loop: the loop sleeps until retry_at.
 */
static int64_t backoff(struct relay *r, bool longest)
{
        int64_t delay = relay_backoff_next(
            longest ? RELAY_BACKOFF_MAX : r->backoff_ms, RELAY_BACKOFF_MIN,
            RELAY_BACKOFF_MAX, relay_rand(r), &r->backoff_ms);

        r->retry_at = time_mono_ms() + delay;
        return delay;
}

/* The size librdkafka would give the row's message (policy.h). */
static size_t row_wire_size(const struct store_relay_row *row)
{
        return relay_wire_size(row->message_key_len, row->payload_len, 3,
                               strlen("event_id") + strlen(row->event_id) +
                                   strlen("intent-event-id") +
                                   strlen(row->intent_event_id) +
                                   strlen("status") + strlen(row->status));
}

/*
 * Parks row (one statement), logs it at error with its id and reason
 * (never the key or the payload) and counts it. Returns true if the row
 * is parked now (by this call or by another relay meanwhile is the same
 * for the round: it must not be marked).
 */
static bool park_row(struct relay *r, const struct store_relay_row *row,
                     const char *reason, int attempts)
{
        char err[512];
        int64_t n = 0;

        if (store_relay_park(r->db, row->id, reason, attempts, &n, err,
                             sizeof(err)) != STORE_OK) {
                log_warn(&r->lc,
                         "%s (outbox row %" PRId64 " not parked: tried "
                         "again later)",
                         err, row->id);
                return false;
        }
        if (n == 1) {
                log_error(&r->lc,
                          "outbox row %" PRId64 " (result event %s, status "
                          "%s) parked: %s. Later rows of its key are "
                          "published without it; `chargeonce audit` lists "
                          "it, `chargeonce relay --unpark %" PRId64
                          "` publishes it once the cause is fixed",
                          row->id, row->event_id, row->status, reason, row->id);
                pthread_mutex_lock(&r->mu);
                r->stats.parked++;
                pthread_mutex_unlock(&r->mu);
        }
        return true;
}

/*
 * Queues row i. Returns 0 (queued), or why it could not be: the
 * producer's refusal (kproducer_last_error), __QUEUE_FULL when the queue
 * stayed full, or __STATE when stopping. Nothing after it goes.
 */
static rd_kafka_resp_err_t
produce_one(struct relay *r, const struct store_relay_row *row, struct slot *s)
{
        struct kheader h[3] = {
                { "event_id", row->event_id, strlen(row->event_id) },
                { "intent-event-id", row->intent_event_id,
                  strlen(row->intent_event_id) },
                { "status", row->status, strlen(row->status) },
        };
        rd_kafka_resp_err_t err = RD_KAFKA_RESP_ERR__QUEUE_FULL;

        /* queue full: serve reports and try again, a bounded number of
         * times (about 5 s) */
        for (int tries = 0; tries < 500; tries++) {
                if (kproducer_send(r->kp, r->topic, row->message_key,
                                   row->message_key_len, row->payload,
                                   row->payload_len, h, 3, on_delivery,
                                   s) == 0) {
                        s->state = SLOT_PENDING;
                        s->attempts++;
                        r->pending++;
                        return RD_KAFKA_RESP_ERR_NO_ERROR;
                }
                /* anything but a full queue is a refusal that retrying
                 * does not change (kafka/producer.c logged it) */
                err = kproducer_last_error(r->kp);
                if (err != RD_KAFKA_RESP_ERR__QUEUE_FULL)
                        return err ? err : RD_KAFKA_RESP_ERR__FAIL;
                if (stop_level(r) >= 2)
                        return RD_KAFKA_RESP_ERR__STATE;
                kproducer_poll(r->kp, 10);
        }
        return err;
}

/*
 * Serves delivery reports until none is due. Returns 0 when all are in,
 * 1 when stopping made the round give up (r->abandoned), 2 when they were
 * overdue (the producer was replaced, which failed them).
 */
static int await_reports(struct relay *r)
{
        int64_t start = time_mono_ms(), drain_deadline = 0;

        while (r->pending > 0) {
                int st = stop_level(r);
                kproducer_poll(r->kp, 10);
                if (st >= 2) {
                        r->abandoned = true;
                        return 1;
                }
                if (st == 1 && !drain_deadline)
                        drain_deadline = time_mono_ms() + r->drain_ms;
                if (drain_deadline && time_mono_ms() > drain_deadline) {
                        log_warn(&r->lc,
                                 "stopping: %zu delivery report(s) not in "
                                 "after %" PRId64 " ms; those rows are "
                                 "published again later",
                                 r->pending, r->drain_ms);
                        r->abandoned = true;
                        return 1;
                }
                if (time_mono_ms() - start > RELAY_ROUND_MAX_MS) {
                        producer_renew(r, "delivery reports overdue");
                        return 2;
                }
        }
        return 0;
}

/*
 * The rows of the round whose delivery failed with an error of the row:
 * the broker refuses a whole batch (one partition's messages of one
 * request) for one row over the topic's max.message.bytes, so each is
 * produced again alone, nothing else in flight. Delivered now: marked
 * with the others. Refused again alone: parked. Otherwise it stays failed
 * with its new error. Call only when no report is due.
 */
static void isolate_failed(struct relay *r, const struct store_relay_batch *b)
{
        size_t done = 0;

        for (size_t i = 0; i < b->n; i++) {
                struct slot *s = &r->slots[i];
                char reason[256];
                rd_kafka_resp_err_t first;

                if (s->state != SLOT_FAILED ||
                    relay_classify_err(s->err) != RELAY_ERR_ROW)
                        continue;
                if (done++ >= RELAY_ISOLATE_MAX || stop_level(r) || !r->kp ||
                    r->pending)
                        break;
                first = s->err;
                if (produce_one(r, &b->rows[i], s))
                        break;
                if (await_reports(r) != 0)
                        break;
                if (s->state != SLOT_FAILED ||
                    relay_classify_err(s->err) != RELAY_ERR_ROW)
                        continue;
                snprintf(reason, sizeof(reason),
                         "%s (%s) for a message of about %zu bytes produced "
                         "alone (first %s in a batch); the topic's "
                         "max.message.bytes or the broker's limit is lower",
                         rd_kafka_err2name(s->err), rd_kafka_err2str(s->err),
                         row_wire_size(&b->rows[i]), rd_kafka_err2name(first));
                if (park_row(r, &b->rows[i], reason, s->attempts))
                        s->state = SLOT_PARKED;
        }
}

/* How bad a failed slot is for the whole round: producer > topic >
 * transient > row. */
static int class_rank(enum relay_err_class c)
{
        switch (c) {
        case RELAY_ERR_PRODUCER:
                return 3;
        case RELAY_ERR_TOPIC:
                return 2;
        case RELAY_ERR_TRANSIENT:
                return 1;
        case RELAY_ERR_ROW:
        default:
                return 0;
        }
}

/*
 * One round. Returns the number of rows fetched (> 0: there may be more),
 * or -1 when the database failed (the caller backs off).
 */
static int publish_round(struct relay *r)
{
        struct store_relay_batch b = { 0 };
        char err[512];
        size_t n_ok = 0, n_failed = 0, n_sent = 0, n_parked = 0, nf = 0;
        rd_kafka_resp_err_t worst_err = RD_KAFKA_RESP_ERR_NO_ERROR;
        enum relay_err_class worst    = RELAY_ERR_ROW;
        rd_kafka_resp_err_t perr, refuse_err = RD_KAFKA_RESP_ERR_NO_ERROR;
        bool refused   = false, progress;
        int64_t marked = 0;
        int rc;

        if (!r->kp) {
                producer_renew(r, "no producer");
                if (!r->kp)
                        return -1;
        }
        if (store_relay_fetch(r->db, r->batch_size, r->window, &b, err,
                              sizeof(err)) != STORE_OK) {
                log_warn(&r->lc, "%s", err);
                return -1;
        }
        if (b.n == 0)
                return 0;

        for (size_t i = 0; i < b.n; i++)
                r->slots[i] = (struct slot){ r, b.rows[i].id, SLOT_UNSENT,
                                             RD_KAFKA_RESP_ERR_NO_ERROR, 0 };
        for (size_t i = 0; i < b.n; i++) {
                size_t wire = row_wire_size(&b.rows[i]);

                if (FAILPOINT("relay.before_produce") < 0)
                        break;
                if (wire > r->max_msg) {
                        /* librdkafka would refuse it at every attempt */
                        char reason[256];
                        snprintf(reason, sizeof(reason),
                                 "message of about %zu bytes (payload %zu) "
                                 "over the producer's message.max.bytes "
                                 "%zu: never produced",
                                 wire, b.rows[i].payload_len, r->max_msg);
                        if (park_row(r, &b.rows[i], reason, 0))
                                r->slots[i].state = SLOT_PARKED;
                        continue;
                }
                perr = produce_one(r, &b.rows[i], &r->slots[i]);
                if (perr && relay_classify_err(perr) == RELAY_ERR_ROW) {
                        /* refused for the row itself at produce time */
                        char reason[256];
                        snprintf(reason, sizeof(reason),
                                 "%s (%s) from the producer for a message of "
                                 "about %zu bytes: never produced",
                                 rd_kafka_err2name(perr),
                                 rd_kafka_err2str(perr), wire);
                        if (park_row(r, &b.rows[i], reason, 0))
                                r->slots[i].state = SLOT_PARKED;
                        continue;
                }
                if (perr) {
                        refused    = perr != RD_KAFKA_RESP_ERR__STATE;
                        refuse_err = perr;
                        break;
                }
                n_sent++;
        }
        (void)FAILPOINT("relay.after_produce");

        /* every report of the round, or give up when stopping */
        if (await_reports(r) == 1 && stop_level(r) >= 2) {
                store_relay_batch_clear(&b);
                return (int)n_sent;
        }
        if (!r->abandoned && r->pending == 0)
                isolate_failed(r, &b);

        for (size_t i = 0; i < b.n; i++) {
                struct slot *s = &r->slots[i];
                if (s->state == SLOT_OK) {
                        n_ok++;
                } else if (s->state == SLOT_PARKED) {
                        n_parked++;
                } else if (s->state == SLOT_FAILED) {
                        enum relay_err_class c = relay_classify_err(s->err);
                        if (!n_failed || class_rank(c) > class_rank(worst)) {
                                worst     = c;
                                worst_err = s->err;
                        }
                        n_failed++;
                }
        }
        /* attempts that failed (rows still unpublished, and rows that
         * failed in the batch and were delivered alone) count before the
         * mark adds the successful one */
        for (size_t i = 0; i < b.n; i++) {
                struct slot *s = &r->slots[i];
                int failed     = s->attempts - (s->state == SLOT_OK);
                if (s->state != SLOT_PARKED && failed > 0)
                        r->ids[nf++] = s->id;
        }
        if (nf && store_relay_note_failed(r->db, r->ids, nf, err,
                                          sizeof(err)) != STORE_OK)
                log_warn(&r->lc, "%s", err);
        n_ok = 0;
        for (size_t i = 0; i < b.n; i++)
                if (r->slots[i].state == SLOT_OK)
                        r->ids[n_ok++] = r->slots[i].id;
        if (n_ok > 0) {
                if (FAILPOINT("relay.before_mark") < 0) {
                        log_warn(&r->lc, "failpoint: marks skipped");
                        rc = STORE_ERR;
                } else {
                        rc = store_relay_mark(r->db, r->ids, n_ok, &marked, err,
                                              sizeof(err));
                        if (rc != STORE_OK)
                                log_warn(&r->lc,
                                         "%s (%zu delivered row(s) stay "
                                         "unmarked: published again later)",
                                         err, n_ok);
                }
                if (rc != STORE_OK) {
                        store_relay_batch_clear(&b);
                        stats_add(r, 0, n_failed, 0, true);
                        return -1;
                }
        }
        progress = n_ok > 0 || n_parked > 0;
        if (n_failed > 0 || refused || (n_sent + n_parked < b.n && !progress)) {
                bool longest = worst == RELAY_ERR_TOPIC || refused;
                int64_t delay;

                /* rows with an error of their own that were not produced
                 * alone yet (RELAY_ISOLATE_MAX) do not slow the relay
                 * down while others go out */
                if (worst == RELAY_ERR_ROW && !refused && progress) {
                        r->backoff_ms = 0;
                        delay         = 0;
                } else {
                        delay = backoff(r, longest);
                }
                if (refused)
                        log_error(&r->lc,
                                  "a message could not be queued: %s (%s); "
                                  "nothing is parked, every row waits (%zu "
                                  "of %zu), next try in %" PRId64 " ms",
                                  rd_kafka_err2name(refuse_err),
                                  rd_kafka_err2str(refuse_err),
                                  b.n - n_sent - n_parked, b.n, delay);
                else if (n_failed && worst == RELAY_ERR_TOPIC)
                        log_error(&r->lc,
                                  "%zu of %zu row(s) not delivered: %s "
                                  "(%s), an error of the topic or of the "
                                  "credentials that every row gets; nothing "
                                  "is parked, every row waits, next try in "
                                  "%" PRId64 " ms",
                                  n_failed, b.n, rd_kafka_err2name(worst_err),
                                  rd_kafka_err2str(worst_err), delay);
                else if (n_failed)
                        log_warn(&r->lc,
                                 "%zu of %zu row(s) not delivered (%s, %s); "
                                 "their keys wait for them, next try in "
                                 "%" PRId64 " ms",
                                 n_failed, b.n, rd_kafka_err2name(worst_err),
                                 relay_err_class_name(worst), delay);
                else if (!r->abandoned)
                        log_warn(&r->lc,
                                 "%zu of %zu row(s) could not be queued; "
                                 "next try in %" PRId64 " ms",
                                 b.n - n_sent - n_parked, b.n, delay);
                if (r->kp) {
                        char fe[256];
                        if (rd_kafka_fatal_error(kproducer_handle(r->kp), fe,
                                                 sizeof(fe)))
                                producer_renew(r, fe);
                        else if (n_failed && worst == RELAY_ERR_PRODUCER)
                                producer_renew(r, rd_kafka_err2str(worst_err));
                        else if (refused &&
                                 refuse_err != RD_KAFKA_RESP_ERR__QUEUE_FULL)
                                /* a refusal with nothing queued sticks to
                                 * the producer's view of the topic (an
                                 * unknown topic is looked up again only
                                 * every topic.metadata.refresh.interval.ms,
                                 * 5 min): a new producer looks at once */
                                producer_renew(r, "it refused a message");
                }
        } else {
                r->backoff_ms = 0;
        }
        stats_add(r, (uint64_t)marked, n_failed, 0, true);
        log_debug(&r->lc,
                  "round: %zu row(s), %zu delivered, %" PRId64
                  " marked, %zu failed, %zu parked",
                  b.n, n_ok, marked, n_failed, n_parked);
        nf = b.n;
        store_relay_batch_clear(&b);
        return (int)nf;
}

static void cleanup(struct relay *r)
{
        char err[512];
        int64_t total = 0;

        for (int i = 0; i < RELAY_CLEANUP_ROUNDS; i++) {
                int64_t del = 0;
                if (stop_level(r))
                        break;
                if (store_relay_cleanup(r->db, r->retention_ms,
                                        r->cleanup_batch, &del, err,
                                        sizeof(err)) != STORE_OK) {
                        log_warn(&r->lc, "%s", err);
                        break;
                }
                total += del;
                if (del < r->cleanup_batch)
                        break;
        }
        if (total) {
                stats_add(r, 0, 0, (uint64_t)total, false);
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
                 s.oldest_unpublished_age_ms, s.shards_held, r->nshards,
                 s.relays, s.deleted);
}

static int64_t min64(int64_t a, int64_t b)
{
        return a < b ? a : b;
}

/*
 * The relay's loop, on its thread. Returns 0 after a drain, 1 on a
 * second stop signal.
 */
static int relay_loop(struct relay *r)
{
        char err[512];
        int64_t now        = time_mono_ms();
        int64_t next_rebal = now, next_poll = now, next_age = now;
        int64_t next_clean    = now + r->cleanup_ms;
        int64_t next_stats    = now + r->stats_ms;
        int64_t db_err_logged = 0;
        bool more             = true;
        int held              = 0;

        log_info(&r->lc,
                 "relaying the outbox to %s: %d shard(s), batches of %zu, "
                 "poll every %" PRId64 " ms",
                 r->topic, r->nshards, r->batch_size, r->poll_ms);
        for (;;) {
                int st = stop_level(r);
                int64_t wait;

                if (st >= 2)
                        return 1;
                if (st)
                        break;
                now = time_mono_ms();
                if (store_relay_ensure(r->db, err, sizeof(err)) != STORE_OK) {
                        if (now - db_err_logged > 10000) {
                                log_warn(&r->lc, "%s; retrying", err);
                                db_err_logged = now;
                        }
                        held = 0;
                        sleep_ms(100);
                        continue;
                }
                if (now >= next_rebal) {
                        int members = 0, before = held;
                        if (store_relay_rebalance(r->db, &held, &members, err,
                                                  sizeof(err)) != STORE_OK) {
                                log_warn(&r->lc, "%s", err);
                                held = store_relay_held(r->db);
                        } else if (held != before) {
                                log_info(&r->lc,
                                         "holding %d of %d shard(s) (%d "
                                         "relay(s))",
                                         held, r->nshards, members);
                                more = true;
                        }
                        pthread_mutex_lock(&r->mu);
                        r->stats.shards_held = held;
                        if (members)
                                r->stats.relays = members;
                        pthread_mutex_unlock(&r->mu);
                        next_rebal = now + r->rebalance_ms;
                }
                if (held > 0 && now >= r->retry_at &&
                    (more || now >= next_poll)) {
                        int n = publish_round(r);
                        if (r->abandoned)
                                break;
                        if (n < 0) {
                                (void)backoff(r, false);
                                more = false;
                        } else {
                                more = n > 0;
                        }
                        next_poll = time_mono_ms() + r->poll_ms;
                }
                now = time_mono_ms();
                if (now >= next_clean) {
                        cleanup(r);
                        next_clean = time_mono_ms() + r->cleanup_ms;
                }
                if (now >= next_age) {
                        int64_t age = 0;
                        if (store_relay_oldest_age(r->db, &age, err,
                                                   sizeof(err)) == STORE_OK) {
                                pthread_mutex_lock(&r->mu);
                                r->stats.oldest_unpublished_age_ms = age;
                                pthread_mutex_unlock(&r->mu);
                        }
                        next_age = now + 1000;
                }
                if (now >= next_stats) {
                        log_stats(r);
                        next_stats = now + r->stats_ms;
                }
                if (r->kp)
                        kproducer_poll(r->kp, 0);
                if (more && now >= r->retry_at)
                        continue;
                /* idle: a NOTIFY, the poll fallback or a timer wakes us */
                wait = min64(next_poll, next_rebal);
                wait = min64(wait, next_clean);
                if (r->retry_at > now)
                        wait = min64(wait, r->retry_at);
                wait = min64(wait - now, 100);
                if (wait < 0)
                        wait = 0;
                if (store_relay_wait(r->db, (int)wait) == 1)
                        more = true;
        }
        log_stats(r);
        return 0;
}

static void *relay_thread(void *arg)
{
        struct relay *r = arg;
        (void)relay_loop(r);
        return NULL;
}

struct relay *relay_start(const struct config *cfg, char *errstr,
                          size_t errstr_size)
{
        struct relay *r = relay_new(cfg, errstr, errstr_size);
        int e;

        if (!r)
                return NULL;
        if ((e = pthread_create(&r->thread, NULL, relay_thread, r)) != 0) {
                snprintf(errstr, errstr_size, "relay thread: %s", strerror(e));
                relay_free(r, 0);
                return NULL;
        }
        return r;
}

void relay_stop(struct relay *r)
{
        if (!r)
                return;
        atomic_store(&r->own_stop, 1);
        pthread_join(r->thread, NULL);
        relay_free(r, 0);
}

int relay_run(const struct config *cfg, volatile sig_atomic_t *stop)
{
        char err[1024];
        struct log_ctx lc = LOG_CTX_INIT;
        struct relay *r;
        int rc;

        lc.component = "relay";
        if (!(r = relay_new(cfg, err, sizeof(err)))) {
                log_error(&lc, "%s", err);
                return 1;
        }
        r->ext_stop = stop;
        rc          = relay_loop(r);
        if (rc == 0)
                log_info(&lc, "stopped");
        relay_free(r, 0);
        return rc;
}

int relay_republish(const struct config *cfg, const struct relay_republish *sel,
                    int64_t *reset, char *errstr, size_t errstr_size)
{
        struct store_republish q = { sel->since, sel->until, sel->event_id,
                                     sel->message_key };

        return store_relay_republish(config_str(cfg, "db.conninfo"), &q, reset,
                                     errstr, errstr_size) == STORE_OK
                   ? 0
                   : -1;
}

int relay_unpark(const struct config *cfg, int64_t id, int64_t *unparked,
                 char *errstr, size_t errstr_size)
{
        return store_relay_unpark(config_str(cfg, "db.conninfo"), id, unparked,
                                  errstr, errstr_size) == STORE_OK
                   ? 0
                   : -1;
}
