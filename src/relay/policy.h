/* SPDX-License-Identifier: Apache-2.0 */
/*
 * relay/policy: the relay's pure decisions, free of I/O so that they are
 * unit-tested without a broker (tests/relay/test_relay_policy.c):
 *
 *   - what a produce error means for the row that got it
 *     (relay_classify_err): retry later, park this row, or hold every row
 *     because the topic or the producer is broken;
 *   - whether a row can be produced at all (relay_wire_size against the
 *     producer's message.max.bytes), before anything is sent;
 *   - how long to wait after a failed round (relay_backoff_next): bounded
 *     exponential with jitter.
 *
 * Only librdkafka's error enum is used from rdkafka.h (no call into the
 * library). It must never: classify an error it does not know as
 * permanent (an unknown error is retried, never parked: parking is a hole
 * in a key's results that an operator has to look at).
 */
#ifndef CO_RELAY_POLICY_H
#define CO_RELAY_POLICY_H

#include <librdkafka/rdkafka.h>

#include <stddef.h>
#include <stdint.h>

enum relay_err_class {
        /* the broker or the network: the same row is tried again after a
         * back-off (and librdkafka already retried it internally) */
        RELAY_ERR_TRANSIENT = 0,
        /* this row can never be produced as it is (too large, refused as
         * a record): parked once it failed alone */
        RELAY_ERR_ROW,
        /* no row of the topic can be produced (unknown or invalid topic,
         * not authorised, message format, policy): parking would park
         * every row, so all rows wait and the relay backs off at the
         * longest interval and logs an error until an operator fixes it */
        RELAY_ERR_TOPIC,
        /* the producer itself is unusable (fatal, fenced): it is replaced */
        RELAY_ERR_PRODUCER,
};

/* The class of a produce or delivery error (err != 0). */
enum relay_err_class relay_classify_err(rd_kafka_resp_err_t err);

/* "transient", "row", "topic" or "producer". */
const char *relay_err_class_name(enum relay_err_class c);

/*
 * An upper bound of the size librdkafka gives a message of key_len,
 * value_len and n_hdrs headers whose names and values together are
 * hdrs_len bytes; librdkafka refuses a message whose size is over its
 * message.max.bytes (MSG_SIZE_TOO_LARGE at produce time). The bound is
 * at most 64 + 10 * n_hdrs bytes above librdkafka's own count, so a row
 * within those bytes of the limit is refused here that librdkafka might
 * still take.
 */
size_t relay_wire_size(size_t key_len, size_t value_len, size_t n_hdrs,
                       size_t hdrs_len);

/*
 * The next back-off after a failed round: the previous nominal value
 * doubled (min_ms the first time, prev_ms == 0), capped at max_ms; *next
 * gets that nominal value (pass it back as prev_ms next time). Returns
 * the delay to wait: "equal jitter", between half the nominal value and
 * the nominal value, chosen by rnd (any 32-bit random number), so that
 * relays that failed together do not retry together. min_ms >= 1 and
 * max_ms >= min_ms, or they are corrected to that.
 */
int64_t relay_backoff_next(int64_t prev_ms, int64_t min_ms, int64_t max_ms,
                           uint32_t rnd, int64_t *next);

#endif
