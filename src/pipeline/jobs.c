/* SPDX-License-Identifier: Apache-2.0 */
/*
 * pipeline/jobs: an item's way through the gateway and the database: the
 * claim (transaction 1), the charge with the same provider key on every
 * try, the settle (transaction 2, fenced), result-only writes, probes of
 * rejected copies and the renewal of the leases of payments at the
 * gateway. Loop thread only; database work runs on dbpool's threads and
 * comes back as finished jobs.
 *
 * Must never: call the gateway for an intent it did not claim as new;
 * report an unknown gateway outcome as failed; hold a transaction across a
 * gateway call; retry as it is a batch the database refused for its data.
 */
#include "gateway/presend.h"
#include "payment/result.h"
#include "pipeline/pipeline_int.h"
#include "util/failpoint.h"
#include "util/timeutil.h"
#include "util/xalloc.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>


/* ------------------------------------------------------------------ */
/* gateway                                                              */

static void settle_add(struct pipeline *pl, struct item *it)
{
        if (pipeline_build_result(pl, it, false, it->payment_id) < 0) {
                struct log_ctx lc;

                /* the payment stays processing; the reconciler settles it
                 * once the lease expires (never a stopped process) */
                pipeline_ctx(pl, it, &lc);
                log_error(&lc, "result cannot be built: payment left "
                               "processing for the reconciler");
                pl->st.unknown_left++;
                pipeline_finish(pl, it, true);
                return;
        }
        it->stage = ST_SETTLE;
        pipeline_queue(&pl->settles, it);
}

static void on_gateway_done(void *opaque, const struct gateway_result *res)
{
        struct item *it     = opaque;
        struct pipeline *pl = it->pl;
        struct log_ctx lc;

        it->attempts = res->attempts;
        pipeline_ctx(pl, it, &lc);
        if (FAILPOINT("gateway.after_answer") < 0) {
                log_warn(&lc, "failpoint gateway.after_answer: outcome "
                              "dropped, left to the reconciler");
                pl->st.unknown_left++;
                pipeline_finish(pl, it, true);
                return;
        }
        switch (res->outcome) {
        case GW_SUCCEEDED:
                it->status = PAYMENT_STATUS_SUCCEEDED;
                snprintf(it->charge_id, sizeof(it->charge_id), "%s",
                         res->charge_id);
                break;
        case GW_FAILED:
                it->status = PAYMENT_STATUS_FAILED;
                snprintf(it->charge_id, sizeof(it->charge_id), "%s",
                         res->charge_id);
                pipeline_set_error(
                    it, res->error_code[0] ? res->error_code : "payment_failed",
                    res->error_message[0] ? res->error_message
                                          : "the gateway refused the "
                                            "payment");
                break;
        case GW_DEFECT:
                /* never charge again, never call it failed: a person
                 * decides (docs/contract.md §4.4) */
                it->status = PAYMENT_STATUS_REVIEW;
                pipeline_set_error(
                    it, res->error_code[0] ? res->error_code : "gateway_defect",
                    res->reason ? res->reason
                                : "the gateway refused the request");
                log_error(&lc,
                          "gateway defect (HTTP %d, %s): payment goes to "
                          "review",
                          res->http_status, res->reason ? res->reason : "");
                break;
        default:
                /* unknown: stays processing under our lease, which we stop
                 * renewing; the reconciler takes it over when it expires
                 * and asks the gateway with the same key */
                log_warn(&lc,
                         "gateway outcome unknown after %d attempt(s) (%s); "
                         "left processing for the reconciler",
                         res->attempts, res->reason ? res->reason : "");
                pl->st.unknown_left++;
                pipeline_finish(pl, it, true);
                return;
        }
        settle_add(pl, it);
}

void pipeline_charge(struct pipeline *pl, struct item *it)
{
        struct gateway_charge_req req;
        char err[256];
        struct log_ctx lc;

        pipeline_ctx(pl, it, &lc);
        it->stage            = ST_CHARGE;
        it->lease_renewed_ms = time_mono_ms();
        if (pl->closing) {
                /* claimed, never sent: the reconciler finishes it */
                pipeline_finish(pl, it, true);
                return;
        }
        if (FAILPOINT("gateway.before_send") < 0) {
                log_warn(&lc, "failpoint gateway.before_send: not sent, left "
                              "to the reconciler");
                pl->st.unknown_left++;
                pipeline_finish(pl, it, true);
                return;
        }
        memset(&req, 0, sizeof(req));
        req.payment_id     = it->payment_id;
        req.provider_key   = it->provider_key;
        req.tenant_id      = it->in.tenant_id;
        req.order_id       = it->in.order_id;
        req.currency       = it->in.currency;
        req.payment_method = it->in.payment_method;
        req.amount         = it->in.amount;
        req.lease_until_ms = &it->lease_until_ms;
        /* Every payment may have been posted before, even a new claim:
         * the database may have lost an earlier life of it (a failover to
         * a standby that missed the commits, then a rewind), which the
         * derived payment id brings back with the same key and reference.
         * With a gateway that honours keys that is harmless; one that
         * ignores them is asked first (one GET per payment), so it never
         * charges the re-claim again. */
        req.resume = true;
        if (gateway_charge(pl->gw, &req, on_gateway_done, it, err,
                           sizeof(err)) < 0) {
                /* the request cannot be sent at all: a defect; the payment
                 * goes to review rather than anywhere near failed */
                it->status = PAYMENT_STATUS_REVIEW;
                pipeline_set_error(it, "gateway_request_invalid", err);
                log_error(&lc, "gateway request refused by the client: %s",
                          err);
                settle_add(pl, it);
        }
}

/* ------------------------------------------------------------------ */
/* database jobs                                                        */

/* A sift is read-only and takes no lock: a whole poll per statement
 * (each call has a fixed cost; measured 8.8 µs per event at 100). */
static size_t batch_size(const struct pipeline *pl, enum dbjob_kind kind)
{
        return kind == DBJOB_SIFT && pl->o.batch_size < POLL_BATCH
                   ? POLL_BATCH
                   : pl->o.batch_size;
}

static struct dbjob *job_from(struct pipeline *pl, struct flow_queue *b,
                              enum dbjob_kind kind)
{
        size_t size     = batch_size(pl, kind);
        size_t n        = b->n < size ? b->n : size;
        struct dbjob *j = dbjob_new(kind, n);

        for (size_t i = 0; i < n; i++) {
                struct item *it = pipeline_dequeue(b);
                j->owners[j->n] = it;
                switch (kind) {
                case DBJOB_CLAIM: {
                        struct claim_item *c = &j->claims[j->n];
                        c->event_id          = it->in.event_key;
                        c->tenant_id         = it->in.tenant_id;
                        c->idem_key          = it->in.idempotency_key;
                        memcpy(c->request_hash, it->in.request_hash,
                               sizeof(c->request_hash));
                        c->order_id       = it->in.order_id;
                        c->customer_id    = it->in.customer_id;
                        c->amount         = it->in.amount;
                        c->currency       = it->in.currency;
                        c->payment_method = it->in.payment_method;
                        c->topic          = pl->o.topic;
                        c->partition      = it->partition;
                        c->offset         = it->offset;
                        c->msg_digest     = pipeline_msg_digest(it);
                        break;
                }
                case DBJOB_SETTLE: {
                        struct settle_item *s = &j->settles[j->n];
                        s->payment_id         = it->payment_id;
                        s->lease_epoch        = it->lease_epoch;
                        s->lease_owner        = pl->o.owner;
                        s->status = it->status == PAYMENT_STATUS_SUCCEEDED
                                        ? SETTLE_SUCCEEDED
                                    : it->status == PAYMENT_STATUS_FAILED
                                        ? SETTLE_FAILED
                                        : SETTLE_REVIEW;
                        s->provider_charge_id =
                            it->charge_id[0] ? it->charge_id : NULL;
                        s->error_code =
                            it->error_code[0] ? it->error_code : NULL;
                        s->error_message =
                            it->error_code[0] ? it->error_message : NULL;
                        s->attempts        = it->attempts;
                        s->result_event_id = it->result_event_id;
                        s->result_json     = it->result_json;
                        s->result_detail   = it->result_detail;
                        break;
                }
                case DBJOB_OUTBOX: {
                        struct outbox_item *o = &j->outbox[j->n];
                        o->kind               = it->obx_kind;
                        o->result_event_id    = it->result_event_id;
                        o->intent_event_id    = it->in.event_key;
                        o->tenant_id          = it->in.tenant_id;
                        o->idem_key           = it->in.idempotency_key;
                        o->payment_id         = it->obx_kind == OUTBOX_REPLAY
                                                    ? it->replay_payment_id
                                                    : NULL;
                        o->replay_status      = it->obx_kind == OUTBOX_REPLAY
                                                    ? it->replay_status
                                                    : NULL;
                        o->result_json        = it->result_json;
                        o->topic              = pl->o.topic;
                        o->partition          = it->partition;
                        o->offset             = it->offset;
                        o->msg_digest         = pipeline_msg_digest(it);
                        break;
                }
                case DBJOB_PROBE: {
                        struct probe_item *q = &j->probes[j->n];
                        q->tenant_id         = it->in.tenant_id;
                        q->idem_key          = it->in.idempotency_key;
                        memcpy(q->request_hash, it->in.request_hash,
                               sizeof(q->request_hash));
                        break;
                }
                case DBJOB_SIFT:
                        pipeline_sift_fill(it, &j->sifts[j->n]);
                        break;
                case DBJOB_RENEW:
                        abort();
                }
                j->n++;
        }
        return j;
}

/* Answers it with the stored outcome of its finished intent (replayed). */
static void replay_stored(struct pipeline *pl, struct item *it,
                          const char *payment_id,
                          const struct store_outcome *stored)
{
        pl->st.replayed++;
        it->outcome = MI_REPLAYED;
        if (!payment_status_parse(stored->status, &it->status) ||
            !payment_status_is_result(it->status)) {
                pipeline_dead_letter(pl, it, "stored_outcome_invalid");
                return;
        }
        snprintf(it->replay_payment_id, sizeof(it->replay_payment_id), "%s",
                 payment_id);
        snprintf(it->replay_status, sizeof(it->replay_status), "%s",
                 stored->status);
        snprintf(it->charge_id, sizeof(it->charge_id), "%s",
                 stored->provider_charge_id ? stored->provider_charge_id : "");
        if (stored->error_code)
                pipeline_set_error(it, stored->error_code,
                                   stored->error_message ? stored->error_message
                                                         : "");
        pipeline_to_outbox(pl, it, OUTBOX_REPLAY, it->replay_payment_id);
}

/* A rejected copy whose hashed fields are valid, after the probe. */
static void on_probed(struct pipeline *pl, struct item *it,
                      const struct probe_item *q)
{
        struct log_ctx lc;

        switch (q->outcome) {
        case PROBE_FINAL:
                pipeline_ctx(pl, it, &lc);
                log_info(&lc,
                         "copy of a finished intent with a field now "
                         "rejected (%s): stored outcome replayed",
                         it->in.reason);
                replay_stored(pl, it, q->payment_id, &q->stored);
                return;
        case PROBE_PROCESSING:
                /* the first copy's result answers this one */
                pl->st.in_progress++;
                it->outcome = MI_IN_PROGRESS;
                pipeline_finish(pl, it, true);
                return;
        case PROBE_NONE:
                pipeline_reject(pl, it);
                return;
        }
        abort();
}

static void on_claimed(struct pipeline *pl, struct item *it,
                       struct claim_item *c, int64_t submit_ms)
{
        struct log_ctx lc;

        switch (c->outcome) {
        case CLAIM_NEW:
                pl->st.claimed++;
                it->outcome = MI_NEW;
                metrics_gauge_add(pl->o.metrics, METRIC_IN_FLIGHT, 1);
                snprintf(it->payment_id, sizeof(it->payment_id), "%s",
                         c->payment_id);
                snprintf(it->provider_key, sizeof(it->provider_key), "%s",
                         c->provider_key);
                it->lease_epoch = c->lease_epoch;
                atomic_store(&it->lease_until_ms, submit_ms + pl->o.lease_ms);
                pipeline_ctx(pl, it, &lc);
                log_debug(&lc, "claimed: payment processing, lease epoch %lld",
                          (long long)it->lease_epoch);
                pipeline_charge(pl, it);
                return;
        case CLAIM_IN_PROGRESS:
                /* the first copy's result answers this one */
                pl->st.in_progress++;
                it->outcome = MI_IN_PROGRESS;
                pipeline_ctx(pl, it, &lc);
                log_debug(&lc, "copy of an intent in progress: no result of "
                               "its own");
                pipeline_finish(pl, it, true);
                return;
        case CLAIM_DUP_EVENT:
                pl->st.dup_event++;
                it->outcome = MI_DUPLICATE_EVENT;
                pipeline_finish(pl, it, true);
                return;
        case CLAIM_REPLAY:
                replay_stored(pl, it, c->payment_id, &c->stored);
                return;
        case CLAIM_CONFLICT:
                pl->st.conflict++;
                it->outcome = MI_CONFLICT;
                it->status  = PAYMENT_STATUS_CONFLICT;
                pipeline_set_error(
                    it, "idempotency_key_reused",
                    "the idempotency key was already used in this "
                    "tenant for a different request");
                pipeline_ctx(pl, it, &lc);
                log_info(&lc, "idempotency key reused with another request "
                              "hash: conflict");
                pipeline_to_outbox(pl, it, OUTBOX_CONFLICT, NULL);
                return;
        }
        abort();
}

/*
 * A settle the database refused alone (a trigger, a constraint: it would
 * be refused again as it is) is parked: the payment goes to review with
 * the evidence — what the gateway answered (status, charge id) and what
 * the database said — so a person decides, and the rest goes on. Never
 * retried as it was, never failed, the charge id kept. A review the
 * database refuses too is left processing for the reconciler.
 */
static void park(struct pipeline *pl, struct item *it, const char *why)
{
        char msg[GW_ERROR_MESSAGE_SIZE + 512];
        struct log_ctx lc;

        pipeline_ctx(pl, it, &lc);
        /* cut to the error message's size by pipeline_set_error */
        snprintf(msg, sizeof(msg),
                 "the database refused to store the gateway's answer "
                 "(%s%s%s): %s",
                 payment_status_name(it->status), it->charge_id[0] ? ", " : "",
                 it->charge_id, why);
        log_error(&lc,
                  "settle refused by the database (%s): payment parked "
                  "in review with the evidence",
                  why);
        it->parking = true;
        it->status  = PAYMENT_STATUS_REVIEW;
        pipeline_set_error(it, "database_refused", msg);
        settle_add(pl, it);
}

/*
 * The database refused a batch for its data (STORE_ERR_DATA: it would fail
 * again as it is). A batch of several items is split: each item is sent
 * again alone, so the innocent ones go on. An item refused alone is the
 * guilty one: a claim or a result-only write is dead-lettered with reason
 * database_refused; a settle is parked in review (park). Counted
 * (chargeonce_db_refused_total), logged at error; never retried as it is.
 */
static void refused(struct pipeline *pl, struct dbjob *j, struct item *it)
{
        struct flow_queue one = { NULL, NULL, 0 };
        struct log_ctx lc;

        if (pl->closing) {
                pipeline_finish(pl, it, false);
                return;
        }
        if (j->n > 1) {
                pipeline_queue(&one, it);
                dbpool_submit(pl->db, job_from(pl, &one, j->kind));
                return;
        }
        pl->st.db_refused++;
        metrics_inc(pl->o.metrics, METRIC_DB_REFUSED,
                    j->kind == DBJOB_CLAIM    ? MR_CLAIM
                    : j->kind == DBJOB_SETTLE ? MR_SETTLE
                    : j->kind == DBJOB_PROBE  ? MR_PROBE
                                              : MR_RESULT);
        pipeline_ctx(pl, it, &lc);
        if (j->kind == DBJOB_PROBE) {
                log_error(&lc,
                          "probe refused by the database (%s): "
                          "answered rejected",
                          j->err);
                pipeline_reject(pl, it);
                return;
        }
        if (j->kind == DBJOB_SETTLE && !it->parking) {
                park(pl, it, j->err);
                return;
        }
        if (j->kind == DBJOB_SETTLE) {
                log_error(&lc,
                          "review refused by the database too (%s): "
                          "payment left processing for the reconciler",
                          j->err);
                pl->st.unknown_left++;
                pipeline_finish(pl, it, true);
                return;
        }
        log_error(&lc, "%s refused by the database: %s",
                  j->kind == DBJOB_CLAIM ? "claim" : "result", j->err);
        pipeline_dead_letter(pl, it, "database_refused");
}

/*
 * A renewal came back: the item still at the gateway with that payment
 * and epoch (if any: it may have finished meanwhile) holds its lease until
 * the renewal's send time + lease, or has lost it.
 */
static void lease_renewed(struct pipeline *pl, const struct lease_item *l,
                          int64_t submit_ms)
{
        struct log_ctx lc;

        for (struct flow_link *k = pl->all.head; k; k = k->next) {
                struct item *it = item_of_live(k);

                if (it->stage != ST_CHARGE ||
                    it->lease_epoch != l->lease_epoch ||
                    strcmp(it->payment_id, l->payment_id) != 0)
                        continue;
                if (l->renewed) {
                        atomic_store(&it->lease_until_ms,
                                     submit_ms + pl->o.lease_ms);
                        return;
                }
                atomic_store(&it->lease_until_ms, GATEWAY_LEASE_LOST);
                pipeline_ctx(pl, it, &lc);
                log_warn(&lc, "lease lost while at the gateway: no further "
                              "POST; its settle will be fenced");
                return;
        }
}

/*
 * The settle found no payment at all: the database lost the claim after
 * it committed (a failover to a standby that had not received it, a
 * restore). The gateway may have charged already. The intent is claimed
 * again, as a rewound group would deliver it: the payment id and the
 * provider key are derived from the intent (payment/identity.h), so the
 * claim recreates the very payment the gateway knows, which answers with
 * the charge it made; never a new key, never dropped. The item keeps its
 * place in its key's queue and its offset stays open meanwhile.
 */
static void reclaim(struct pipeline *pl, struct item *it)
{
        struct log_ctx lc;

        pipeline_ctx(pl, it, &lc);
        log_error(&lc, "payment gone from the database at its settle (the "
                       "database lost committed writes: a failover?); claiming "
                       "the intent again, same payment id and provider key");
        pl->st.reclaimed++;
        metrics_inc(pl->o.metrics, METRIC_PAYMENTS_RECLAIMED, 0);
        metrics_gauge_add(pl->o.metrics, METRIC_IN_FLIGHT, -1);
        memset(it->payment_id, 0, sizeof(it->payment_id));
        memset(it->provider_key, 0, sizeof(it->provider_key));
        it->lease_epoch   = 0;
        it->attempts      = 0;
        it->outcome       = -1;
        it->charge_id[0]  = '\0';
        it->error_code[0] = '\0';
        free(it->result_json);
        it->result_json = NULL;
        free(it->result_detail);
        it->result_detail = NULL;
        if (pl->closing) {
                /* left to a rewind, as an unclaimed message always is */
                pipeline_finish(pl, it, false);
                return;
        }
        it->stage = ST_CLAIM;
        pipeline_queue(&pl->claims, it);
}

/*
 * A replay whose payment moved since its claim read it (a review resolved
 * meanwhile): nothing was written; the event is claimed again and
 * answered with what the payment holds now.
 */
static void claim_again(struct pipeline *pl, struct item *it)
{
        struct log_ctx lc;

        pipeline_ctx(pl, it, &lc);
        log_info(&lc, "the replayed outcome changed before it was written "
                      "(a review resolved): claiming the copy again");
        pl->st.replayed--;
        it->outcome          = -1;
        it->charge_id[0]     = '\0';
        it->error_code[0]    = '\0';
        it->replay_status[0] = '\0';
        free(it->result_json);
        it->result_json = NULL;
        free(it->result_detail);
        it->result_detail = NULL;
        if (pl->closing) {
                pipeline_finish(pl, it, false);
                return;
        }
        /* a rejected copy (its hashed fields intact) is looked at again
         * by the probe, any other by the claim */
        if (it->in.verdict == INTENT_REJECTED) {
                it->stage = ST_PROBE;
                pipeline_queue(&pl->probes, it);
                return;
        }
        it->stage = ST_CLAIM;
        pipeline_queue(&pl->claims, it);
}

/* The settle of it committed: counted by its final status. */
static void settled_ok(struct pipeline *pl, const struct item *it)
{
        unsigned f = MF_REVIEW;

        if (it->status == PAYMENT_STATUS_SUCCEEDED) {
                pl->st.succeeded++;
                f = MF_SUCCEEDED;
        } else if (it->status == PAYMENT_STATUS_FAILED) {
                pl->st.failed++;
                f = MF_FAILED;
        } else {
                pl->st.review++;
        }
        metrics_inc(pl->o.metrics, METRIC_PAYMENTS_FINISHED, f);
}

void pipeline_on_job_done(struct pipeline *pl, struct dbjob *j)
{
        size_t dups = 0;

        if (j->rc == STORE_ERR_SCHEMA) {
                struct log_ctx lc = LOG_CTX_INIT;

                lc.component = "consume";
                if (!pl->fatal)
                        log_error(&lc,
                                  "the database cannot run this "
                                  "binary's statements (%s); stopping",
                                  j->err);
                pl->fatal = true;
                /* nothing of it was written: left to redelivery */
                if (j->kind == DBJOB_SIFT)
                        pipeline_sift_done(pl, j); /* given up */
                else if (j->kind != DBJOB_RENEW)
                        for (size_t i = 0; i < j->n; i++)
                                pipeline_finish(pl, j->owners[i], false);
                dbjob_free(j);
                return;
        }

        if (j->kind == DBJOB_SIFT) {
                pipeline_sift_done(pl, j);
                dbjob_free(j);
                return;
        }
        for (size_t i = 0; i < j->n; i++) {
                struct item *it = j->owners[i];
                struct log_ctx lc;

                if (j->kind == DBJOB_RENEW) {
                        if (j->rc == STORE_OK)
                                lease_renewed(pl, &j->leases[i],
                                              j->t_submit_us / 1000);
                        continue;
                }
                if (j->rc == STORE_ERR_DATA) {
                        refused(pl, j, it);
                        continue;
                }
                if (j->rc != STORE_OK) {
                        /* only when the pool gave up at shutdown */
                        pipeline_finish(pl, it, false);
                        continue;
                }
                switch (j->kind) {
                case DBJOB_CLAIM:
                        dups += j->claims[i].outcome == CLAIM_DUP_EVENT;
                        on_claimed(pl, it, &j->claims[i],
                                   j->t_submit_us / 1000);
                        break;
                case DBJOB_SETTLE:
                        pipeline_ctx(pl, it, &lc);
                        switch (j->settles[i].outcome) {
                        case SETTLE_OK:
                                settled_ok(pl, it);
                                log_debug(&lc, "settled %s",
                                          payment_status_name(it->status));
                                break;
                        case SETTLE_ALREADY:
                                pl->st.settled_already++;
                                break;
                        case SETTLE_FENCED:
                                if (!j->settles[i].current_status[0]) {
                                        reclaim(pl, it);
                                        continue;
                                }
                                pl->st.fenced++;
                                metrics_inc(pl->o.metrics,
                                            METRIC_SETTLES_FENCED, 0);
                                log_warn(
                                    &lc,
                                    "settle fenced: lease epoch %lld "
                                    "lost (now %s, epoch %lld); the "
                                    "new owner finishes it",
                                    (long long)it->lease_epoch,
                                    j->settles[i].current_status,
                                    (long long)j->settles[i].current_epoch);
                                break;
                        }
                        pipeline_finish(pl, it, true);
                        break;
                case DBJOB_OUTBOX:
                        if (j->outbox[i].stale) {
                                claim_again(pl, it);
                                break;
                        }
                        pipeline_finish(pl, it, true);
                        break;
                case DBJOB_PROBE:
                        on_probed(pl, it, &j->probes[i]);
                        break;
                case DBJOB_RENEW:
                case DBJOB_SIFT:
                        break;
                }
        }
        /* a batch mostly of recorded events: a replay; sift the next
         * polls (a sift batch mostly not byte for byte recorded turns it
         * off, for SIFT_QUIET_MS) */
        if (j->kind == DBJOB_CLAIM && j->rc == STORE_OK && j->n > 0 &&
            dups * 2 >= j->n && time_mono_ms() >= pl->sift_quiet_until_ms)
                pl->sift_on = true;
        dbjob_free(j);
}

/* Submits the batches that are full or have waited long enough, as long
 * as the database workers are not already saturated. */
void pipeline_flush_batches(struct pipeline *pl, bool force)
{
        struct {
                struct flow_queue *q;
                enum dbjob_kind kind;
        } order[]   = { { &pl->settles, DBJOB_SETTLE },
                        { &pl->outbox, DBJOB_OUTBOX },
                        { &pl->probes, DBJOB_PROBE },
                        { &pl->sifts, DBJOB_SIFT },
                        { &pl->claims, DBJOB_CLAIM } };
        int64_t now = time_mono_us();

        for (size_t k = 0; k < sizeof(order) / sizeof(*order); k++) {
                struct flow_queue *q = order[k].q;
                while (dbpool_outstanding(pl->db) < pl->max_jobs &&
                       flow_queue_ready(q, batch_size(pl, order[k].kind),
                                        pl->o.linger_us, now, force,
                                        dbpool_outstanding(pl->db) == 0))
                        dbpool_submit(pl->db, job_from(pl, q, order[k].kind));
        }
}

/* ------------------------------------------------------------------ */
/* leases                                                               */

/*
 * Extends the leases of payments still at the gateway, every lease/3, so a
 * slow but live owner keeps them; an owner that died stops renewing and
 * the reconciler takes over once the lease expires.
 */
void pipeline_renew_leases(struct pipeline *pl)
{
        int64_t now     = time_mono_ms();
        struct dbjob *j = NULL;
        size_t n        = 0;

        if (!flow_renew_round(&pl->renew, now))
                return;
        for (struct flow_link *k = pl->all.head; k; k = k->next) {
                struct item *it = item_of_live(k);
                if (it->stage == ST_CHARGE &&
                    flow_renew_due(&pl->renew, it->lease_renewed_ms, now))
                        n++;
        }
        if (n == 0)
                return;
        j = dbjob_new(DBJOB_RENEW, n);
        for (struct flow_link *k = pl->all.head; k && j->n < n; k = k->next) {
                struct item *it = item_of_live(k);
                if (it->stage != ST_CHARGE ||
                    !flow_renew_due(&pl->renew, it->lease_renewed_ms, now))
                        continue;
                it->lease_renewed_ms        = now;
                j->leases[j->n].payment_id  = xstrdup(it->payment_id);
                j->leases[j->n].lease_epoch = it->lease_epoch;
                j->n++;
        }
        dbpool_submit(pl->db, j);
}
