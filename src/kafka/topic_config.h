/* SPDX-License-Identifier: Apache-2.0 */
/*
 * kafka/topic_config: a topic's configuration as the broker holds it,
 * read with the Admin API (DescribeConfigs). `chargeonce gc` reads the
 * intents topic's retention before it removes anything.
 *
 * Must never: create or alter a topic, or guess a value the broker did
 * not give (an unreadable configuration is an error, never a default).
 */
#ifndef CO_KAFKA_TOPIC_CONFIG_H
#define CO_KAFKA_TOPIC_CONFIG_H

#include "kafka/kconf.h"
#include "util/compiler.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* How long a topic keeps a message. */
struct kafka_topic_retention {
        /* retention.ms; -1: forever (the broker's own -1, or a topic whose
         * cleanup.policy is compact without delete) */
        int64_t retention_ms;
        bool compact; /* cleanup.policy includes compact */
};

/*
 * Interprets the broker's values of retention.ms and cleanup.policy
 * (either may be NULL: not reported). Pure. 0, or -1 with the reason in
 * errstr (a value that is not a number >= -1, or missing).
 */
int kafka_topic_retention_parse(const char *retention_ms,
                                const char *cleanup_policy,
                                struct kafka_topic_retention *out, char *errstr,
                                size_t errstr_size) CO_MUST_CHECK;

/*
 * Asks the cluster of ko (its bootstrap servers and security settings)
 * for topic's retention, waiting at most timeout_ms. 0, or -1 with the
 * reason in errstr (unreachable broker, unknown topic, not authorised).
 * Blocks; any thread.
 */
int kafka_topic_retention_get(const struct kafka_opts *ko, const char *topic,
                              int timeout_ms, struct kafka_topic_retention *out,
                              char *errstr, size_t errstr_size) CO_MUST_CHECK;

#endif
