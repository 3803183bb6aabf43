/* SPDX-License-Identifier: Apache-2.0 */
/*
 * kafka/range: reads offsets [from, to) of some partitions of a topic once,
 * for `chargeonce replay --dry-run`. A consumer in assign mode
 * (rd_kafka_assign: it never joins a group, so the service's group never
 * rebalances), with a group.id of its own and enable.auto.commit=false,
 * that never commits.
 *
 * Must never: subscribe, commit, or store an offset.
 *
 * Threads: one thread per reader.
 */
#ifndef CO_KAFKA_RANGE_H
#define CO_KAFKA_RANGE_H

#include "util/compiler.h"

#include <librdkafka/rdkafka.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct kafka_opts;
struct krange;

/*
 * A reader of parts[i] in [from[i], to[i]) of topic (copied). group: its
 * own group.id (never the service's). NULL with a reason on error.
 */
struct krange *krange_new(const struct kafka_opts *ko, const char *group,
                          const char *topic, const int32_t *parts,
                          const int64_t *from, const int64_t *to, int n,
                          char *errstr, size_t errstr_size) CO_MUST_CHECK;
/* Closes the consumer (it commits nothing) and frees kr. */
void krange_destroy(struct krange *kr);

/*
 * Up to max messages of the range within timeout_ms, each owned by the
 * caller (rd_kafka_message_destroy), in offset order per partition;
 * messages at or past a partition's `to` are dropped. *done: every
 * partition reached its end. Returns the number of messages, or -1 with
 * errstr set on an error that ends the read (fatal, or a partition that
 * cannot be read).
 */
int krange_poll(struct krange *kr, rd_kafka_message_t **msgs, size_t max,
                int timeout_ms, bool *done, char *errstr,
                size_t errstr_size) CO_MUST_CHECK;

#endif
