/* SPDX-License-Identifier: Apache-2.0 */
/*
 * consumer: librdkafka consumer with the rebalance protocol handled for
 * eager and cooperative-sticky assignors. Never stores an offset the
 * pipeline did not finish; never commits for a lost assignment.
 */
#include "kafka/consumer.h"
#include "kafka/kconf.h"
#include "util/failpoint.h"
#include "util/log.h"
#include "util/timeutil.h"
#include "util/xalloc.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct kconsumer {
        rd_kafka_t *rk;
        rd_kafka_queue_t *q;
        char *topic;
        struct kconsumer_hooks hooks;
        bool paused;
        int32_t *held; /* partitions held by kconsumer_hold() */
        int n_held, cap_held;
        /* per partition: the offset last stored, else the committed one
         * (kconsumer_lag); KC_BASE_UNKNOWN before either is known */
        int64_t *base;
        int32_t n_base;
        bool is_static;         /* a group.instance.id (KIP-345) */
        bool coop;              /* the protocol of the last assignment */
        bool closing;           /* kconsumer_destroy has begun the close */
        bool assigned_in_close; /* an assignment came during the close */
        int64_t lost_at_ms;     /* the assignment last lost (monotonic), or 0 */
        int fatal_err;          /* the fatal error reported, or 0 */
};

#define KC_BASE_UNKNOWN INT64_MIN
/* asked once, nothing committed (or no answer): position or low mark */
#define KC_BASE_NONE (INT64_MIN + 1)
/* How long kconsumer_lag waits for the committed offsets. */
#define KC_COMMITTED_TIMEOUT_MS 100
/* How long the revoke hook waits for its commit's answer. */
#define KC_REVOKE_COMMIT_TIMEOUT_MS 5000
/* How long kconsumer_destroy waits for the group's close (the revoke,
 * its commit and LeaveGroup) before it leaves without it. */
#define KC_CLOSE_TIMEOUT_MS 10000

static bool is_held(const struct kconsumer *kc, int32_t p)
{
        for (int i = 0; i < kc->n_held; i++)
                if (kc->held[i] == p)
                        return true;
        return false;
}

static void unhold(struct kconsumer *kc, int32_t p)
{
        for (int i = 0; i < kc->n_held; i++)
                if (kc->held[i] == p) {
                        kc->held[i] = kc->held[--kc->n_held];
                        return;
                }
}

/* Pauses or resumes partition p of the topic alone. */
static void pause_one(struct kconsumer *kc, int32_t p, bool pause)
{
        rd_kafka_topic_partition_list_t *l =
            rd_kafka_topic_partition_list_new(1);

        rd_kafka_topic_partition_list_add(l, kc->topic, p);
        if (pause)
                rd_kafka_pause_partitions(kc->rk, l);
        else
                rd_kafka_resume_partitions(kc->rk, l);
        rd_kafka_topic_partition_list_destroy(l);
}

/* Sets the lag base of partition p (grows the table). */
static void base_set(struct kconsumer *kc, int32_t p, int64_t off)
{
        if (p < 0)
                return;
        if (p >= kc->n_base) {
                int64_t *b = xrealloc(kc->base, (size_t)(p + 1) * sizeof(*b));
                for (int32_t i = kc->n_base; i <= p; i++)
                        b[i] = KC_BASE_UNKNOWN;
                kc->base   = b;
                kc->n_base = p + 1;
        }
        kc->base[p] = off;
}

static void parts_of(const rd_kafka_topic_partition_list_t *l, int32_t *out,
                     int *n)
{
        *n = 0;
        for (int i = 0; i < l->cnt; i++)
                out[(*n)++] = l->elems[i].partition;
}

/* "0,1,5" (cut with "..." when it does not fit), for the log: which
 * partitions a member got is what an operator checks after a restart. */
static const char *parts_str(const int32_t *ps, int n, char *buf, size_t size)
{
        size_t len = 0;

        buf[0] = '\0';
        for (int i = 0; i < n; i++) {
                int w = snprintf(buf + len, size - len, "%s%d", i ? "," : "",
                                 (int)ps[i]);
                if (w < 0 || (size_t)w >= size - len) {
                        snprintf(buf + (len < size - 4 ? len : size - 4), 4,
                                 "...");
                        break;
                }
                len += (size_t)w;
        }
        return buf;
}

static bool protocol_is_coop(rd_kafka_t *rk)
{
        const char *p = rd_kafka_rebalance_protocol(rk);
        return p && !strcmp(p, "COOPERATIVE");
}

static int commit_within(struct kconsumer *kc, int timeout_ms);

static void rebalance_cb(rd_kafka_t *rk, rd_kafka_resp_err_t err,
                         rd_kafka_topic_partition_list_t *parts, void *opaque)
{
        struct kconsumer *kc = opaque;
        struct log_ctx lc    = LOG_CTX_INIT;
        bool coop;
        int32_t *ps = xcalloc((size_t)parts->cnt + 1, sizeof(*ps));
        int n;

        lc.component = "kafka";
        lc.topic     = kc->topic;
        parts_of(parts, ps, &n);
        /* rd_kafka_rebalance_protocol() asks librdkafka's main thread and
         * waits without a bound (librdkafka #4041): not during the close,
         * where every assign call is taken as an unassign whatever its
         * kind */
        if (kc->closing)
                coop = kc->coop;
        else
                coop = kc->coop = protocol_is_coop(rk);

        if (err == RD_KAFKA_RESP_ERR__ASSIGN_PARTITIONS) {
                char list[256];
                log_info(&lc, "assigned %d partition(s) (%s): %s", n,
                         coop ? "cooperative" : "eager",
                         parts_str(ps, n, list, sizeof(list)));
                for (int i = 0; i < n; i++)
                        base_set(kc, ps[i], KC_BASE_UNKNOWN);
                /* during the close librdkafka (2.0.2) answers the assign
                 * call below with an unassign of everything, and commits
                 * what was stored itself (enable.auto.commit) */
                kc->assigned_in_close |= kc->closing;
                if (kc->closing)
                        log_info(&lc, "the assignment came during the close: "
                                      "given back at once");
                kc->hooks.assigned(kc->hooks.opaque, ps, n);
                if (coop) {
                        rd_kafka_error_t *e =
                            rd_kafka_incremental_assign(rk, parts);
                        if (e) {
                                log_error(&lc, "incremental assign: %s",
                                          rd_kafka_error_string(e));
                                rd_kafka_error_destroy(e);
                        }
                } else {
                        rd_kafka_assign(rk, parts);
                }
                /* a paused consumer pauses what it gets, too */
                if (kc->paused)
                        rd_kafka_pause_partitions(rk, parts);
        } else {
                bool lost = rd_kafka_assignment_lost(rk);
                log_info(&lc, "revoking %d partition(s)%s", n,
                         lost ? " (assignment lost)" : "");
                if (lost) {
                        kc->lost_at_ms = time_mono_ms();
                        /* tests: the broker fencing the rejoin that
                         * follows, every time (by itself it is a race) */
                        if (FAILPOINT("kafka.fence_after_loss") < 0)
                                CO_IGNORE(rd_kafka_test_fatal_error(
                                    rk, RD_KAFKA_RESP_ERR_FENCED_INSTANCE_ID,
                                    "failpoint kafka.fence_after_loss"));
                }
                /* a hold ends with the assignment */
                for (int i = 0; i < n; i++) {
                        unhold(kc, ps[i]);
                        base_set(kc, ps[i], KC_BASE_UNKNOWN);
                }
                kc->hooks.revoking(kc->hooks.opaque, ps, n, lost);
                /* a failed commit is logged; what it missed is
                 * redelivered to the next owner, which dedupes. After an
                 * assignment taken in the close, there is nothing left
                 * to commit, and a commit then can reach the group after
                 * it has ended (2.0.2 aborts: rd_kafka_cgrp_terminated's
                 * assertion) */
                if (!lost && !kc->assigned_in_close)
                        CO_IGNORE(
                            commit_within(kc, KC_REVOKE_COMMIT_TIMEOUT_MS));
                if (coop) {
                        rd_kafka_error_t *e =
                            rd_kafka_incremental_unassign(rk, parts);
                        if (e) {
                                log_error(&lc, "incremental unassign: %s",
                                          rd_kafka_error_string(e));
                                rd_kafka_error_destroy(e);
                        }
                } else {
                        rd_kafka_assign(rk, NULL);
                }
                kc->hooks.revoked(kc->hooks.opaque, ps, n);
        }
        free(ps);
}

/* Says once which membership this process has in group, and why. */
static void log_membership(const struct kafka_opts *ko, const char *group)
{
        struct log_ctx lc = LOG_CTX_INIT;

        lc.component = "kafka";
        if (ko->instance_id && *ko->instance_id)
                log_info(&lc, "group %s: static member %s (KIP-345)", group,
                         ko->instance_id);
        else if (ko->instance_note)
                log_warn(&lc, "group %s: %s", group, ko->instance_note);
        else
                log_info(&lc, "group %s: dynamic member", group);
}

struct kconsumer *kconsumer_new(const struct kafka_opts *ko, const char *topic,
                                const char *group,
                                const struct kconsumer_hooks *hooks,
                                char *errstr, size_t errstr_size)
{
        struct kconsumer *kc = xcalloc(1, sizeof(*kc));
        rd_kafka_conf_t *conf;
        rd_kafka_topic_partition_list_t *sub;
        rd_kafka_resp_err_t err;
        char rderr[512];

        kc->topic     = xstrdup(topic);
        kc->hooks     = *hooks;
        kc->is_static = ko->instance_id && *ko->instance_id;
        if (!(conf = kconf_new(ko, KCONF_MEMBER, errstr, errstr_size)))
                goto fail;
        /* chargeonce's guarantees depend on these: not overridable */
        if (kconf_set(conf, "group.id", group, errstr, errstr_size) < 0 ||
            kconf_set(conf, "enable.auto.offset.store", "false", errstr,
                      errstr_size) < 0)
                goto fail_conf;
        rd_kafka_conf_set_rebalance_cb(conf, rebalance_cb);
        rd_kafka_conf_set_opaque(conf, kc);

        kc->rk = rd_kafka_new(RD_KAFKA_CONSUMER, conf, rderr, sizeof(rderr));
        if (!kc->rk) {
                snprintf(errstr, errstr_size, "kafka consumer: %s", rderr);
                goto fail_conf;
        }
        conf = NULL; /* owned by rk now */
        log_membership(ko, group);
        rd_kafka_poll_set_consumer(kc->rk);
        kc->q = rd_kafka_queue_get_consumer(kc->rk);

        sub = rd_kafka_topic_partition_list_new(1);
        rd_kafka_topic_partition_list_add(sub, topic, RD_KAFKA_PARTITION_UA);
        err = rd_kafka_subscribe(kc->rk, sub);
        rd_kafka_topic_partition_list_destroy(sub);
        if (err) {
                snprintf(errstr, errstr_size, "subscribe %s: %s", topic,
                         rd_kafka_err2str(err));
                goto fail;
        }
        return kc;

fail_conf:
        if (conf)
                rd_kafka_conf_destroy(conf);
fail:
        if (kc->q)
                rd_kafka_queue_destroy(kc->q);
        if (kc->rk)
                rd_kafka_destroy(kc->rk);
        free(kc->held);
        free(kc->base);
        free(kc->topic);
        free(kc);
        return NULL;
}

void kconsumer_wake_fd(struct kconsumer *kc, int fd)
{
        /* an eventfd takes 8-byte counts: 1, in this machine's order */
        static const uint64_t one = 1;

        rd_kafka_queue_io_event_enable(kc->q, fd, &one, sizeof(one));
}

/*
 * The group's close, served here until it is done or timeout_ms have
 * passed: true when it is done. rd_kafka_consumer_close() waits without a
 * bound, and librdkafka 2.0.2's can wait for ever (a commit sent while the
 * coordinator forgot the member, a coordinator that does not answer).
 */
static bool close_within(struct kconsumer *kc, int timeout_ms)
{
        rd_kafka_queue_t *cq = rd_kafka_queue_new(kc->rk);
        int64_t end          = time_mono_ms() + timeout_ms;
        rd_kafka_error_t *e;
        bool closed;

        kc->closing = true;
        /* the group's queue now goes to cq: the revoke is answered from
         * the poll below; fetched messages are dropped (their offsets
         * were never stored: redelivered) */
        if ((e = rd_kafka_consumer_close_queue(kc->rk, cq))) {
                /* a fatal error (a fenced static member): nothing to
                 * leave, and rd_kafka_destroy() closes without a wait */
                struct log_ctx lc = LOG_CTX_INIT;
                lc.component      = "kafka";
                log_info(&lc, "consumer close: %s", rd_kafka_error_string(e));
                rd_kafka_error_destroy(e);
                rd_kafka_queue_destroy(cq);
                return true;
        }
        while (!(closed = rd_kafka_consumer_closed(kc->rk))) {
                int64_t left = end - time_mono_ms();
                rd_kafka_event_t *ev;

                if (left <= 0)
                        break;
                ev = rd_kafka_queue_poll(cq, left < 100 ? (int)left : 100);
                if (!ev)
                        continue;
                /* a queue polled for events returns the rebalance as one,
                 * without calling rebalance_cb: it is answered here */
                if (rd_kafka_event_type(ev) == RD_KAFKA_EVENT_REBALANCE)
                        rebalance_cb(kc->rk, rd_kafka_event_error(ev),
                                     rd_kafka_event_topic_partition_list(ev),
                                     kc);
                rd_kafka_event_destroy(ev);
        }
        rd_kafka_queue_destroy(cq);
        return closed;
}

/*
 * What the group sent while nothing polled (the assignment of a join that
 * finished meanwhile) is answered before the close begins: librdkafka
 * 2.0.2 takes an assign call made in the close as an unassign and then
 * never ends a cooperative close (librdkafka #4527, fixed in 2.4.0).
 * Messages fetched meanwhile are dropped: their offsets were never
 * stored, so they are redelivered.
 */
static void answer_pending(struct kconsumer *kc)
{
        rd_kafka_message_t *msgs[64];
        ssize_t got;

        for (int round = 0; round < 100; round++) {
                got = rd_kafka_consume_batch_queue(kc->q, 0, msgs, 64);
                if (got <= 0)
                        break;
                for (ssize_t i = 0; i < got; i++)
                        rd_kafka_message_destroy(msgs[i]);
        }
}

void kconsumer_destroy(struct kconsumer *kc)
{
        if (!kc)
                return;
        /* tests: the group's answers to a join arrive while nothing
         * polls (a pipeline's stop that takes its time) */
        CO_IGNORE(FAILPOINT("kafka.before_close"));
        answer_pending(kc);
        rd_kafka_queue_destroy(kc->q);
        /* the revoke hook runs and commits; a dynamic member leaves the
         * group (LeaveGroup: the others rebalance now), a static one does
         * not (KIP-345, librdkafka sends no LeaveGroup when a static
         * member terminates): its partitions wait for it until
         * session.timeout.ms */
        if (close_within(kc, KC_CLOSE_TIMEOUT_MS)) {
                rd_kafka_destroy(kc->rk);
        } else {
                /* rd_kafka_destroy() would wait for the same close: the
                 * handle is left to the process's exit. What was not
                 * committed is redelivered to the next owner, which
                 * dedupes; a dynamic member's partitions wait for
                 * session.timeout.ms */
                struct log_ctx lc = LOG_CTX_INIT;
                lc.component      = "kafka";
                lc.topic          = kc->topic;
                log_warn(&lc,
                         "consumer group close not done within %d ms: "
                         "leaving without it (offsets not committed are "
                         "redelivered to the next owner)",
                         KC_CLOSE_TIMEOUT_MS);
        }
        free(kc->held);
        free(kc->base);
        free(kc->topic);
        free(kc);
}

size_t kconsumer_poll(struct kconsumer *kc, rd_kafka_message_t **msgs,
                      size_t max, int timeout_ms, bool *fatal)
{
        ssize_t got =
            rd_kafka_consume_batch_queue(kc->q, timeout_ms, msgs, max);
        size_t n = 0;

        if (got < 0)
                return 0;
        for (ssize_t i = 0; i < got; i++) {
                rd_kafka_message_t *m = msgs[i];
                if (!m->err) {
                        msgs[n++] = m;
                        continue;
                }
                struct log_ctx lc = LOG_CTX_INIT;
                lc.component      = "kafka";
                lc.topic          = kc->topic;
                lc.partition      = m->partition;
                if (m->err == RD_KAFKA_RESP_ERR__FATAL) {
                        char why[512];
                        kc->fatal_err =
                            (int)rd_kafka_fatal_error(kc->rk, why, sizeof(why));
                        log_error(&lc, "fatal consumer error: %s", why);
                        *fatal = true;
                } else if (m->err != RD_KAFKA_RESP_ERR__PARTITION_EOF) {
                        log_warn(&lc, "consumer: %s",
                                 rd_kafka_message_errstr(m));
                }
                rd_kafka_message_destroy(m);
        }
        return n;
}

bool kconsumer_self_fence(int fatal_err, bool is_static, int64_t lost_at_ms,
                          int64_t now_ms)
{
        return fatal_err == RD_KAFKA_RESP_ERR_FENCED_INSTANCE_ID && is_static &&
               lost_at_ms > 0 && now_ms >= lost_at_ms &&
               now_ms - lost_at_ms <= KCONSUMER_SELF_FENCE_MS;
}

bool kconsumer_rejoin_budget(struct kconsumer_rejoins *r, int64_t now_ms)
{
        size_t kept = 0;

        for (size_t i = 0; i < r->n; i++)
                if (now_ms >= r->at_ms[i] &&
                    now_ms - r->at_ms[i] < KCONSUMER_REJOIN_WINDOW_MS)
                        r->at_ms[kept++] = r->at_ms[i];
        r->n = kept;
        if (kept == KCONSUMER_REJOIN_MAX)
                return false;
        r->at_ms[r->n++] = now_ms;
        return true;
}

bool kconsumer_fenced_by_own_rejoin(const struct kconsumer *kc)
{
        return kconsumer_self_fence(kc->fatal_err, kc->is_static,
                                    kc->lost_at_ms, time_mono_ms());
}

void kconsumer_store(struct kconsumer *kc, int32_t p, int64_t offset)
{
        rd_kafka_topic_partition_list_t *l =
            rd_kafka_topic_partition_list_new(1);
        rd_kafka_topic_partition_list_add(l, kc->topic, p)->offset = offset;
        rd_kafka_resp_err_t err = rd_kafka_offsets_store(kc->rk, l);
        if (!err && !l->elems[0].err)
                base_set(kc, p, offset);
        if (err || l->elems[0].err) {
                struct log_ctx lc = LOG_CTX_INIT;
                lc.component      = "kafka";
                lc.topic          = kc->topic;
                lc.partition      = p;
                lc.offset         = offset;
                log_debug(&lc, "offset store: %s",
                          rd_kafka_err2str(err ? err : l->elems[0].err));
        }
        rd_kafka_topic_partition_list_destroy(l);
}

/*
 * Commits the stored offsets and waits up to timeout_ms for the answer.
 * rd_kafka_commit() waits without a bound, and librdkafka 2.0.2 can leave
 * it unanswered; a commit still unanswered here may yet be made.
 */
static int commit_within(struct kconsumer *kc, int timeout_ms)
{
        rd_kafka_queue_t *rq = rd_kafka_queue_new(kc->rk);
        rd_kafka_resp_err_t err =
            rd_kafka_commit_queue(kc->rk, NULL, rq, NULL, NULL);

        if (!err) {
                rd_kafka_event_t *ev = rd_kafka_queue_poll(rq, timeout_ms);
                if (ev) {
                        err = rd_kafka_event_error(ev);
                        rd_kafka_event_destroy(ev);
                } else {
                        err = RD_KAFKA_RESP_ERR__TIMED_OUT;
                }
        }
        /* an answer after this is dropped with the queue */
        rd_kafka_queue_destroy(rq);
        if (err && err != RD_KAFKA_RESP_ERR__NO_OFFSET) {
                struct log_ctx lc = LOG_CTX_INIT;
                lc.component      = "kafka";
                log_warn(&lc, "commit: %s", rd_kafka_err2str(err));
                return -1;
        }
        return 0;
}

static void pause_resume(struct kconsumer *kc, bool pause)
{
        rd_kafka_topic_partition_list_t *a = NULL;
        if (rd_kafka_assignment(kc->rk, &a) == 0 && a) {
                if (pause) {
                        rd_kafka_pause_partitions(kc->rk, a);
                } else {
                        /* held partitions stay paused */
                        for (int i = a->cnt - 1; i >= 0; i--)
                                if (is_held(kc, a->elems[i].partition))
                                        rd_kafka_topic_partition_list_del_by_idx(
                                            a, i);
                        rd_kafka_resume_partitions(kc->rk, a);
                }
                rd_kafka_topic_partition_list_destroy(a);
        }
        kc->paused = pause;
}

void kconsumer_hold(struct kconsumer *kc, int32_t p, bool hold)
{
        if (hold == is_held(kc, p))
                return;
        if (hold) {
                if (kc->n_held == kc->cap_held) {
                        int cap = kc->cap_held ? kc->cap_held * 2 : 8;
                        int32_t *h =
                            xrealloc(kc->held, (size_t)cap * sizeof(*h));
                        kc->held     = h;
                        kc->cap_held = cap;
                }
                kc->held[kc->n_held++] = p;
                pause_one(kc, p, true);
                return;
        }
        unhold(kc, p);
        if (!kc->paused)
                pause_one(kc, p, false);
}

void kconsumer_pause(struct kconsumer *kc)
{
        if (!kc->paused)
                pause_resume(kc, true);
}

void kconsumer_resume(struct kconsumer *kc)
{
        if (kc->paused)
                pause_resume(kc, false);
}

bool kconsumer_paused(const struct kconsumer *kc)
{
        return kc->paused;
}

/* Asks the group once per assignment for the committed offsets of the
 * partitions of a whose base is still unknown. */
static void fetch_committed(struct kconsumer *kc,
                            const rd_kafka_topic_partition_list_t *a)
{
        rd_kafka_topic_partition_list_t *l =
            rd_kafka_topic_partition_list_new(a->cnt);

        for (int i = 0; i < a->cnt; i++) {
                int32_t p = a->elems[i].partition;
                if (p >= kc->n_base || kc->base[p] == KC_BASE_UNKNOWN)
                        rd_kafka_topic_partition_list_add(l, kc->topic, p);
        }
        if (l->cnt > 0) {
                bool ok =
                    rd_kafka_committed(kc->rk, l, KC_COMMITTED_TIMEOUT_MS) == 0;

                for (int i = 0; i < l->cnt; i++)
                        base_set(kc, l->elems[i].partition,
                                 ok && !l->elems[i].err &&
                                         l->elems[i].offset >= 0
                                     ? l->elems[i].offset
                                     : KC_BASE_NONE);
        }
        rd_kafka_topic_partition_list_destroy(l);
}

/* The offset partition p's lag counts from (see kconsumer_lag), or -1. */
static int64_t lag_base(struct kconsumer *kc, int32_t p, int64_t low)
{
        rd_kafka_topic_partition_list_t *l;
        int64_t pos = -1;

        if (p < kc->n_base && kc->base[p] >= 0)
                return kc->base[p];
        l = rd_kafka_topic_partition_list_new(1);
        rd_kafka_topic_partition_list_add(l, kc->topic, p);
        if (rd_kafka_position(kc->rk, l) == 0 && !l->elems[0].err)
                pos = l->elems[0].offset;
        rd_kafka_topic_partition_list_destroy(l);
        return pos >= 0 ? pos : low;
}

size_t kconsumer_lag(struct kconsumer *kc, int32_t *parts, int64_t *lags,
                     size_t max)
{
        rd_kafka_topic_partition_list_t *a = NULL;
        size_t n                           = 0;

        if (rd_kafka_assignment(kc->rk, &a) != 0 || !a)
                return 0;
        fetch_committed(kc, a);
        for (int i = 0; i < a->cnt && n < max; i++) {
                int32_t p   = a->elems[i].partition;
                int64_t low = -1, high = -1, base;

                if (rd_kafka_get_watermark_offsets(kc->rk, kc->topic, p, &low,
                                                   &high) != 0 ||
                    high < 0)
                        continue;
                base     = lag_base(kc, p, low);
                parts[n] = p;
                lags[n]  = base >= 0 && high > base ? high - base : 0;
                n++;
        }
        rd_kafka_topic_partition_list_destroy(a);
        return n;
}
