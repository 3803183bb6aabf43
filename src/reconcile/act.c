/* SPDX-License-Identifier: Apache-2.0 */
/*
 * reconcile/act: acting on the answered items, in batches (see
 * reconcile.h, reconcile_int.h). Per turn of the loop: every answer is
 * judged (ask.c), the evidence of all of them is stored in one statement,
 * then the settles go in one batch, the waits renew their leases to their
 * backoff, and the re-posts renew their leases and go back to the
 * gateway.
 *
 * Must never: act on a decision whose evidence row was not stored; settle
 * without the epoch it took; post again after our lease was found lost;
 * log a full key or the payment method.
 */
#include "reconcile/reconcile_int.h"
#include "store/evidence.h"
#include "store/store.h"
#include "util/log.h"
#include "util/utf8.h"
#include "util/timeutil.h"
#include "util/xalloc.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static uint64_t next_rand(struct reconciler *r)
{
        /* splitmix64 */
        uint64_t z = (r->rnd += 0x9e3779b97f4a7c15ULL);
        z          = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
        z          = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
        return z ^ (z >> 31);
}

static bool is_settle(const struct reconcile_item *it)
{
        return !it->lost && (it->v.action == RECONCILE_SETTLE_SUCCEEDED ||
                             it->v.action == RECONCILE_SETTLE_FAILED ||
                             it->v.action == RECONCILE_REVIEW);
}

/* The wait before a payment still unknown is looked at again. */
static int64_t wait_ms(struct reconciler *r, const struct reconcile_item *it)
{
        const struct reconcile_timing *t = &r->timing;
        int64_t takeovers = it->p->lease_epoch > 1 ? it->p->lease_epoch - 1 : 1;
        int64_t d         = reconcile_backoff_ms(
                    r->o.backoff_base_ms, r->o.backoff_max_ms, takeovers, next_rand(r));
        int64_t age = reconcile_item_age(it, time_mono_ms());

        if (it->v.not_before_ms > d)
                d = it->v.not_before_ms + r->o.interval_ms;
        /* look again when a bound is reached, not long after it */
        if (age < t->review_after_ms && d > t->review_after_ms - age)
                d = t->review_after_ms - age + 1;
        if (age < t->key_retention_ms && d > t->key_retention_ms - age)
                d = t->key_retention_ms - age + 1;
        return d > 0 ? d : 1;
}

/* Counts and logs one settle that committed (or was fenced). */
static void settled(struct reconciler *r, const struct reconcile_item *it,
                    const struct settle_item *s)
{
        struct log_ctx lc;

        reconcile_item_ctx(it, &lc);
        if (s->outcome == SETTLE_FENCED) {
                log_warn(&lc,
                         "settle fenced: lease epoch %lld is no longer ours "
                         "(now %s, epoch %lld)",
                         (long long)it->p->lease_epoch, s->current_status,
                         (long long)s->current_epoch);
                r->st.fenced++;
                metrics_inc(r->o.metrics, METRIC_SETTLES_FENCED, 0);
                return;
        }
        if (it->step == RECONCILE_STEP_QUERY &&
            it->status != PAYMENT_STATUS_REVIEW)
                r->st.settled_from_query++;
        else if (it->step == RECONCILE_STEP_CHARGE &&
                 it->status != PAYMENT_STATUS_REVIEW)
                r->st.settled_after_repost++;
        metrics_inc(r->o.metrics, METRIC_PAYMENTS_FINISHED,
                    it->status == PAYMENT_STATUS_SUCCEEDED ? MF_SUCCEEDED
                    : it->status == PAYMENT_STATUS_FAILED  ? MF_FAILED
                                                           : MF_REVIEW);
        if (it->status == PAYMENT_STATUS_SUCCEEDED) {
                r->st.succeeded++;
                log_info(&lc, "settled succeeded (%s)", it->v.reason);
        } else if (it->status == PAYMENT_STATUS_FAILED) {
                r->st.failed++;
                log_info(&lc, "settled failed: %s (%s)", it->res_code,
                         it->v.reason);
        } else {
                r->st.review++;
                log_warn(&lc,
                         "payment goes to review: %s (%s); a person must "
                         "decide",
                         it->res_code, it->res_message);
        }
}

/* One settle statement for v[0..n): STORE_OK (each item settled() by
 * its outcome), else the statement's failure with err set. */
static int settle_items(struct reconciler *r, struct reconcile_item **v,
                        size_t n, char *err, size_t errsz)
{
        struct settle_item *s = xcalloc(n, sizeof(*s));
        int rc;

        for (size_t i = 0; i < n; i++) {
                struct reconcile_item *it = v[i];

                s[i].payment_id  = it->p->payment_id;
                s[i].lease_epoch = it->p->lease_epoch;
                s[i].lease_owner = r->o.owner;
                s[i].status =
                    it->status == PAYMENT_STATUS_SUCCEEDED ? SETTLE_SUCCEEDED
                    : it->status == PAYMENT_STATUS_FAILED  ? SETTLE_FAILED
                                                           : SETTLE_REVIEW;
                s[i].provider_charge_id =
                    it->charge_id[0] ? it->charge_id : NULL;
                s[i].error_code      = it->res_code;
                s[i].error_message   = it->res_code ? it->res_message : NULL;
                s[i].attempts        = it->p->attempts + it->attempts;
                s[i].result_event_id = it->result_event_id;
                s[i].result_json     = it->result_json;
                s[i].result_detail   = it->result_detail;
        }
        rc = store_settle_batch(r->db, s, n, err, errsz);
        if (rc == STORE_OK)
                for (size_t i = 0; i < n; i++)
                        settled(r, v[i], &s[i]);
        free(s);
        return rc;
}

/*
 * A settle the database refused alone (a trigger, a constraint) is parked
 * in review with the evidence (what the gateway said, what the database
 * said) instead of being retaken and refused again after every lease: a
 * person decides. True if the review was stored.
 */
static bool park(struct reconciler *r, struct reconcile_item *it,
                 const char *why)
{
        char err[512], msg[sizeof(it->res_message) + 1024];
        struct log_ctx lc;

        reconcile_item_ctx(it, &lc);
        snprintf(msg, sizeof(msg),
                 "the database refused to store the gateway's answer "
                 "(%s%s%s): %s",
                 payment_status_name(it->status), it->charge_id[0] ? ", " : "",
                 it->charge_id, why);
        /* cut on a character boundary */
        (void)utf8_clean(msg, strlen(msg), (size_t)-1, it->res_message,
                         sizeof(it->res_message), NULL);
        it->status   = PAYMENT_STATUS_REVIEW;
        it->res_code = "database_refused";
        free(it->result_json);
        it->result_json = NULL;
        if (reconcile_build_result(it) < 0 ||
            settle_items(r, &it, 1, err, sizeof(err)) != STORE_OK) {
                log_error(&lc,
                          "settle refused by the database (%s), its review "
                          "too: left to lease expiry",
                          why);
                return false;
        }
        log_error(&lc,
                  "settle refused by the database (%s): payment parked in "
                  "review with the evidence",
                  why);
        return true;
}

static void act_settles(struct reconciler *r, struct reconcile_item **v,
                        size_t n)
{
        char err[512];
        struct log_ctx lc = LOG_CTX_INIT;
        int rc;

        if (n == 0)
                return;
        lc.component = "reconcile";
        rc           = settle_items(r, v, n, err, sizeof(err));
        if (rc == STORE_OK)
                return;
        if (rc == STORE_ERR_DATA && n > 1) {
                /* find the guilty one: the innocent settle alone */
                for (size_t i = 0; i < n; i++)
                        act_settles(r, &v[i], 1);
                return;
        }
        if (rc == STORE_ERR_DATA) {
                metrics_inc(r->o.metrics, METRIC_DB_REFUSED, MR_SETTLE);
                if (park(r, v[0], err))
                        return;
        }
        /* nothing (or, on a broken connection, maybe all) written: the
         * leases expire and the payments are looked at again; a settle
         * that did commit leaves nothing to retake */
        log_error(&lc,
                  "settle of %zu payment(s) failed (%s): left to lease expiry",
                  n, err);
        r->st.errors++;
}

int reconcile_lease_renew(struct reconciler *r, struct reconcile_item **v,
                          size_t n, int64_t lease_ms)
{
        struct lease_item *l;
        char err[512];
        struct log_ctx lc = LOG_CTX_INIT;
        int64_t sent;

        if (n == 0)
                return 0;
        lc.component = "reconcile";
        l            = xcalloc(n, sizeof(*l));
        for (size_t i = 0; i < n; i++) {
                l[i].payment_id  = v[i]->p->payment_id;
                l[i].lease_epoch = v[i]->p->lease_epoch;
        }
        sent = time_mono_ms();
        if (store_lease_renew(r->db, l, n, r->o.owner, lease_ms, err,
                              sizeof(err)) != STORE_OK) {
                log_error(&lc, "lease renewal failed: %s", err);
                r->st.errors++;
                free(l);
                return -1;
        }
        for (size_t i = 0; i < n; i++) {
                if (l[i].renewed && !v[i]->lost) {
                        /* a shorter renewal (a wait) shortens it too */
                        atomic_store(&v[i]->lease_until_ms, sent + lease_ms);
                        continue;
                }
                atomic_store(&v[i]->lease_until_ms, GATEWAY_LEASE_LOST);
                if (v[i]->lost)
                        continue;
                v[i]->lost = true;
                r->st.lost++;
                reconcile_item_ctx(v[i], &lc);
                log_warn(&lc, "lease epoch %lld lost: acting on nothing more",
                         (long long)v[i]->p->lease_epoch);
        }
        free(l);
        return 0;
}

/* Holds each waiting payment for its backoff: the lease (still ours)
 * expires then and any reconciler takes it over again. */
static void act_waits(struct reconciler *r, struct reconcile_item **v, size_t n)
{
        for (size_t i = 0; i < n; i++) {
                struct reconcile_item *it = v[i];
                int64_t d                 = wait_ms(r, it);
                struct log_ctx lc;

                reconcile_item_ctx(it, &lc);
                r->st.still_unknown++;
                log_info(&lc,
                         "outcome still unknown (%s, %s): asking again in "
                         "%lld ms",
                         gateway_outcome_name(it->outcome), it->v.reason,
                         (long long)d);
                /* on failure the lease runs out at its old time anyway */
                CO_IGNORE(reconcile_lease_renew(r, &v[i], 1, d));
        }
}

static void act_reposts(struct reconciler *r, struct reconcile_item **v,
                        size_t n)
{
        /* only while the lease is ours, checked right before posting */
        if (reconcile_lease_renew(r, v, n, r->o.lease_ms) < 0) {
                for (size_t i = 0; i < n; i++)
                        reconcile_item_free(r, v[i]);
                return;
        }
        for (size_t i = 0; i < n; i++) {
                if (v[i]->lost) {
                        reconcile_item_free(r, v[i]);
                        continue;
                }
                v[i]->renewed_mono_ms = time_mono_ms();
                reconcile_ask_repost(r, v[i]);
        }
}

/* The evidence row of a judged item (strings borrowed from it). */
static void evidence_of(const struct reconciler *r,
                        const struct reconcile_item *it,
                        struct evidence_item *ev)
{
        ev->payment_id  = it->p->payment_id;
        ev->kind        = it->step == RECONCILE_STEP_QUERY ? "query" : "charge";
        ev->actor       = r->o.owner;
        ev->lease_epoch = it->p->lease_epoch;
        ev->request_summary    = it->summary;
        ev->http_status        = it->http_status;
        ev->transport_error    = it->transport;
        ev->outcome            = gateway_outcome_name(it->outcome);
        ev->provider_charge_id = it->charge_id[0] ? it->charge_id : NULL;
        ev->response_excerpt   = it->excerpt;
}

/* Acts on the n judged items of all[] whose evidence is stored: lost ones
 * are dropped, the others settled, held or posted again. */
static void act_on(struct reconciler *r, struct reconcile_item **all, size_t n,
                   struct reconcile_item **buf)
{
        struct reconcile_item **settles = buf, **waits = buf + n,
                              **reposts = buf + 2 * n;
        size_t ns = 0, nr = 0, nw = 0;

        for (size_t i = 0; i < n; i++) {
                struct reconcile_item *it = all[i];

                if (it->lost)
                        reconcile_item_free(r, it);
                else if (is_settle(it))
                        settles[ns++] = it;
                else if (it->v.action == RECONCILE_REPOST)
                        reposts[nr++] = it;
                else
                        waits[nw++] = it;
        }
        act_settles(r, settles, ns);
        act_waits(r, waits, nw);
        for (size_t i = 0; i < ns; i++)
                reconcile_item_free(r, settles[i]);
        for (size_t i = 0; i < nw; i++)
                reconcile_item_free(r, waits[i]);
        act_reposts(r, reposts, nr);
}

void reconcile_act_answered(struct reconciler *r)
{
        size_t n = r->answered.n;
        struct reconcile_item **all, **buf;
        struct evidence_item *ev;
        char err[512];
        struct log_ctx lc = LOG_CTX_INIT;

        if (n == 0)
                return;
        lc.component = "reconcile";
        all          = xcalloc(n, sizeof(*all));
        buf          = xcalloc(3 * n, sizeof(*buf));
        ev           = xcalloc(n, sizeof(*ev));
        /* every answer of this turn; a re-post refused at once below
         * queues for the next turn */
        for (size_t i = 0; i < n; i++)
                all[i] = FLOW_ENTRY(flow_queue_pop(&r->answered),
                                    struct reconcile_item, qnode);
        for (size_t i = 0; i < n; i++) {
                struct reconcile_item *it = all[i];

                reconcile_judge(r, it);
                if (is_settle(it) && reconcile_build_result(it) < 0) {
                        /* our own data is broken: never settle it blind */
                        it->v.action = RECONCILE_WAIT;
                        it->lost     = true;
                }
                evidence_of(r, it, &ev[i]);
        }
        /* the evidence first: no decision is acted on without its row */
        if (store_evidence_insert(r->db, ev, n, err, sizeof(err)) != STORE_OK) {
                log_error(&lc,
                          "storing the evidence of %zu answer(s) "
                          "failed (%s): left to lease expiry",
                          n, err);
                r->st.errors++;
                for (size_t i = 0; i < n; i++)
                        reconcile_item_free(r, all[i]);
                goto done;
        }
        act_on(r, all, n, buf);
done:
        free(all);
        free(buf);
        free(ev);
}
