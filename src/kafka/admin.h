/* SPDX-License-Identifier: Apache-2.0 */
/*
 * kafka/admin: what `chargeonce replay` asks the cluster (librdkafka's
 * Admin API and metadata, 2.0.2): the partitions of a topic and their
 * watermarks, offsets by timestamp, a consumer group's state and members,
 * its committed offsets, and the rewind of those offsets.
 *
 * Must never: join a consumer group or commit through a consumer (the
 * handle is a plain client); alter a group's offsets without the caller
 * having seen the group empty (kadmin_group_describe).
 *
 * Threads: one thread per handle.
 */
#ifndef CO_KAFKA_ADMIN_H
#define CO_KAFKA_ADMIN_H

#include "util/compiler.h"

#include <stddef.h>
#include <stdint.h>

struct kafka_opts;
struct kadmin;

/* A committed offset that does not exist (the group never committed). */
#define KADMIN_OFFSET_NONE INT64_C(-1)

/* A client for the cluster of ko. NULL with a reason on error. */
struct kadmin *kadmin_new(const struct kafka_opts *ko, int timeout_ms,
                          char *errstr, size_t errstr_size) CO_MUST_CHECK;
void kadmin_destroy(struct kadmin *ka);

/*
 * The partition ids of topic, ascending, in *parts (owned by the caller:
 * free) and their number in *n. -1 if the topic does not exist or the
 * metadata cannot be read.
 */
int kadmin_partitions(struct kadmin *ka, const char *topic, int32_t **parts,
                      int *n, char *errstr, size_t errstr_size) CO_MUST_CHECK;

/* Low and high watermark of one partition (a broker round trip). */
int kadmin_watermarks(struct kadmin *ka, const char *topic, int32_t p,
                      int64_t *lo, int64_t *hi, char *errstr,
                      size_t errstr_size) CO_MUST_CHECK;

/*
 * For each of parts[0..n): the first offset whose timestamp is at or after
 * ts_ms (Unix ms), or the high watermark when there is none.
 */
int kadmin_offsets_for_time(struct kadmin *ka, const char *topic,
                            const int32_t *parts, int n, int64_t ts_ms,
                            int64_t *out, char *errstr,
                            size_t errstr_size) CO_MUST_CHECK;

/* A consumer group as the coordinator describes it. */
struct kadmin_group {
        char state[32]; /* "Stable", "Empty", "Dead", ... */
        size_t members; /* active members */
};

int kadmin_group_describe(struct kadmin *ka, const char *group,
                          struct kadmin_group *out, char *errstr,
                          size_t errstr_size) CO_MUST_CHECK;

/* The group's committed offsets of parts[0..n) of topic into out
 * (KADMIN_OFFSET_NONE where nothing is committed). */
int kadmin_group_offsets(struct kadmin *ka, const char *group,
                         const char *topic, const int32_t *parts, int n,
                         int64_t *out, char *errstr,
                         size_t errstr_size) CO_MUST_CHECK;

/*
 * Sets the group's committed offsets of parts[0..n) of topic to
 * offsets[0..n). The broker refuses it while the group has active members
 * (the error says which partition). 0 or -1.
 */
int kadmin_group_alter(struct kadmin *ka, const char *group, const char *topic,
                       const int32_t *parts, const int64_t *offsets, int n,
                       char *errstr, size_t errstr_size) CO_MUST_CHECK;

#endif
