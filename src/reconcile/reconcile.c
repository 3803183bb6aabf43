/* SPDX-License-Identifier: Apache-2.0 */
/*
 * reconcile: the reconciler's lifecycle and loop (see reconcile.h).
 *
 * The thread inside reconcile_run() owns everything: a struct store
 * (blocking calls, short statements), a struct gateway (many calls in
 * flight, polled with at most 100 ms timeouts) and the items. Each turn:
 * take expired payments over (ask.c sends their queries), renew the
 * leases of the ones at the gateway, act on the answers (act.c), log the
 * counters when they changed, poll the gateway.
 *
 * Must never: mark a payment failed without a final refusal from the
 * gateway; post again without an empty list inside every bound, with
 * another provider key, or after our lease was found lost; act on a
 * decision whose evidence row was not stored; settle without the epoch it
 * took; log a full key or the payment method.
 */
#include "reconcile/reconcile.h"
#include "gateway/client.h"
#include "reconcile/decide.h"
#include "reconcile/reconcile_int.h"
#include "store/evidence.h"
#include "store/migrate.h"
#include "store/store.h"
#include "util/crypto.h"
#include "util/failpoint.h"
#include "util/log.h"
#include "util/timeutil.h"
#include "util/xalloc.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define RECONCILE_STATS_EVERY_MS 10000 /* between two stats lines */
#define RECONCILE_DRAIN_SLACK_MS 5000  /* added to the gateway budget */
#define RECONCILE_POLL_MS        100

static void log_ctx_init(struct log_ctx *lc)
{
        *lc           = (struct log_ctx)LOG_CTX_INIT;
        lc->component = "reconcile";
}

void reconcile_item_ctx(const struct reconcile_item *it, struct log_ctx *lc)
{
        log_ctx_init(lc);
        lc->payment_id = it->p->payment_id;
        lc->tenant_id  = it->p->tenant_id;
        lc->key_masked = it->key_masked;
}

int64_t reconcile_item_age(const struct reconcile_item *it, int64_t mono_ms)
{
        return it->taken_db_ms - it->p->created_at_ms + mono_ms -
               it->taken_mono_ms;
}

void reconcile_item_free(struct reconciler *r, struct reconcile_item *it)
{
        flow_list_remove(&r->live, &it->link);
        metrics_gauge_add(r->o.metrics, METRIC_IN_FLIGHT, -1);
        free(it->result_json);
        free(it->result_detail);
        if (--it->batch->live == 0) {
                store_payments_free(it->batch->p, it->batch->n);
                free(it->batch);
        }
        free(it);
}

/* ------------------------------------------------------------------ */
/* counters                                                             */

static void publish_stats(struct reconciler *r)
{
        pthread_mutex_lock(&r->mu);
        r->stats_pub = r->st;
        pthread_mutex_unlock(&r->mu);
}

void reconcile_get_stats(struct reconciler *r, struct reconcile_stats *out)
{
        pthread_mutex_lock(&r->mu);
        *out = r->stats_pub;
        pthread_mutex_unlock(&r->mu);
}

/* The stats line: every 10 s when something changed, or now (force). */
static void log_stats(struct reconciler *r, bool force)
{
        const struct reconcile_stats *s = &r->st;
        struct log_ctx lc;

        if (!flow_stats_due(&r->stats_tick, time_mono_ms(), force, &r->st,
                            &r->st_logged, sizeof(r->st)))
                return;
        log_ctx_init(&lc);
        log_info(&lc,
                 "taken over %llu: settled from query %llu, re-posted %llu "
                 "(settled after re-post %llu), succeeded %llu, failed %llu, "
                 "review %llu, still unknown %llu, fenced %llu, lease lost "
                 "%llu, database errors %llu; in flight %zu",
                 (unsigned long long)s->takeovers,
                 (unsigned long long)s->settled_from_query,
                 (unsigned long long)s->reposted,
                 (unsigned long long)s->settled_after_repost,
                 (unsigned long long)s->succeeded,
                 (unsigned long long)s->failed, (unsigned long long)s->review,
                 (unsigned long long)s->still_unknown,
                 (unsigned long long)s->fenced, (unsigned long long)s->lost,
                 (unsigned long long)s->errors, r->live.n);
}

/* ------------------------------------------------------------------ */
/* takeovers and leases                                                 */

/*
 * Makes the n payments of one takeover items and asks the gateway about
 * each. db_now: the database's clock right after the takeover, mono our
 * clock then; sent: when the takeover statement was sent (the lease runs
 * from its time, which is after this).
 */
static void adopt(struct reconciler *r, struct store_payment *p, size_t n,
                  int64_t db_now, int64_t mono, int64_t sent)
{
        struct reconcile_batch *b = xcalloc(1, sizeof(*b));
        struct log_ctx lc;

        b->p = p;
        b->n = n;
        for (size_t i = 0; i < n; i++) {
                struct reconcile_item *it = xcalloc(1, sizeof(*it));

                it->r     = r;
                it->batch = b;
                it->p     = &p[i];
                b->live++;
                flow_list_add(&r->live, &it->link);
                metrics_gauge_add(r->o.metrics, METRIC_IN_FLIGHT, 1);
                it->taken_db_ms     = db_now;
                it->taken_mono_ms   = mono;
                it->renewed_mono_ms = mono;
                atomic_store(&it->lease_until_ms, sent + r->o.lease_ms);
                log_mask_key(p[i].idem_key, strlen(p[i].idem_key),
                             it->key_masked, sizeof(it->key_masked));
                log_mask_key(p[i].provider_key, strlen(p[i].provider_key),
                             it->pkey_masked, sizeof(it->pkey_masked));
                reconcile_item_ctx(it, &lc);
                log_info(&lc,
                         "taken over: lease epoch %lld, created %lld ms ago, "
                         "%d gateway attempt(s) before",
                         (long long)p[i].lease_epoch,
                         (long long)reconcile_item_age(it, time_mono_ms()),
                         (int)p[i].attempts);
                reconcile_ask_query(r, it);
        }
        if (b->live == 0) {
                store_payments_free(p, n);
                free(b);
        }
}

static void take_over(struct reconciler *r)
{
        struct store_payment *p = NULL;
        size_t n = 0, room, n_held = 0;
        const char **held;
        int64_t db_now, sent;
        int rc;
        char err[512];
        struct log_ctx lc;

        log_ctx_init(&lc);
        room =
            r->o.max_in_flight > r->live.n ? r->o.max_in_flight - r->live.n : 0;
        if (room > r->o.batch_size)
                room = r->o.batch_size;
        if (room == 0)
                return;
        r->st.rounds++;
        /* the lease runs from the statement's time, which is after this */
        sent = time_mono_ms();
        /* never a payment an item of ours still holds: a failover may
         * have lost that item's takeover, and the same owner's grant at
         * the same epoch again would let its late settle pass the fence */
        held = xcalloc(r->live.n ? r->live.n : 1, sizeof(*held));
        for (struct flow_link *k = r->live.head; k; k = k->next)
                held[n_held++] =
                    FLOW_ENTRY(k, struct reconcile_item, link)->p->payment_id;
        rc = store_takeover_expired(r->db, r->o.owner, r->o.lease_ms, room,
                                    held, n_held, &p, &n, err, sizeof(err));
        free(held);
        if (rc == STORE_ERR_SCHEMA) {
                store_schema_explain(r->db, err, sizeof(err));
                log_error(&lc,
                          "the database cannot run this binary's statements "
                          "(%s); stopping",
                          err);
                r->fatal = true;
                return;
        }
        if (rc != STORE_OK) {
                log_error(&lc, "takeover failed: %s", err);
                r->st.errors++;
                return;
        }
        if (n == 0)
                return;
        r->st.takeovers += n;
        metrics_add(r->o.metrics, METRIC_LEASE_TAKEOVERS, 0, n);
        if (FAILPOINT("reconcile.after_takeover") < 0) {
                log_warn(&lc,
                         "failpoint reconcile.after_takeover: %zu "
                         "payment(s) left to lease expiry",
                         n);
                store_payments_free(p, n);
                return;
        }
        /* ages are measured on the database's clock, like created_at */
        if (store_clock_ms(r->db, &db_now, err, sizeof(err)) != STORE_OK) {
                log_error(&lc,
                          "database clock: %s; %zu payment(s) left to "
                          "lease expiry",
                          err, n);
                r->st.errors++;
                store_payments_free(p, n);
                return;
        }
        adopt(r, p, n, db_now, time_mono_ms(), sent);
}

/* Keeps the leases of the payments at the gateway, every lease/3. */
static void renew_at_gateway(struct reconciler *r)
{
        int64_t now = time_mono_ms();
        struct reconcile_item **v;
        size_t n = 0;

        if (!flow_renew_round(&r->renew, now))
                return;
        for (struct flow_link *k = r->live.head; k; k = k->next) {
                struct reconcile_item *it =
                    FLOW_ENTRY(k, struct reconcile_item, link);
                if (it->at_gateway && !it->lost &&
                    flow_renew_due(&r->renew, it->renewed_mono_ms, now))
                        n++;
        }
        if (n == 0)
                return;
        v = xcalloc(n, sizeof(*v));
        n = 0;
        for (struct flow_link *k = r->live.head; k; k = k->next) {
                struct reconcile_item *it =
                    FLOW_ENTRY(k, struct reconcile_item, link);
                if (it->at_gateway && !it->lost &&
                    flow_renew_due(&r->renew, it->renewed_mono_ms, now)) {
                        it->renewed_mono_ms = now;
                        v[n++]              = it;
                }
        }
        /* a failure is logged and counted; a lease not renewed runs out
         * and the payment is taken over again */
        CO_IGNORE(reconcile_lease_renew(r, v, n, r->o.lease_ms));
        free(v);
}

/* ------------------------------------------------------------------ */
/* lifecycle and loop                                                   */

void reconcile_destroy(struct reconciler *r)
{
        if (!r)
                return;
        /* calls still at the gateway end UNKNOWN through on_answer */
        gateway_destroy(r->gw);
        r->gw = NULL;
        /* what is left is retaken once its lease expires */
        while (r->live.head)
                reconcile_item_free(
                    r, FLOW_ENTRY(r->live.head, struct reconcile_item, link));
        r->answered = (struct flow_queue){ 0 };
        store_destroy(r->db);
        pthread_mutex_destroy(&r->mu);
        free(r);
}

/* The timing of decide.c from the options: 0, or -1 with the reason. */
static int set_timing(struct reconciler *r, char *errstr, size_t errstr_size)
{
        const char *warn;
        struct log_ctx lc;

        log_ctx_init(&lc);
        r->timing.review_after_ms  = r->o.review_after_ms;
        r->timing.key_retention_ms = r->o.key_retention_ms;
        /* the consumer's call: started before created + deadline, each
         * attempt at most gateway.timeout; a re-post has the same budget */
        r->timing.in_flight_ms = r->o.deadline_ms + r->o.call_timeout_ms;
        r->timing.repost_ms    = r->timing.in_flight_ms;
        r->drain_ms = r->timing.in_flight_ms + RECONCILE_DRAIN_SLACK_MS;
        if (!reconcile_timing_valid(&r->timing, errstr, errstr_size))
                return -1;
        if ((warn = reconcile_timing_warning(&r->timing)))
                log_warn(&lc, "%s", warn);
        return 0;
}

/*
 * Expires the leases held under the reconciler's own name (at start:
 * every instance of it, a predecessor with the same worker.id died or
 * hangs holding them; at the end: our instance's, the payments still in
 * hand), so that a reconciler takes them over at once instead of after
 * lease.duration. The takeover raises the epoch.
 */
static void release_leases(struct reconciler *r, bool at_start)
{
        struct log_ctx lc;
        char err[512];
        int64_t n = 0;

        log_ctx_init(&lc);
        if (store_leases_release(
                r->db,
                at_start && r->o.owner_name ? r->o.owner_name : r->o.owner,
                at_start && r->o.owner_name, &n, err, sizeof(err)) != STORE_OK)
                log_warn(&lc,
                         "leases of %s not released (%s): they expire "
                         "by themselves",
                         r->o.owner, err);
        else if (n > 0)
                log_warn(&lc,
                         at_start ? "%lld payment(s) were left under this "
                                    "reconciler's name by a process that "
                                    "stopped: released, taken over now"
                                  : "released the leases of %lld payment(s) "
                                    "still in hand",
                         (long long)n);
}

struct reconciler *reconcile_new(const struct reconcile_opts *o, char *errstr,
                                 size_t errstr_size)
{
        struct reconciler *r = xcalloc(1, sizeof(*r));
        struct log_ctx lc;
        int why = EINVAL; /* a configuration error until the database */

        pthread_mutex_init(&r->mu, NULL);
        r->o                   = *o;
        r->stats_tick.every_ms = RECONCILE_STATS_EVERY_MS;
        flow_renew_init(&r->renew, o->lease_ms);
        if (set_timing(r, errstr, errstr_size) < 0)
                goto fail;
        if (!crypto_random(&r->rnd, sizeof(r->rnd)))
                r->rnd = (uint64_t)time_mono_us() ^ (uint64_t)getpid();
        if (!(r->gw = gateway_new(o->gateway, errstr, errstr_size)))
                goto fail;
        why = EIO;
        if (!(r->db = store_connect(o->conninfo, errstr, errstr_size)))
                goto fail;
        log_ctx_init(&lc);
        log_info(&lc,
                 "reconciling as %s: every %lld ms, up to %zu per round and "
                 "%zu at once; review after %lld ms, gateway keys kept %lld "
                 "ms, original call over after %lld ms",
                 o->owner, (long long)o->interval_ms, o->batch_size,
                 o->max_in_flight, (long long)r->timing.review_after_ms,
                 (long long)r->timing.key_retention_ms,
                 (long long)r->timing.in_flight_ms);
        release_leases(r, true);
        return r;
fail:
        reconcile_destroy(r);
        errno = why;
        return NULL;
}

/* Waits for the gateway: no longer than the next takeover round, not at
 * all while answers wait to be acted on. */
static void poll_gateway(struct reconciler *r, int64_t now)
{
        int timeout = r->answered.n ? 0 : RECONCILE_POLL_MS;
        struct log_ctx lc;

        if (!r->drain.draining && r->next_scan_ms - now < timeout)
                timeout =
                    r->next_scan_ms > now ? (int)(r->next_scan_ms - now) : 0;
        if (gateway_poll(r->gw, timeout) < 0) {
                log_ctx_init(&lc);
                log_warn(&lc, "gateway poll failed");
                usleep(10000);
        }
}

/* A takeover round when one is due; a full one calls the next at once. */
static void maybe_take_over(struct reconciler *r, int64_t now)
{
        uint64_t before = r->st.takeovers;

        if (r->drain.draining || now < r->next_scan_ms)
                return;
        take_over(r);
        r->next_scan_ms = r->st.takeovers - before >= r->o.batch_size
                              ? now
                              : now + r->o.interval_ms;
}

int reconcile_run(struct reconciler *r, const atomic_int *stop)
{
        struct log_ctx lc;
        int rc = 0;

        log_ctx_init(&lc);
        r->drain   = (struct flow_drain){ 0 };
        r->loop_id = metrics_loop_register(r->o.metrics, "reconcile");
        for (;;) {
                int64_t now = time_mono_ms();
                enum flow_step step =
                    flow_drain_step(&r->drain, flow_stop_level(stop), now,
                                    r->drain_ms, r->live.n);

                if (step == FLOW_STEP_EXIT) {
                        log_warn(&lc,
                                 "second signal: stopping now; %zu "
                                 "payment(s) in hand are retaken after "
                                 "their leases expire",
                                 r->live.n);
                        rc = FLOW_EXIT_NOW;
                        break;
                }
                if (step == FLOW_STEP_BEGIN)
                        log_info(&lc,
                                 "stopping: no new takeovers, "
                                 "finishing %zu in hand",
                                 r->live.n);
                if (step == FLOW_STEP_DONE)
                        break;
                maybe_take_over(r, now);
                if (r->fatal) {
                        rc = 1;
                        break;
                }
                renew_at_gateway(r);
                reconcile_act_answered(r);
                log_stats(r, false);
                publish_stats(r);
                metrics_loop_beat(r->o.metrics, r->loop_id);
                poll_gateway(r, now);
        }
        metrics_loop_unregister(r->o.metrics, r->loop_id);
        r->loop_id = -1;
        if (rc == 0 && r->live.n) {
                log_warn(&lc,
                         "%zu payment(s) still at the gateway after the "
                         "drain time: released for another reconciler",
                         r->live.n);
                /* no POST of ours goes out any more, then the leases */
                for (struct flow_link *k = r->live.head; k; k = k->next)
                        atomic_store(&FLOW_ENTRY(k, struct reconcile_item, link)
                                          ->lease_until_ms,
                                     GATEWAY_LEASE_LOST);
                release_leases(r, false);
        }
        log_stats(r, true);
        publish_stats(r);
        return rc;
}
