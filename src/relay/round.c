/* SPDX-License-Identifier: Apache-2.0 */
/*
 * relay/round: the publish rounds (see relay.h, docs/relay.md).
 *
 * A round: fetch the first unpublished row of each key of the held
 * shards (at most relay.batch_size), produce them all, wait for every
 * delivery report, mark the acknowledged ones published in one UPDATE. A
 * row whose delivery failed stays unpublished and is first in line for
 * its key in a later round, so nothing later of its key goes out before
 * it.
 *
 * Up to RELAY_ROUNDS_IN_FLIGHT rounds overlap: while one awaits its
 * reports, the next is fetched and produced. Its fetch skips every key
 * whose first unpublished row is in flight, so a key has at most one row
 * in flight. A round is finished once its own reports are in, oldest
 * first; a round with a failure only once no other round has reports due
 * (its rows with an error of their own are produced alone, and its
 * producer may be replaced), and no new round starts meanwhile.
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
 * unmarked (in flight in another round included); park a row on an
 * error it did not get alone; free a round's slots while the producer
 * may still report into them; log a full idempotency key or a payload.
 */
#include "kafka/producer.h"
#include "relay/policy.h"
#include "relay/relay_int.h"
#include "store/relay_sql.h"
#include "util/failpoint.h"
#include "util/log.h"
#include "util/timeutil.h"
#include "util/xalloc.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* Longest wait for the reports of one round when not stopping. librdkafka
 * reports every message within message.timeout.ms (default 5 min); past
 * this the producer is replaced, which fails what is left. */
#define RELAY_ROUND_MAX_MS (20 * 60 * 1000)
/* At most this many rows produced alone per round (each costs a round
 * trip); the others are tried again in the next round. */
#define RELAY_ISOLATE_MAX 50
/* Failpoint relay.hold_reports (test builds): a round it fails counts
 * its reports as not in for this long after its produce, while the relay
 * goes on (a slow broker's acknowledgement, for one round). */
#define RELAY_HOLD_MS 5000

/* What one round did with its b.n rows. */
struct round {
        size_t n_sent;   /* queued to the producer */
        size_t n_ok;     /* delivered */
        size_t n_failed; /* delivery failed: retried in a later round */
        size_t n_parked;
        bool refused; /* the producer refused a message: nothing after it */
        rd_kafka_resp_err_t refuse_err;
        enum relay_err_class worst; /* of the failed rows */
        rd_kafka_resp_err_t worst_err;
        int64_t marked;
};

/* One round from its fetch until it is finished. */
struct relay_flight {
        struct relay *r;
        struct store_relay_batch b; /* its rows */
        struct slot *slots;         /* batch_size; alive while r->kp is */
        size_t pending;             /* its delivery reports still due */
        size_t failed;              /* its delivery reports that failed */
        struct round t;
        uint64_t seq; /* start order: oldest first */
        int64_t started_ms;
        int64_t held_until; /* relay.hold_reports (test builds) */
        bool busy;          /* started, not finished */
};

/* @locality: the relay thread, from kproducer_poll()/kproducer_destroy() */
static void on_delivery(void *opaque, rd_kafka_resp_err_t err)
{
        struct slot *s         = opaque;
        struct relay_flight *f = s->f;

        s->state = err ? SLOT_FAILED : SLOT_OK;
        s->err   = err;
        if (err)
                f->failed++;
        f->pending--;
        f->r->pending--;
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
                relay_stats_add(r, 0, 0, 1, 0, false);
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
                if (kproducer_send(r->kp, r->o.topic, row->message_key,
                                   row->message_key_len, row->payload,
                                   row->payload_len, h, 3, on_delivery,
                                   s) == 0) {
                        s->state = SLOT_PENDING;
                        s->attempts++;
                        s->f->pending++;
                        r->pending++;
                        return RD_KAFKA_RESP_ERR_NO_ERROR;
                }
                /* anything but a full queue is a refusal that retrying
                 * does not change (kafka/producer.c logged it) */
                err = kproducer_last_error(r->kp);
                if (err != RD_KAFKA_RESP_ERR__QUEUE_FULL)
                        return err ? err : RD_KAFKA_RESP_ERR__FAIL;
                if (relay_stop_level(r) >= FLOW_EXIT)
                        return RD_KAFKA_RESP_ERR__STATE;
                kproducer_poll(r->kp, 10);
        }
        return err;
}

/*
 * One turn of the wait for delivery reports: serves them (up to
 * poll_ms), then looks at the stop flag and at the time since since_ms.
 * Returns 0 (go on), 1 when stopping made the rounds give up
 * (r->abandoned: a second signal, or the drain's relay.drain_timeout
 * passed), 2 when reports were overdue (the producer was replaced, which
 * failed every one in flight).
 */
static int serve_turn(struct relay *r, int poll_ms, int64_t since_ms)
{
        enum flow_step step;

        if (r->kp)
                kproducer_poll(r->kp, poll_ms);
        step = flow_drain_step(&r->drain, relay_stop_level(r), time_mono_ms(),
                               r->o.drain_ms, r->pending);
        if (step == FLOW_STEP_EXIT) {
                r->abandoned = true;
                return 1;
        }
        if (step == FLOW_STEP_DONE && r->pending > 0) {
                log_warn(&r->lc,
                         "stopping: %zu delivery report(s) not in after "
                         "%" PRId64 " ms; those rows are published again "
                         "later",
                         r->pending, r->o.drain_ms);
                r->abandoned = true;
                return 1;
        }
        if (r->pending > 0 && time_mono_ms() - since_ms > RELAY_ROUND_MAX_MS) {
                relay_producer_renew(r, "delivery reports overdue");
                return 2;
        }
        return 0;
}

/* Serves delivery reports until none is due (serve_turn's answers). */
static int await_reports(struct relay *r)
{
        int64_t start = time_mono_ms();

        while (r->pending > 0) {
                int rc = serve_turn(r, 10, start);
                if (rc)
                        return rc;
        }
        return 0;
}

/*
 * The rows of round f whose delivery failed with an error of the row:
 * the broker refuses a whole batch (one partition's messages of one
 * request) for one row over the topic's max.message.bytes, so each is
 * produced again alone, nothing else in flight. Delivered now: marked
 * with the others. Refused again alone: parked. Otherwise it stays failed
 * with its new error. Call only when no report of any round is due.
 */
static void isolate_failed(struct relay *r, struct relay_flight *f)
{
        const struct store_relay_batch *b = &f->b;
        size_t done                       = 0;

        for (size_t i = 0; i < b->n; i++) {
                struct slot *s = &f->slots[i];
                char reason[256];
                rd_kafka_resp_err_t first;

                if (s->state != SLOT_FAILED ||
                    relay_classify_err(s->err) != RELAY_ERR_ROW)
                        continue;
                if (done++ >= RELAY_ISOLATE_MAX || relay_stop_level(r) ||
                    !r->kp || r->pending)
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
 * Produces the rows of b in order; one that can never be produced
 * (over message.max.bytes, refused for itself, a compact row whose
 * message cannot be built) is parked instead. Stops
 * at the first refusal of another kind (t->refused): nothing after it
 * goes, so no key overtakes its own earlier row.
 */
static void produce_rows(struct relay *r, struct relay_flight *f)
{
        const struct store_relay_batch *b = &f->b;
        struct round *t                   = &f->t;
        char reason[256];

        for (size_t i = 0; i < b->n; i++) {
                const struct store_relay_row *row = &b->rows[i];
                size_t wire                       = row_wire_size(row);
                rd_kafka_resp_err_t perr;

                if (FAILPOINT("relay.before_produce") < 0)
                        break;
                if (row->unbuildable[0]) {
                        /* a compact row whose message cannot be built
                         * (store_relay_fetch): the same at every fetch */
                        if (park_row(r, row, row->unbuildable, 0))
                                f->slots[i].state = SLOT_PARKED;
                        continue;
                }
                if (wire > r->max_msg) {
                        /* librdkafka would refuse it at every attempt */
                        snprintf(reason, sizeof(reason),
                                 "message of about %zu bytes (payload %zu) "
                                 "over the producer's message.max.bytes "
                                 "%zu: never produced",
                                 wire, row->payload_len, r->max_msg);
                        if (park_row(r, row, reason, 0))
                                f->slots[i].state = SLOT_PARKED;
                        continue;
                }
                perr = produce_one(r, row, &f->slots[i]);
                if (perr && relay_classify_err(perr) == RELAY_ERR_ROW) {
                        /* refused for the row itself at produce time */
                        snprintf(reason, sizeof(reason),
                                 "%s (%s) from the producer for a message of "
                                 "about %zu bytes: never produced",
                                 rd_kafka_err2name(perr),
                                 rd_kafka_err2str(perr), wire);
                        if (park_row(r, row, reason, 0))
                                f->slots[i].state = SLOT_PARKED;
                        continue;
                }
                if (perr) {
                        t->refused    = perr != RD_KAFKA_RESP_ERR__STATE;
                        t->refuse_err = perr;
                        break;
                }
                t->n_sent++;
        }
}

/* Counts the slots' final states and the worst delivery error. */
static void tally(const struct relay_flight *f, struct round *t)
{
        for (size_t i = 0; i < f->b.n; i++) {
                const struct slot *s = &f->slots[i];

                if (s->state == SLOT_OK) {
                        t->n_ok++;
                } else if (s->state == SLOT_PARKED) {
                        t->n_parked++;
                } else if (s->state == SLOT_FAILED) {
                        enum relay_err_class c = relay_classify_err(s->err);
                        if (!t->n_failed ||
                            class_rank(c) > class_rank(t->worst)) {
                                t->worst     = c;
                                t->worst_err = s->err;
                        }
                        t->n_failed++;
                }
        }
}

/*
 * Notes the failed attempts, then marks the delivered rows published.
 * Returns 0, or -1 when the mark failed (the delivered rows stay
 * unmarked and are published again later).
 */
static int mark_delivered(struct relay *r, const struct relay_flight *f,
                          struct round *t)
{
        size_t n = f->b.n, nf = 0, n_ok = 0;
        char err[512];
        int rc;

        /* attempts that failed (rows still unpublished, and rows that
         * failed in the batch and were delivered alone) count before the
         * mark adds the successful one */
        for (size_t i = 0; i < n; i++) {
                const struct slot *s = &f->slots[i];
                int failed           = s->attempts - (s->state == SLOT_OK);
                if (s->state != SLOT_PARKED && failed > 0)
                        r->ids[nf++] = s->id;
        }
        if (nf && store_relay_note_failed(r->db, r->ids, nf, err,
                                          sizeof(err)) != STORE_OK)
                log_warn(&r->lc, "%s", err);
        for (size_t i = 0; i < n; i++)
                if (f->slots[i].state == SLOT_OK)
                        r->ids[n_ok++] = f->slots[i].id;
        if (n_ok == 0)
                return 0;
        if (FAILPOINT("relay.before_mark") < 0) {
                log_warn(&r->lc, "failpoint: marks skipped");
                return -1;
        }
        rc =
            store_relay_mark(r->db, r->ids, n_ok, &t->marked, err, sizeof(err));
        if (rc != STORE_OK) {
                log_warn(&r->lc,
                         "%s (%zu delivered row(s) stay unmarked: "
                         "published again later)",
                         err, n_ok);
                return -1;
        }
        return 0;
}

/* The log line of a round that did not get everything out. */
static void log_shortfall(struct relay *r, size_t n, const struct round *t,
                          int64_t delay)
{
        size_t unsent = n - t->n_sent - t->n_parked;

        if (t->refused)
                log_error(&r->lc,
                          "a message could not be queued: %s (%s); "
                          "nothing is parked, every row waits (%zu "
                          "of %zu), next try in %" PRId64 " ms",
                          rd_kafka_err2name(t->refuse_err),
                          rd_kafka_err2str(t->refuse_err), unsent, n, delay);
        else if (t->n_failed && t->worst == RELAY_ERR_TOPIC)
                log_error(&r->lc,
                          "%zu of %zu row(s) not delivered: %s "
                          "(%s), an error of the topic or of the "
                          "credentials that every row gets; nothing "
                          "is parked, every row waits, next try in "
                          "%" PRId64 " ms",
                          t->n_failed, n, rd_kafka_err2name(t->worst_err),
                          rd_kafka_err2str(t->worst_err), delay);
        else if (t->n_failed)
                log_warn(&r->lc,
                         "%zu of %zu row(s) not delivered (%s, %s); "
                         "their keys wait for them, next try in "
                         "%" PRId64 " ms",
                         t->n_failed, n, rd_kafka_err2name(t->worst_err),
                         relay_err_class_name(t->worst), delay);
        else if (!r->abandoned)
                log_warn(&r->lc,
                         "%zu of %zu row(s) could not be queued; "
                         "next try in %" PRId64 " ms",
                         unsent, n, delay);
}

/*
 * After a round that did not get everything out: the back-off (none when
 * only rows with an error of their own wait while others went out), the
 * log line, and a new producer when the old one is broken.
 */
static void after_shortfall(struct relay *r, size_t n, const struct round *t)
{
        bool progress = t->n_ok > 0 || t->n_parked > 0;
        int64_t delay;
        char fe[256];

        /* rows with an error of their own that were not produced alone
         * yet (RELAY_ISOLATE_MAX) do not slow the relay down while others
         * go out */
        if (t->worst == RELAY_ERR_ROW && !t->refused && progress) {
                r->backoff_ms = 0;
                delay         = 0;
        } else {
                delay =
                    relay_backoff(r, t->worst == RELAY_ERR_TOPIC || t->refused);
        }
        log_shortfall(r, n, t, delay);
        if (!r->kp)
                return;
        if (rd_kafka_fatal_error(kproducer_handle(r->kp), fe, sizeof(fe)))
                relay_producer_renew(r, fe);
        else if (t->n_failed && t->worst == RELAY_ERR_PRODUCER)
                relay_producer_renew(r, rd_kafka_err2str(t->worst_err));
        else if (t->refused && t->refuse_err != RD_KAFKA_RESP_ERR__QUEUE_FULL)
                /* a refusal with nothing queued sticks to the producer's
                 * view of the topic (an unknown topic is looked up again
                 * only every topic.metadata.refresh.interval.ms, 5 min): a
                 * new producer looks at once */
                relay_producer_renew(r, "it refused a message");
}

/* How long a round waits for the standbys before it gives the rows back
 * (they are fetched again in the next round). */
#define RELAY_STANDBY_WAIT_MS 2000

/*
 * relay.wait_for_standbys: true once that many standbys have flushed the
 * WAL up to the primary's insert position read now, after the fetch (at
 * or past the commit of every row fetched), so that a failover to one of
 * them keeps every result this round publishes; false after
 * RELAY_STANDBY_WAIT_MS, a stop or a database error (logged; the rows
 * wait). Polls pg_stat_replication, 1 ms doubling to 50 ms apart.
 */
static bool standbys_have(struct relay *r)
{
        char lsn[32], err[512];
        int flushed = 0, hidden = 0, rc;
        int64_t start = time_mono_ms(), sleep_ms = 1, now = start;

        rc =
            store_relay_wal_position(r->db, lsn, sizeof(lsn), err, sizeof(err));
        for (;;) {
                if (rc == STORE_OK)
                        rc = store_relay_standbys_flushed(
                            r->db, lsn, &flushed, &hidden, err, sizeof(err));
                if (rc != STORE_OK) {
                        log_warn(&r->lc, "%s: results wait", err);
                        return false;
                }
                if (flushed >= r->o.wait_standbys)
                        return true;
                now = time_mono_ms();
                if (now - start >= RELAY_STANDBY_WAIT_MS ||
                    relay_stop_level(r) >= FLOW_DRAIN)
                        break;
                {
                        struct timespec ts = { 0, (long)sleep_ms * 1000000L };

                        nanosleep(&ts, NULL);
                }
                sleep_ms = sleep_ms * 2 > 50 ? 50 : sleep_ms * 2;
        }
        if (now - r->standby_warned_ms >= 10000 || !r->standby_warned_ms) {
                r->standby_warned_ms = now;
                if (hidden > 0)
                        log_error(&r->lc,
                                  "results wait: %d standby(s) stream from "
                                  "this primary, but the database role may "
                                  "not read how far (grant it pg_monitor); "
                                  "relay.wait_for_standbys = %d",
                                  hidden, r->o.wait_standbys);
                else
                        log_warn(&r->lc,
                                 "results wait: %d of the %d standby(s) "
                                 "relay.wait_for_standbys asks for have "
                                 "flushed the WAL up to %s",
                                 flushed, r->o.wait_standbys, lsn);
        }
        return false;
}

void relay_flights_new(struct relay *r)
{
        r->flights = xcalloc(RELAY_ROUNDS_IN_FLIGHT, sizeof(*r->flights));
        for (int k = 0; k < RELAY_ROUNDS_IN_FLIGHT; k++) {
                r->flights[k].r = r;
                r->flights[k].slots =
                    xcalloc(r->o.batch_size, sizeof(*r->flights[k].slots));
        }
}

void relay_flights_free(struct relay *r)
{
        if (!r->flights)
                return;
        for (int k = 0; k < RELAY_ROUNDS_IN_FLIGHT; k++) {
                store_relay_batch_clear(&r->flights[k].b);
                free(r->flights[k].slots);
        }
        free(r->flights);
        r->flights = NULL;
}

size_t relay_rounds_busy(const struct relay *r)
{
        size_t n = 0;

        for (int k = 0; k < RELAY_ROUNDS_IN_FLIGHT; k++)
                n += r->flights[k].busy;
        return n;
}

/* A failed report or a refusal: the round is finished alone. */
static bool troubled(const struct relay_flight *f)
{
        return f->failed > 0 || f->t.refused;
}

/* A slot for a new round: not busy, and no report of an abandoned round
 * can still land in it. */
static struct relay_flight *free_flight(struct relay *r)
{
        for (int k = 0; k < RELAY_ROUNDS_IN_FLIGHT; k++)
                if (!r->flights[k].busy && r->flights[k].pending == 0)
                        return &r->flights[k];
        return NULL;
}

bool relay_round_may_start(const struct relay *r)
{
        bool slot = false;

        if (r->abandoned || relay_stop_level(r) != FLOW_RUN)
                return false;
        for (int k = 0; k < RELAY_ROUNDS_IN_FLIGHT; k++) {
                const struct relay_flight *f = &r->flights[k];

                if (f->busy && troubled(f))
                        return false;
                if (!f->busy && f->pending == 0)
                        slot = true;
        }
        return slot;
}

/* The ids of every row of the rounds in flight into ids: the fetch must
 * not offer their keys. */
static size_t in_flight_ids(const struct relay *r, int64_t *ids)
{
        size_t n = 0;

        for (int k = 0; k < RELAY_ROUNDS_IN_FLIGHT; k++) {
                const struct relay_flight *f = &r->flights[k];

                for (size_t i = 0; f->busy && i < f->b.n; i++)
                        ids[n++] = f->b.rows[i].id;
        }
        return n;
}

/* Fetches f's rows, skipping the keys in flight. STORE_OK or -1. */
static int fetch(struct relay *r, struct relay_flight *f)
{
        size_t nskip = in_flight_ids(r, r->ids);
        char err[512];
        int rc;

        rc = store_relay_fetch(r->db, r->o.batch_size, r->window, r->ids, nskip,
                               &f->b, err, sizeof(err));
        if (rc == STORE_ERR_SCHEMA) {
                store_relay_schema_explain(r->db, err, sizeof(err));
                log_error(&r->lc,
                          "the database cannot run this binary's statements "
                          "(%s); stopping",
                          err);
                r->fatal = true;
                return -1;
        }
        if (rc != STORE_OK) {
                log_warn(&r->lc, "%s", err);
                return -1;
        }
        return STORE_OK;
}

/* Produces f's fetched rows: f is in flight from now on. */
static void launch(struct relay *r, struct relay_flight *f)
{
        for (size_t i = 0; i < f->b.n; i++)
                f->slots[i] = (struct slot){ f, f->b.rows[i].id, SLOT_UNSENT,
                                             RD_KAFKA_RESP_ERR_NO_ERROR, 0 };
        f->t          = (struct round){ .worst = RELAY_ERR_ROW };
        f->failed     = 0;
        f->seq        = ++r->rounds;
        f->started_ms = time_mono_ms();
        f->held_until = 0;
        f->busy       = true;
        produce_rows(r, f);
        /* after the step: only kill and delay mean anything */
        CO_IGNORE(FAILPOINT("relay.after_produce"));
        if (f->t.n_sent && FAILPOINT("relay.hold_reports") < 0)
                f->held_until = time_mono_ms() + RELAY_HOLD_MS;
}

int relay_round_start(struct relay *r)
{
        struct relay_flight *f = free_flight(r);

        if (!f)
                return 0;
        if (!r->kp) {
                relay_producer_renew(r, "no producer");
                if (!r->kp)
                        return -1;
        }
        if (fetch(r, f) != STORE_OK)
                return -1;
        if (f->b.n == 0)
                return 0;
        if (r->o.wait_standbys > 0 && !standbys_have(r)) {
                store_relay_batch_clear(&f->b);
                return 0;
        }
        launch(r, f);
        return (int)f->b.n;
}

/*
 * Whether round f may be finished now: its own reports are in (or the
 * rounds were given up), and, if it had a failure, no other round has
 * reports due (isolate_failed produces alone; after_shortfall may
 * replace the producer, which fails whatever is in flight).
 */
static bool finishable(const struct relay *r, const struct relay_flight *f)
{
        if (!f->busy)
                return false;
        if (r->abandoned)
                return true;
        if (f->pending > 0)
                return false;
        if (troubled(f))
                return r->pending == 0;
        return !f->held_until || time_mono_ms() >= f->held_until ||
               relay_stop_level(r) != FLOW_RUN;
}

/* Isolates, tallies, marks, backs off and counts round f, then frees its
 * slot. Returns its rows (0 when the mark failed). */
static size_t finish(struct relay *r, struct relay_flight *f)
{
        struct round *t = &f->t;
        size_t n        = f->b.n;

        if (!r->abandoned && r->pending == 0)
                isolate_failed(r, f);
        tally(f, t);
        if (mark_delivered(r, f, t) < 0) {
                relay_stats_add(r, 0, t->n_failed, 0, 0, true);
                (void)relay_backoff(r, false);
                n = 0;
        } else {
                if (t->n_failed > 0 || t->refused ||
                    (t->n_sent + t->n_parked < n && t->n_ok == 0 &&
                     t->n_parked == 0))
                        after_shortfall(r, n, t);
                else
                        r->backoff_ms = 0;
                relay_stats_add(r, (uint64_t)t->marked, t->n_failed, 0, 0,
                                true);
                log_debug(&r->lc,
                          "round: %zu row(s), %zu delivered, %" PRId64
                          " marked, %zu failed, %zu parked",
                          n, t->n_ok, t->marked, t->n_failed, t->n_parked);
        }
        store_relay_batch_clear(&f->b);
        f->busy = false;
        return n;
}

/* The oldest round in flight that may be finished now, or NULL. */
static struct relay_flight *next_to_finish(struct relay *r)
{
        struct relay_flight *best = NULL;

        for (int k = 0; k < RELAY_ROUNDS_IN_FLIGHT; k++) {
                struct relay_flight *f = &r->flights[k];

                if (finishable(r, f) && (!best || f->seq < best->seq))
                        best = f;
        }
        return best;
}

/* When the oldest round with reports due was produced (now if none). */
static int64_t oldest_due_ms(const struct relay *r)
{
        int64_t t = time_mono_ms();

        for (int k = 0; k < RELAY_ROUNDS_IN_FLIGHT; k++) {
                const struct relay_flight *f = &r->flights[k];

                if (f->busy && f->pending > 0 && f->started_ms < t)
                        t = f->started_ms;
        }
        return t;
}

size_t relay_rounds_serve(struct relay *r, int poll_ms)
{
        struct relay_flight *f;
        size_t rows = 0;

        /* a second signal: nothing more is marked */
        if (serve_turn(r, poll_ms, oldest_due_ms(r)) == 1 &&
            relay_stop_level(r) >= FLOW_EXIT)
                return 0;
        while ((f = next_to_finish(r)) != NULL)
                rows += finish(r, f);
        return rows;
}
