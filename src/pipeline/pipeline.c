/* SPDX-License-Identifier: Apache-2.0 */
/*
 * pipeline: the consume loop (see pipeline.h): its lifecycle, its turns,
 * backpressure and the offsets. A message's life is in item.c, its way
 * through the gateway and the database in jobs.c.
 *
 * One event-loop thread owns every item. Blocking database calls run on
 * dbpool's threads; their results come back as finished jobs. Gateway calls
 * run concurrently on the libcurl multi handle of the gateway client, whose
 * poll is also the loop's wait.
 *
 * Must never: store an offset before every message up to it is durably
 * handled; call the gateway for an intent it did not claim as new; report
 * an unknown gateway outcome as failed; hold a database transaction across
 * a gateway call; log a full idempotency key or a payment method.
 */
#include "pipeline/pipeline_int.h"
#include "pipeline/decode.h"
#include "util/failpoint.h"
#include "util/timeutil.h"
#include "util/xalloc.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <unistd.h>

/* How long the in-flight cap may hold before the partitions are paused. */
#define CAP_PAUSE_MS 10000
/* Between two stats lines (when something changed). */
#define STATS_EVERY_MS 10000
/* What the drain adds to the gateway's budget. */
#define DRAIN_SLACK_MS 10000
/* Between two refreshes of the consumer_lag table. */
#define LAG_EVERY_MS 1000

/* ------------------------------------------------------------------ */
/* metrics of the group                                                 */

/*
 * Replaces the consumer_lag table with the lag of every assigned partition
 * (kconsumer_lag: cached watermarks, nothing waits on a broker but the
 * committed offsets asked once per assignment).
 */
static void lag_refresh(struct pipeline *pl)
{
        size_t want = (size_t)(pl->n_assigned > 0 ? pl->n_assigned : 0), n;

        if (!pl->o.metrics)
                return;
        if (want > pl->lag_cap) {
                pl->lag_parts =
                    xrealloc(pl->lag_parts, want * sizeof(*pl->lag_parts));
                pl->lag_values =
                    xrealloc(pl->lag_values, want * sizeof(*pl->lag_values));
                pl->lag_cap = want;
        }
        n = want && pl->kc
                ? kconsumer_lag(pl->kc, pl->lag_parts, pl->lag_values, want)
                : 0;
        metrics_lag_set(pl->o.metrics, pl->lag_parts, pl->lag_values, n);
}

/*
 * consumer_group_joined: 1 from the first assignment (an empty one too:
 * the group answered), 0 once everything is revoked, the assignment is
 * lost, or the consumer closes. The lag table follows the assignment.
 */
static void group_changed(struct pipeline *pl, bool joined)
{
        metrics_set(pl->o.metrics, METRIC_CONSUMER_JOINED, joined ? 1 : 0);
        pl->lag_tick.next_ms = 0; /* refreshed at the next turn */
        if (!joined)
                metrics_lag_set(pl->o.metrics, NULL, NULL, 0);
}

/* ------------------------------------------------------------------ */
/* rebalance hooks                                                      */

static void hook_assigned(void *opaque, const int32_t *parts, int n)
{
        struct pipeline *pl = opaque;
        for (int i = 0; i < n; i++) {
                int32_t p = parts[i];
                if (p >= pl->n_gens) {
                        uint32_t *g =
                            xrealloc(pl->gens, (size_t)(p + 1) * sizeof(*g));
                        memset(g + pl->n_gens, 0,
                               (size_t)(p + 1 - pl->n_gens) * sizeof(*g));
                        pl->gens   = g;
                        pl->n_gens = p + 1;
                }
                pl->gens[p] = offsets_assign(pl->ot, p);
        }
        pl->n_assigned += n;
        group_changed(pl, true);
}

static void store_offset(struct pipeline *pl, int32_t p, int64_t off)
{
        if (FAILPOINT("offset.before_store") < 0)
                return;
        kconsumer_store(pl->kc, p, off);
        /* after the step: only kill and delay mean anything */
        CO_IGNORE(FAILPOINT("offset.after_store"));
}

static void hook_revoking(void *opaque, const int32_t *parts, int n, bool lost)
{
        struct pipeline *pl = opaque;
        if (lost) {
                group_changed(pl, false);
                return;
        }
        for (int i = 0; i < n; i++) {
                int64_t off = offsets_take_committable(pl->ot, parts[i]);
                if (off >= 0)
                        store_offset(pl, parts[i], off);
        }
}

static void hook_revoked(void *opaque, const int32_t *parts, int n)
{
        struct pipeline *pl = opaque;
        /* work in flight for these partitions goes on (it is safe: the
         * claim is idempotent and the settle fenced); only its offsets are
         * no longer ours to store */
        for (int i = 0; i < n; i++) {
                offsets_revoke(pl->ot, parts[i]);
                if (parts[i] < pl->n_gens)
                        pl->gens[parts[i]] = 0;
        }
        pl->n_assigned -= n;
        if (pl->n_assigned <= 0) {
                pl->n_assigned = 0;
                group_changed(pl, false);
        } else {
                group_changed(pl, true);
        }
}

static void store_offsets(struct pipeline *pl)
{
        for (int32_t p = 0; p < offsets_partition_count(pl->ot); p++) {
                int64_t off = offsets_take_committable(pl->ot, p);
                if (off >= 0)
                        store_offset(pl, p, off);
        }
}

static void log_stats(struct pipeline *pl, bool force)
{
        const struct pipeline_stats *s = &pl->st;
        struct log_ctx lc              = LOG_CTX_INIT;

        if (!flow_stats_due(&pl->stats_tick, time_mono_ms(), force, &pl->st,
                            &pl->st_logged, sizeof(pl->st)))
                return;
        lc.component = "consume";
        log_info(
            &lc,
            "consumed %llu: claimed %llu (succeeded %llu, failed %llu, "
            "review %llu, unknown left %llu, fenced %llu, claimed again "
            "%llu), replayed "
            "%llu, in progress %llu, duplicate events %llu (sifted %llu), "
            "conflict "
            "%llu, rejected %llu, dlq %llu (too large %llu, refused by "
            "the database %llu, DLQ write failures %llu); in flight %zu",
            (unsigned long long)s->consumed, (unsigned long long)s->claimed,
            (unsigned long long)s->succeeded, (unsigned long long)s->failed,
            (unsigned long long)s->review, (unsigned long long)s->unknown_left,
            (unsigned long long)s->fenced, (unsigned long long)s->reclaimed,
            (unsigned long long)s->replayed, (unsigned long long)s->in_progress,
            (unsigned long long)s->dup_event, (unsigned long long)s->sifted,
            (unsigned long long)s->conflict, (unsigned long long)s->rejected,
            (unsigned long long)s->dlq, (unsigned long long)s->too_large,
            (unsigned long long)s->db_refused,
            (unsigned long long)s->dlq_failed, pl->in_flight + pl->overflow);
}

/* ------------------------------------------------------------------ */
/* lifecycle                                                            */

static int connect_all(struct pipeline *pl, char *errstr, size_t errstr_size)
{
        struct dbpool_opts dbo;
        struct kconsumer_hooks hooks = { hook_assigned, hook_revoking,
                                         hook_revoked, pl };
        char err[512];

        if (!(pl->gw = gateway_new(pl->o.gateway, err, sizeof(err)))) {
                snprintf(errstr, errstr_size, "gateway: %s", err);
                return -EINVAL; /* its options: a configuration error */
        }
        memset(&dbo, 0, sizeof(dbo));
        dbo.conninfo         = pl->o.conninfo;
        dbo.workers          = pl->o.db_connections;
        dbo.owner            = pl->o.owner;
        dbo.lease_ms         = pl->o.lease_ms;
        dbo.pk_secret        = pl->o.pk_secret;
        dbo.pk_secret_len    = pl->o.pk_secret_len;
        dbo.key_retention_ms = pl->o.key_retention_ms;
        pl->max_jobs         = dbo.workers * 2;
        if (!(pl->db = dbpool_new(&dbo, err, sizeof(err)))) {
                snprintf(errstr, errstr_size, "database: %s", err);
                return -EIO;
        }
        if (!(pl->dlq = kproducer_new(pl->o.kafka, "chargeonce-dlq", errstr,
                                      errstr_size)))
                return -EIO;
        if (!(pl->kc = kconsumer_new(pl->o.kafka, pl->o.topic, pl->o.group,
                                     &hooks, errstr, errstr_size)))
                return -EIO;
        pl->wake_fd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
        if (pl->wake_fd < 0 || gateway_wake_fd(pl->gw, pl->wake_fd) != 0) {
                snprintf(errstr, errstr_size, "wake-up fd: %s",
                         strerror(errno));
                return -EIO;
        }
        dbpool_wake_fd(pl->db, pl->wake_fd);
        kconsumer_wake_fd(pl->kc, pl->wake_fd);
        return 0;
}

static void release_leases(struct pipeline *pl, bool at_start);

struct pipeline *pipeline_new(const struct pipeline_opts *o, char *errstr,
                              size_t errstr_size)
{
        struct pipeline *pl = xcalloc(1, sizeof(*pl));
        struct log_ctx lc   = LOG_CTX_INIT;
        int rc;

        pl->wake_fd = -1;
        if (o->pk_secret_len == 0) {
                snprintf(errstr, errstr_size,
                         "provider_key.secret is required: provider "
                         "idempotency keys are derived from it");
                free(pl);
                errno = EINVAL;
                return NULL;
        }
        pl->o       = *o;
        pl->ot      = offsets_new();
        pl->kq      = keyq_new();
        pl->decoded = xcalloc(POLL_BATCH, sizeof(*pl->decoded));
        for (size_t i = 0; i < POLL_BATCH; i++)
                intent_init(&pl->decoded[i]);
        if (!(pl->dec = decoder_new(o->decode_threads, o->max_message_bytes))) {
                snprintf(errstr, errstr_size, "decode threads: %s",
                         strerror(errno));
                pipeline_destroy(pl);
                errno = EIO;
                return NULL;
        }
        pl->stats_tick.every_ms = STATS_EVERY_MS;
        pl->lag_tick.every_ms   = LAG_EVERY_MS;
        pl->loop_id             = -1;
        flow_renew_init(&pl->renew, o->lease_ms);
        /* a start is as likely as not after a rewind (a replay): the first
         * poll is sifted, and a sift batch mostly not byte for byte
         * recorded turns it off (one read-only statement) */
        pl->sift_on = true;
        if ((rc = connect_all(pl, errstr, errstr_size)) < 0) {
                pipeline_destroy(pl);
                errno = -rc;
                return NULL;
        }
        lc.component = "consume";
        log_info(&lc,
                 "consuming %s as %s in group %s: up to %zu in flight, "
                 "batches of %zu, %d database connection(s)",
                 o->topic, o->owner, o->group, o->max_in_flight, o->batch_size,
                 o->db_connections);
        release_leases(pl, true);
        return pl;
}

/*
 * Expires the leases held under this pipeline's owner name (one statement
 * on a connection of its own; failures are logged, nothing else depends
 * on it):
 *  - at start: a predecessor with the same worker.id died (kill -9, a
 *    crash) or hangs; its payments would wait lease.duration for a
 *    reconciler. Every instance of the name is released (its owner
 *    differs from ours by the nonce), a reconciler takes them over at
 *    once, raising the epoch. Nothing is ours yet.
 *  - at the end of a drain: payments claimed but never sent, or left
 *    unknown after the budget, are not ours to finish any more.
 */
static void release_leases(struct pipeline *pl, bool at_start)
{
        struct log_ctx lc = LOG_CTX_INIT;
        struct store *st;
        char err[512];
        int64_t n = 0;

        lc.component = "consume";
        st           = store_connect(pl->o.conninfo, err, sizeof(err));
        /* at start every instance of the name, a predecessor's; at the
         * end our own grants only (a successor may run beside us) */
        if (!st ||
            store_leases_release(st,
                                 at_start && pl->o.owner_name ? pl->o.owner_name
                                                              : pl->o.owner,
                                 at_start && pl->o.owner_name, &n, err,
                                 sizeof(err)) != STORE_OK) {
                log_warn(&lc,
                         "leases of %s not released (%s): they expire "
                         "by themselves",
                         pl->o.owner, err);
        } else if (n > 0 && at_start) {
                log_warn(&lc,
                         "%lld payment(s) were left processing under this "
                         "worker's name (%s) by a process that stopped: "
                         "their leases are released, a reconciler takes "
                         "them over now",
                         (long long)n, pl->o.owner);
        } else if (n > 0) {
                log_info(&lc,
                         "released the leases of %lld payment(s) left "
                         "unfinished: a reconciler takes them over now",
                         (long long)n);
        }
        store_destroy(st);
}

/* Handles every finished database job; how many there were. */
static size_t take_done_jobs(struct pipeline *pl)
{
        struct dbjob *done;
        size_t n = 0;

        while ((done = dbpool_take_done(pl->db))) {
                while (done) {
                        struct dbjob *next = done->next;
                        pipeline_on_job_done(pl, done);
                        done = next;
                        n++;
                }
        }
        return n;
}

/*
 * What is still in flight is finished as far as it safely can be without
 * starting anything new; the rest is left unhandled (its offset is not
 * stored, so it is redelivered) or processing in the database (the
 * reconciler finishes it).
 */
void pipeline_destroy(struct pipeline *pl)
{
        struct log_ctx lc = LOG_CTX_INIT;
        int64_t end       = time_mono_ms() + 10000;

        if (!pl)
                return;
        lc.component = "consume";
        pl->closing  = true;
        if (pl->db) {
                dbpool_stop_retrying(pl->db);
                while (dbpool_outstanding(pl->db) > 0 && time_mono_ms() < end) {
                        if (take_done_jobs(pl) == 0)
                                usleep(2000); /* none back yet */
                }
        }
        /* calls still at the gateway end UNKNOWN: left processing */
        gateway_destroy(pl->gw);
        pl->gw = NULL;
        /* DLQ messages not delivered get their callback (an error) */
        kproducer_destroy(pl->dlq, 5000);
        pl->dlq = NULL;
        if (pl->kc)
                store_offsets(pl);
        /* what remains was not handled: redelivered after a restart */
        if (pl->in_flight + pl->overflow)
                log_info(&lc, "%zu message(s) left unhandled for redelivery",
                         pl->in_flight + pl->overflow);
        while (pl->all.head)
                pipeline_item_free(pl, item_of_live(pl->all.head));
        /* the consumer leaves the group after a final commit */
        kconsumer_destroy(pl->kc);
        pl->kc = NULL;
        group_changed(pl, false);
        dbpool_destroy(pl->db);
        offsets_destroy(pl->ot);
        if (pl->kq)
                keyq_destroy(pl->kq);
        decoder_destroy(pl->dec);
        if (pl->decoded)
                for (size_t i = 0; i < POLL_BATCH; i++)
                        intent_reset(&pl->decoded[i]);
        free(pl->decoded);
        free(pl->gens);
        free(pl->hot);
        free(pl->lag_parts);
        free(pl->lag_values);
        if (pl->wake_fd >= 0) /* its writers are gone */
                close(pl->wake_fd);
        free(pl);
}

/* ------------------------------------------------------------------ */
/* the loop                                                             */

/*
 * Backpressure: at the cap, stop taking messages; what librdkafka
 * prefetched waits in its queue (bounded by queued.max.messages.kbytes).
 * Pausing at once would make librdkafka drop that prefetch and stall after
 * the resume (measured: ~500 ms per pause, see docs/benchmarks.md). Only a
 * cap held for CAP_PAUSE_MS pauses the partitions, so the group still sees
 * us poll during a long outage. Returns how many messages may be taken.
 */
static size_t room_for(struct pipeline *pl, bool draining,
                       int64_t *at_cap_since)
{
        bool below = pl->in_flight < pl->o.max_in_flight &&
                     pl->overflow < pl->o.max_in_flight;
        size_t room;

        if (!draining) {
                int64_t now_ms = time_mono_ms();
                if (below) {
                        *at_cap_since = 0;
                        kconsumer_resume(pl->kc);
                } else if (!*at_cap_since) {
                        *at_cap_since = now_ms;
                } else if (now_ms - *at_cap_since > CAP_PAUSE_MS) {
                        kconsumer_pause(pl->kc);
                }
        }
        room = below ? pl->o.max_in_flight - pl->in_flight : 0;
        if (room > POLL_BATCH)
                room = POLL_BATCH;
        /* paused (long cap, or draining): poll for rebalances */
        if (room == 0 && kconsumer_paused(pl->kc))
                room = 1;
        return room;
}

/* One turn of the loop; false on a fatal consumer error. */
static bool turn(struct pipeline *pl, bool draining, int64_t *at_cap_since)
{
        rd_kafka_message_t *msgs[POLL_BATCH];
        size_t room = room_for(pl, draining, at_cap_since), n;
        bool fatal  = false;
        int timeout;
        struct log_ctx lc = LOG_CTX_INIT;

        lc.component = "consume";
        n            = room ? kconsumer_poll(pl->kc, msgs, room, 0, &fatal) : 0;
        if (n > 0)
                pipeline_take(pl, msgs, n);
        if (fatal) {
                pl->rejoin = kconsumer_fenced_by_own_rejoin(pl->kc);
                return false;
        }
        (void)take_done_jobs(pl);
        if (pl->fatal)
                return false;
        pipeline_dlq_retry(pl);
        kproducer_poll(pl->dlq, 0);
        pipeline_flush_batches(pl, draining);
        store_offsets(pl);
        pipeline_renew_leases(pl);
        log_stats(pl, false);
        if (flow_tick_due(&pl->lag_tick, time_mono_ms()))
                lag_refresh(pl);
        metrics_loop_beat(pl->o.metrics, pl->loop_id);

        /* librdkafka signals the wake fd only when its queue was empty: a
         * full take may have left messages behind, so do not sleep. A
         * batch lingering needs the next turn within its linger; finished
         * database jobs, Kafka messages and gateway answers wake the
         * poll by themselves. */
        if (room > 0 && n == room)
                timeout = 0;
        else if (pl->claims.n || pl->settles.n || pl->outbox.n ||
                 pl->probes.n || pl->sifts.n)
                timeout = 1;
        else
                timeout = 10;
        if (gateway_poll(pl->gw, timeout) < 0)
                log_warn(&lc, "gateway poll failed");
        return true;
}

int pipeline_run(struct pipeline *pl, const atomic_int *stop)
{
        struct log_ctx lc       = LOG_CTX_INIT;
        struct flow_drain drain = { 0 };
        int64_t at_cap_since    = 0;
        int rc                  = 0;

        lc.component = "consume";
        pl->loop_id  = metrics_loop_register(pl->o.metrics, "pipeline");
        for (;;) {
                size_t left = pl->in_flight + pl->overflow;

                switch (flow_drain_step(
                    &drain, flow_stop_level(stop), time_mono_ms(),
                    pl->o.deadline_ms + DRAIN_SLACK_MS, left)) {
                case FLOW_STEP_EXIT:
                        metrics_loop_unregister(pl->o.metrics, pl->loop_id);
                        pl->loop_id = -1;
                        return FLOW_EXIT_NOW;
                case FLOW_STEP_BEGIN:
                        kconsumer_pause(pl->kc);
                        log_info(&lc,
                                 "stopping: fetching paused, finishing "
                                 "%zu in flight",
                                 left);
                        break;
                case FLOW_STEP_DONE:
                        goto out;
                case FLOW_STEP_RUN:
                        break;
                }
                if (!turn(pl, drain.draining, &at_cap_since)) {
                        if (pl->rejoin) {
                                log_warn(&lc,
                                         "the group fenced this member's "
                                         "own rejoin after its session ran "
                                         "out: the consumer starts again");
                                rc = PIPELINE_REJOIN;
                        } else {
                                log_error(&lc, "fatal error: stopping");
                                rc = 1;
                        }
                        break;
                }
        }
out:
        metrics_loop_unregister(pl->o.metrics, pl->loop_id);
        pl->loop_id = -1;
        log_stats(pl, true);
        /* no POST of ours goes out any more (presend.h), then the leases
         * go: a reconciler takes the payments over at once */
        for (struct flow_link *k = pl->all.head; k; k = k->next)
                atomic_store(&item_of_live(k)->lease_until_ms,
                             GATEWAY_LEASE_LOST);
        release_leases(pl, false);
        if (drain.draining)
                log_info(&lc,
                         "stopped: %zu left in flight (redelivered or "
                         "reconciled)",
                         pl->in_flight + pl->overflow);
        return rc;
}
