/* SPDX-License-Identifier: Apache-2.0 */
/*
 * relay: the outbox relay. Publishes the rows of the outbox table to
 * topic.results (docs/contract.md §3.1): message key
 * <tenant_id>/<idempotency_key>, value = the stored payload (byte-identical on
 * every re-publish), headers event_id, intent-event-id and status, through an
 * idempotent producer (enable.idempotence=true, acks=all).
 *
 * Guarantees (docs/relay.md has the reasoning):
 *   - a row is marked published only after its delivery report succeeded;
 *     a crash anywhere re-publishes at most the unmarked rows, with the
 *     same event_id and payload;
 *   - per message key, a row is produced only when every earlier row (by
 *     outbox id) of that key is marked published, i.e. was acknowledged
 *     by the broker before, or is parked. So the FIRST occurrences of a
 *     key's event ids on the topic are in outbox id order, across
 *     retries, crashes and any number of relays; a downstream that drops
 *     event ids it has seen gets every published result once, in order;
 *   - a row that can never be produced (over the producer's or the
 *     topic's size limit, refused as a record) is parked (0006): logged,
 *     counted, listed by `chargeonce audit`, skipped; the later rows of
 *     its key go on. A parked row is a hole an operator looks at; once
 *     unparked (relay_unpark) it is published after them. Errors of the
 *     topic, the broker or the network park nothing: the relay backs
 *     off (bounded, jittered) and every row waits;
 *   - shards of keys are shared out between relays with advisory locks so
 *     that relays do not duplicate each other's work (not for order).
 *
 * It must never: mark a row published before its delivery report; produce
 * a row while an earlier unparked row of its key is unmarked; park a row
 * on an error that every row would get; log a full idempotency key or a
 * payload.
 *
 * Lifecycle (as every engine's, cmd/engine.h): relay_new() connects and
 * makes the producer, relay_run() loops on the calling thread until its
 * stop flag asks, relay_destroy() frees. The relay starts no thread of
 * its own: cmd/ runs it on one when it shares a process (consume).
 */
#ifndef CO_RELAY_H
#define CO_RELAY_H

#include "util/compiler.h"

#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

struct kafka_opts;
struct metrics;
struct relay;

/* The relay's options, filled by cmd/ from the configuration (relay.*,
 * topic.results, db.conninfo, kafka.*). Strings and kafka are borrowed
 * for the relay's life. */
struct relay_opts {
        const char *conninfo;
        const char *topic; /* topic.results */
        const struct kafka_opts *kafka;
        int shards;
        size_t batch_size;
        int64_t poll_ms, rebalance_ms, drain_ms, cleanup_ms, retention_ms;
        int64_t stats_ms;
        int cleanup_batch;
        /* relay.wait_for_standbys: a round's rows are produced only once
         * this many physical standbys have flushed the WAL up to the
         * primary's insert position read after the fetch, so nothing is
         * published that a failover to one of them would lose (0: no
         * wait) */
        int wait_standbys;
        struct metrics *metrics; /* results published; may be NULL */
};

/* Counters of one relay since it started, for logs and metrics. */
struct relay_stats {
        uint64_t published;        /* rows marked published by this relay */
        uint64_t publish_failures; /* rows whose delivery failed (retried) */
        uint64_t parked;           /* rows parked by this relay (0006) */
        uint64_t batches;          /* publish rounds with at least one row */
        uint64_t deleted;          /* rows removed by the retention cleanup */
        /* age of the oldest unpublished row of the whole table (all
         * shards), refreshed every second; 0 when none. */
        int64_t oldest_unpublished_age_ms;
        int shards_held; /* of relay.shards */
        int relays;      /* live relays on this database, this one included */
};

/*
 * A relay with its own database connections and producer. o is borrowed
 * (its strings and kafka too) and must outlive the relay. Returns the
 * relay (owned by the caller: relay_destroy) or NULL with the reason in
 * errstr (no database connection, bad producer configuration).
 */
struct relay *relay_new(const struct relay_opts *o, char *errstr,
                        size_t errstr_size) CO_MUST_CHECK;

/*
 * Relays on the calling thread until *stop (flow/flow.h) asks.
 * FLOW_DRAIN: the rounds in flight finish (their deliveries get up to
 * relay.drain_timeout), what was delivered is marked, returns 0.
 * FLOW_EXIT: returns FLOW_EXIT_NOW at once (what was in flight is
 * published again later). 1 on a fatal error. One thread at a time.
 */
int relay_run(struct relay *r, const atomic_int *stop) CO_MUST_CHECK;

/*
 * Frees r: the producer is closed without waiting (rows not marked are
 * published again by the next relay). NULL is ignored. Not while
 * relay_run() runs.
 */
void relay_destroy(struct relay *r);

/* A copy of r's counters. Any thread. */
void relay_get_stats(struct relay *r, struct relay_stats *out);

/* What an operator wants published again; NULL fields match anything. */
struct relay_republish {
        const char *since;       /* RFC 3339: published at or after since */
        const char *until;       /* RFC 3339: published before until */
        const char *event_id;    /* the intent's event id (or the result's) */
        const char *message_key; /* <tenant_id>/<idempotency_key> */
};

/*
 * Opens again the matching published rows that are still retained (in
 * batches, no long lock), so that the running relays publish them again
 * with the same event ids and payloads. *reset gets the number of rows.
 * Returns 0, or -1 with the reason in errstr. Any thread.
 */
int relay_republish(const char *conninfo, const struct relay_republish *sel,
                    int64_t *reset, char *errstr,
                    size_t errstr_size) CO_MUST_CHECK;

/*
 * Unparks the parked outbox row id (0: every parked row): the running
 * relays publish it at their next poll, after the later rows of its key
 * that went out without it. *unparked gets the number of rows. Returns 0,
 * or -1 with the reason in errstr. Any thread.
 */
int relay_unpark(const char *conninfo, int64_t id, int64_t *unparked,
                 char *errstr, size_t errstr_size) CO_MUST_CHECK;

#endif
