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
        struct relay_opts o; /* strings and kafka borrowed */
        size_t window;       /* rows looked at per fetch: batch_size * 4 */

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

/*
 * One round: fetch, produce, await every report, mark (round.c).
 * Returns the number of rows fetched (> 0: there may be more), or -1
 * when the database failed (the caller backs off).
 */
int relay_round(struct relay *r) CO_MUST_CHECK;

#endif
