/* SPDX-License-Identifier: Apache-2.0 */
/*
 * relay_int: what the relay's two files share (relay.c: lifecycle and
 * loop; round.c: one publish round). Not for use outside src/relay/.
 *
 * Threads: everything here runs on the thread inside relay_run(), except
 * stats (under mu, read by relay_get_stats() from any thread).
 */
#ifndef CO_RELAY_INT_H
#define CO_RELAY_INT_H

#include "flow/flow.h"
#include "relay/relay.h"
#include "util/compiler.h"
#include "util/log.h"
#include "util/metrics.h"

#include <librdkafka/rdkafka.h>

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct kproducer;
struct store_relay;

#define RELAY_CLIENT_ID "chargeonce-relay"
/* At most this many rounds in flight (produced, not finished): a new
 * round is fetched and produced while the last one awaits its reports. */
#define RELAY_ROUNDS_IN_FLIGHT 2

enum slot_state {
        SLOT_UNSENT = 0,
        SLOT_PENDING,
        SLOT_OK,
        SLOT_FAILED,
        SLOT_PARKED, /* parked: not to be marked or retried */
};

struct relay_flight; /* one round in flight (round.c) */

/* One produced row, the opaque of its delivery report. */
struct slot {
        struct relay_flight *f; /* its round */
        int64_t id;
        enum slot_state state;
        rd_kafka_resp_err_t err;
        int attempts; /* produce attempts of this round */
};

struct relay {
        struct relay_opts o; /* strings and kafka borrowed */
        size_t window;       /* rows looked at per fetch: batch_size * 4 */

        struct store_relay *db; /* owned */
        struct kproducer *kp;   /* owned */
        /* RELAY_ROUNDS_IN_FLIGHT rounds, each with its own slots,
         * owned; alive while kp is (kproducer_destroy fails what is in
         * flight into them) */
        struct relay_flight *flights;
        uint64_t rounds; /* rounds started: their order */
        int64_t *ids;    /* batch_size * RELAY_ROUNDS_IN_FLIGHT, scratch */
        size_t pending;  /* delivery reports still due, every round */

        size_t max_msg;     /* the producer's message.max.bytes */
        int64_t backoff_ms; /* nominal, before jitter; 0 after a success */
        int64_t retry_at;
        uint32_t rng;   /* xorshift32 state for the jitter */
        bool abandoned; /* the rounds left reports due (stopping) */
        /* a statement did not fit the database's schema: stop (1) */
        bool fatal;
        int64_t standby_warned_ms; /* last "results wait" log (mono) */

        const atomic_int *stop;  /* relay_run's flag */
        struct flow_drain drain; /* once the flag asks for a drain */

        int loop_id;        /* metrics_loop_register */
        pthread_mutex_t mu; /* guards stats */
        struct relay_stats stats;
        struct log_ctx lc;
};

/* The level r's stop flag asks for (FLOW_RUN outside relay_run). */
int relay_stop_level(const struct relay *r);

/* Adds to r's counters (under r->mu). */
void relay_stats_add(struct relay *r, uint64_t published, uint64_t failed,
                     uint64_t parked, uint64_t deleted, bool batch);

/* Replaces a producer that hit a fatal error (or never reported); r->kp
 * is NULL when no new one could be made (logged). */
void relay_producer_renew(struct relay *r, const char *why);

/*
 * Waits before the next round: bounded exponential with jitter, or the
 * longest interval at once (longest: an error every row gets alike).
 * Sets r->retry_at; returns the delay.
 */
int64_t relay_backoff(struct relay *r, bool longest);

/* The rounds and their slots (relay_new); freed by relay_flights_free,
 * only once the producer is gone (its last reports write into them). */
void relay_flights_new(struct relay *r);
void relay_flights_free(struct relay *r);

/* Rounds in flight: started, not finished. */
size_t relay_rounds_busy(const struct relay *r);

/*
 * Whether a new round may start now: a free slot, no round in flight
 * with a failure (that one is handled with nothing else in flight), not
 * stopping.
 */
bool relay_round_may_start(const struct relay *r);

/*
 * Starts a round (round.c): fetch the rows of the held shards, never a
 * row of a key whose earlier row is in flight, then produce them.
 * Returns the number of rows fetched, or -1 when the database failed
 * (the caller backs off). Only when relay_round_may_start().
 */
int relay_round_start(struct relay *r) CO_MUST_CHECK;

/*
 * Serves delivery reports (up to poll_ms), then finishes every round it
 * can (isolate, mark, back-off, counters), oldest first: a round once
 * its own reports are in; one with a failure once no other round has
 * reports due. Returns the rows of the rounds finished (> 0: there may
 * be more). r->abandoned when stopping gave the rounds up.
 */
size_t relay_rounds_serve(struct relay *r, int poll_ms);

#endif
