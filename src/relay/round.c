/* SPDX-License-Identifier: Apache-2.0 */
/*
 * relay/round: one publish round (see relay.h, docs/relay.md).
 *
 * Fetch the first unpublished row of each key of the held shards (at most
 * relay.batch_size), produce them all, wait for every delivery report,
 * mark the acknowledged ones published in one UPDATE. A row whose
 * delivery failed stays unpublished and is first in line for its key in
 * the next round, so nothing later of its key goes out before it.
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
#include "kafka/producer.h"
#include "relay/policy.h"
#include "relay/relay_int.h"
#include "store/relay_sql.h"
#include "util/failpoint.h"
#include "util/log.h"
#include "util/timeutil.h"

#include <inttypes.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

/* Longest wait for the reports of one round when not stopping. librdkafka
 * reports every message within message.timeout.ms (default 5 min); past
 * this the producer is replaced, which fails what is left. */
#define RELAY_ROUND_MAX_MS (20 * 60 * 1000)
/* At most this many rows produced alone per round (each costs a round
 * trip); the others are tried again in the next round. */
#define RELAY_ISOLATE_MAX 50

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

/* @locality: the relay thread, from kproducer_poll()/kproducer_destroy() */
static void on_delivery(void *opaque, rd_kafka_resp_err_t err)
{
        struct slot *s = opaque;

        s->state = err ? SLOT_FAILED : SLOT_OK;
        s->err   = err;
        s->r->pending--;
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
 * Serves delivery reports until none is due. Returns 0 when all are in,
 * 1 when stopping made the round give up (r->abandoned: a second signal,
 * or the drain's relay.drain_timeout passed), 2 when they were overdue
 * (the producer was replaced, which failed them).
 */
static int await_reports(struct relay *r)
{
        int64_t start = time_mono_ms();

        while (r->pending > 0) {
                int level = relay_stop_level(r);
                enum flow_step step;

                kproducer_poll(r->kp, 10);
                step = flow_drain_step(&r->drain, level, time_mono_ms(),
                                       r->o.drain_ms, r->pending);
                if (step == FLOW_STEP_EXIT) {
                        r->abandoned = true;
                        return 1;
                }
                if (step == FLOW_STEP_DONE && r->pending > 0) {
                        log_warn(&r->lc,
                                 "stopping: %zu delivery report(s) not in "
                                 "after %" PRId64 " ms; those rows are "
                                 "published again later",
                                 r->pending, r->o.drain_ms);
                        r->abandoned = true;
                        return 1;
                }
                if (time_mono_ms() - start > RELAY_ROUND_MAX_MS) {
                        relay_producer_renew(r, "delivery reports overdue");
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
 * (over message.max.bytes, refused for itself) is parked instead. Stops
 * at the first refusal of another kind (t->refused): nothing after it
 * goes, so no key overtakes its own earlier row.
 */
static void produce_rows(struct relay *r, const struct store_relay_batch *b,
                         struct round *t)
{
        char reason[256];

        for (size_t i = 0; i < b->n; i++) {
                const struct store_relay_row *row = &b->rows[i];
                size_t wire                       = row_wire_size(row);
                rd_kafka_resp_err_t perr;

                if (FAILPOINT("relay.before_produce") < 0)
                        break;
                if (wire > r->max_msg) {
                        /* librdkafka would refuse it at every attempt */
                        snprintf(reason, sizeof(reason),
                                 "message of about %zu bytes (payload %zu) "
                                 "over the producer's message.max.bytes "
                                 "%zu: never produced",
                                 wire, row->payload_len, r->max_msg);
                        if (park_row(r, row, reason, 0))
                                r->slots[i].state = SLOT_PARKED;
                        continue;
                }
                perr = produce_one(r, row, &r->slots[i]);
                if (perr && relay_classify_err(perr) == RELAY_ERR_ROW) {
                        /* refused for the row itself at produce time */
                        snprintf(reason, sizeof(reason),
                                 "%s (%s) from the producer for a message of "
                                 "about %zu bytes: never produced",
                                 rd_kafka_err2name(perr),
                                 rd_kafka_err2str(perr), wire);
                        if (park_row(r, row, reason, 0))
                                r->slots[i].state = SLOT_PARKED;
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
static void tally(const struct relay *r, size_t n, struct round *t)
{
        for (size_t i = 0; i < n; i++) {
                const struct slot *s = &r->slots[i];

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
static int mark_delivered(struct relay *r, size_t n, struct round *t)
{
        char err[512];
        size_t nf = 0, n_ok = 0;
        int rc;

        /* attempts that failed (rows still unpublished, and rows that
         * failed in the batch and were delivered alone) count before the
         * mark adds the successful one */
        for (size_t i = 0; i < n; i++) {
                const struct slot *s = &r->slots[i];
                int failed           = s->attempts - (s->state == SLOT_OK);
                if (s->state != SLOT_PARKED && failed > 0)
                        r->ids[nf++] = s->id;
        }
        if (nf && store_relay_note_failed(r->db, r->ids, nf, err,
                                          sizeof(err)) != STORE_OK)
                log_warn(&r->lc, "%s", err);
        for (size_t i = 0; i < n; i++)
                if (r->slots[i].state == SLOT_OK)
                        r->ids[n_ok++] = r->slots[i].id;
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

int relay_round(struct relay *r)
{
        struct store_relay_batch b = { 0 };
        struct round t             = { 0 };
        char err[512];
        size_t n;
        int rc;

        if (!r->kp) {
                relay_producer_renew(r, "no producer");
                if (!r->kp)
                        return -1;
        }
        rc = store_relay_fetch(r->db, r->o.batch_size, r->window, NULL, 0, &b,
                               err, sizeof(err));
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
        if ((n = b.n) == 0)
                return 0;
        if (r->o.wait_standbys > 0 && !standbys_have(r)) {
                store_relay_batch_clear(&b);
                return 0;
        }
        for (size_t i = 0; i < n; i++)
                r->slots[i] = (struct slot){ r, b.rows[i].id, SLOT_UNSENT,
                                             RD_KAFKA_RESP_ERR_NO_ERROR, 0 };
        t.worst = RELAY_ERR_ROW;
        produce_rows(r, &b, &t);
        /* after the step: only kill and delay mean anything */
        CO_IGNORE(FAILPOINT("relay.after_produce"));

        /* every report of the round, or give up on a second signal */
        if (await_reports(r) == 1 && relay_stop_level(r) >= FLOW_EXIT) {
                store_relay_batch_clear(&b);
                return (int)t.n_sent;
        }
        if (!r->abandoned && r->pending == 0)
                isolate_failed(r, &b);
        tally(r, n, &t);
        if (mark_delivered(r, n, &t) < 0) {
                store_relay_batch_clear(&b);
                relay_stats_add(r, 0, t.n_failed, 0, 0, true);
                return -1;
        }
        if (t.n_failed > 0 || t.refused ||
            (t.n_sent + t.n_parked < n && t.n_ok == 0 && t.n_parked == 0))
                after_shortfall(r, n, &t);
        else
                r->backoff_ms = 0;
        relay_stats_add(r, (uint64_t)t.marked, t.n_failed, 0, 0, true);
        log_debug(&r->lc,
                  "round: %zu row(s), %zu delivered, %" PRId64
                  " marked, %zu failed, %zu parked",
                  n, t.n_ok, t.marked, t.n_failed, t.n_parked);
        store_relay_batch_clear(&b);
        return (int)n;
}
