/*
 * relay: the outbox relay. Publishes the rows of the outbox table to
 * topic.results (CONTRACT.md §3): message key <tenant_id>/<idempotency_key>,
 * value = the stored payload (byte-identical on every re-publish), headers
 * event_id, intent-event-id and status, through an idempotent producer
 * (enable.idempotence=true, acks=all).
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
 * Threads: relay_start() runs the relay on its own thread with its own
 * connections and producer; relay_run() on the calling thread.
 */
#ifndef CO_RELAY_H
#define CO_RELAY_H

#include <signal.h>
#include <stddef.h>
#include <stdint.h>

struct kafka_opts;
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
 * Starts a relay on its own thread (own database connections and
 * producer). cfg is borrowed and must outlive the relay (relay_stop).
 * Returns the relay (owned by the caller: relay_stop) or NULL with the
 * reason in errstr (no database connection, bad producer configuration).
 */
struct relay *relay_start(const struct config *cfg, char *errstr,
                          size_t errstr_size)
    __attribute__((warn_unused_result));

/*
 * Stops the relay: lets in-flight deliveries finish (up to
 * relay.drain_timeout), marks what was delivered, joins the thread and
 * frees r. Rows not marked are published again by the next relay. NULL is
 * ignored. Call from the thread that called relay_start.
 */
void relay_stop(struct relay *r);

/* A copy of r's counters. Any thread. */
void relay_get_stats(struct relay *r, struct relay_stats *out);

/*
 * `chargeonce relay`: runs on the calling thread until *stop becomes 1
 * (drain: finish in-flight deliveries and marks, return 0) or 2 (return 1
 * at once; what was in flight is published again later). Returns 1 also
 * when the relay cannot start (message logged).
 */
int relay_run(const struct config *cfg, volatile sig_atomic_t *stop);

/* What an operator wants published again; NULL fields match anything. */
struct relay_republish {
        const char *since;       /* RFC 3339: published_at >= since */
        const char *until;       /* RFC 3339: published_at < until */
        const char *event_id;    /* the intent's event id (or the result's) */
        const char *message_key; /* <tenant_id>/<idempotency_key> */
};

/*
 * Resets published_at of the matching rows that are still retained (in
 * batches, no long lock), so that the running relays publish them again
 * with the same event ids and payloads. *reset gets the number of rows.
 * Returns 0, or -1 with the reason in errstr. Any thread.
 */
int relay_republish(const struct config *cfg, const struct relay_republish *sel,
                    int64_t *reset, char *errstr, size_t errstr_size)
    __attribute__((warn_unused_result));

/*
 * Unparks the parked outbox row id (0: every parked row): the running
 * relays publish it at their next poll, after the later rows of its key
 * that went out without it. *unparked gets the number of rows. Returns 0,
 * or -1 with the reason in errstr. Any thread.
 */
int relay_unpark(const struct config *cfg, int64_t id, int64_t *unparked,
                 char *errstr, size_t errstr_size)
    __attribute__((warn_unused_result));

#endif
