/* SPDX-License-Identifier: Apache-2.0 */
/*
 * producer: an idempotent librdkafka producer (enable.idempotence=true,
 * acks=all) with a callback per message, for the DLQ and the outbox relay.
 * A message counts as delivered only when its delivery report says so.
 *
 * Threads: one owner thread; callbacks run from kproducer_poll() /
 * kproducer_flush() on it.
 */
#ifndef CO_KPRODUCER_H
#define CO_KPRODUCER_H

#include "util/compiler.h"

#include <librdkafka/rdkafka.h>
#include <stddef.h>

struct kafka_opts;
struct kproducer;

struct kheader {
        const char *name;
        const void *value;
        size_t len;
};

/* err == 0: delivered (acks=all). Otherwise it was not, and may be sent
 * again. Called exactly once per accepted message. */
typedef void(kproducer_dr_cb)(void *opaque, rd_kafka_resp_err_t err);

struct kproducer *kproducer_new(const struct kafka_opts *ko,
                                const char *client_id, char *errstr,
                                size_t errstr_size) CO_MUST_CHECK;
/* Flushes for up to flush_ms, then frees. Undelivered messages get their
 * callback with an error. */
void kproducer_destroy(struct kproducer *kp, int flush_ms);

/*
 * Queues one message (everything is copied). Returns 0 (cb will be
 * called), or -1 if it could not be queued (queue full: poll and try
 * again); cb is then never called.
 */
int kproducer_send(struct kproducer *kp, const char *topic, const void *key,
                   size_t key_len, const void *value, size_t value_len,
                   const struct kheader *hdrs, size_t n_hdrs,
                   kproducer_dr_cb *cb, void *opaque) CO_MUST_CHECK;
/* Why the last kproducer_send() that returned -1 failed
 * (RD_KAFKA_RESP_ERR__QUEUE_FULL: try again after a poll; anything else,
 * e.g. RD_KAFKA_RESP_ERR_MSG_SIZE_TOO_LARGE, will not go by retrying). */
rd_kafka_resp_err_t kproducer_last_error(const struct kproducer *kp);

/* Serves delivery reports. Returns the number of events served. */
int kproducer_poll(struct kproducer *kp, int timeout_ms);
rd_kafka_t *kproducer_handle(struct kproducer *kp);

#endif
