/* SPDX-License-Identifier: Apache-2.0 */
/*
 * consumer: the intents consumer over librdkafka, at least once.
 * enable.auto.offset.store=false: an offset is stored only when the
 * pipeline says every message up to it is durably handled; librdkafka's
 * auto commit (and the revoke, before partitions leave) commits what was
 * stored. Rebalances of both protocols (eager and cooperative-sticky) go
 * through hooks so the pipeline stores and commits what it finished
 * before partitions leave.
 *
 * Threads: one owner thread; hooks run on it, from kconsumer_poll().
 */
#ifndef CO_KCONSUMER_H
#define CO_KCONSUMER_H

#include "util/compiler.h"

#include <librdkafka/rdkafka.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct kafka_opts;
struct kconsumer;

struct kconsumer_hooks {
        /* Partitions just assigned (before fetching starts). */
        void (*assigned)(void *opaque, const int32_t *parts, int n);
        /*
         * Partitions about to be revoked: store final offsets now
         * (kconsumer_store). lost: the assignment was lost (session
         * timeout); nothing may be committed for them.
         */
        void (*revoking)(void *opaque, const int32_t *parts, int n, bool lost);
        /* After revocation: forget the partitions. */
        void (*revoked)(void *opaque, const int32_t *parts, int n);
        void *opaque;
};

/* Subscribes to topic in group. NULL with a reason on error. */
struct kconsumer *kconsumer_new(const struct kafka_opts *ko, const char *topic,
                                const char *group,
                                const struct kconsumer_hooks *hooks,
                                char *errstr, size_t errstr_size) CO_MUST_CHECK;
/* Closes the consumer (leaves the group, final commit) and frees it. The
 * close is bounded (10 s): a group that does not finish it is left to the
 * process's exit, and what was not committed is redelivered. */
void kconsumer_destroy(struct kconsumer *kc);

/*
 * Up to max messages within timeout_ms (rebalance hooks run from here).
 * Each returned message is owned by the caller (rd_kafka_message_destroy)
 * and has err == 0; errors are logged; a fatal error sets *fatal.
 */
size_t kconsumer_poll(struct kconsumer *kc, rd_kafka_message_t **msgs,
                      size_t max, int timeout_ms, bool *fatal);

/*
 * How long after losing its assignment a static member's fencing counts
 * as its own rejoin's (kconsumer_fenced_by_own_rejoin).
 */
#define KCONSUMER_SELF_FENCE_MS 10000

/*
 * Whether the fatal error kconsumer_poll() just reported is the broker
 * fencing this member's own rejoin, which a new consumer survives. A
 * static member (KIP-345) whose session ran out on its side (no heartbeat
 * answered within session.timeout.ms: a network fault) loses its
 * assignment and joins again under its group.instance.id without its
 * member id; the broker maps the instance to a new member id and answers
 * a request still sent under the old one (the auto-commit) with
 * FENCED_INSTANCE_ID, which librdkafka 2.0 makes fatal for the whole
 * consumer (its session-timeout path rejoins a static member this way
 * and then fails on its own fencing). True for that error only, for a
 * static member, and only within KCONSUMER_SELF_FENCE_MS of losing its
 * assignment; another process under the same identity fences a member
 * that still holds its assignment (its heartbeat is answered
 * FENCED_INSTANCE_ID first), so that stays fatal.
 */
bool kconsumer_fenced_by_own_rejoin(const struct kconsumer *kc);
/* The rule of kconsumer_fenced_by_own_rejoin() without I/O: fatal_err the
 * fatal error's code, lost_at_ms the monotonic time the assignment was
 * last lost (0: never). */
bool kconsumer_self_fence(int fatal_err, bool is_static, int64_t lost_at_ms,
                          int64_t now_ms);

/*
 * How many times a process may make its consumer again after its own
 * rejoin was fenced, within KCONSUMER_REJOIN_WINDOW_MS: each takes a
 * session run out (session.timeout.ms without an answered heartbeat), so
 * a flaky link reaches a few per window; more is a loop nobody foresaw,
 * and the process stops for its supervisor (the systemd unit restarts it
 * at most 10 times in 5 minutes too).
 */
#define KCONSUMER_REJOIN_MAX       10
#define KCONSUMER_REJOIN_WINDOW_MS (5 * 60 * 1000)
struct kconsumer_rejoins {
        int64_t at_ms[KCONSUMER_REJOIN_MAX]; /* the last ones, monotonic */
        size_t n;
};
/* Whether one more rejoin at now_ms stays within the budget (then it is
 * counted in r); false: the (KCONSUMER_REJOIN_MAX + 1)th within the
 * window. No I/O. */
bool kconsumer_rejoin_budget(struct kconsumer_rejoins *r, int64_t now_ms);

/* librdkafka adds 1 to the eventfd fd whenever the consumer's queue goes
 * from empty to not empty (a message, a rebalance, an error), so the
 * owner can sleep in poll(2) and still wake for it. */
void kconsumer_wake_fd(struct kconsumer *kc, int fd);

/* Stores offset (the next one to read) of partition p for commit. */
void kconsumer_store(struct kconsumer *kc, int32_t p, int64_t offset);

/* Stops / restarts fetching for every assigned partition (backpressure,
 * shutdown). */
void kconsumer_pause(struct kconsumer *kc);
void kconsumer_resume(struct kconsumer *kc);
bool kconsumer_paused(const struct kconsumer *kc);
/*
 * Holds (pauses) one partition, or releases it, independently of the
 * pause above: a held partition stays paused through kconsumer_resume()
 * until released; a hold ends when the partition is revoked. Fetching
 * resumes after the last message returned by kconsumer_poll().
 */
void kconsumer_hold(struct kconsumer *kc, int32_t p, bool hold);

/*
 * The lag of up to max assigned partitions (for the consumer_lag metric):
 * the high watermark librdkafka last saw (cached, no broker round trip)
 * minus the offset stored for commit; before anything was stored, minus
 * the position, else the group's committed offset (asked once per
 * assignment, 100 ms at most), else the low watermark (auto.offset.reset
 * earliest, our default). A partition whose high watermark is not known
 * yet is left out. Returns how many were written. Owner thread.
 */
size_t kconsumer_lag(struct kconsumer *kc, int32_t *parts, int64_t *lags,
                     size_t max);


#endif
