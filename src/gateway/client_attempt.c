/* SPDX-License-Identifier: Apache-2.0 */
/*
 * client_attempt: the state machine of one gateway call. Before an attempt:
 * may this POST still go out (deadline, every holder's lease). After it:
 * classify the answer, keep the evidence, then finish the call or wait for
 * the next attempt as the retry policy says (in keys mode the same POST
 * again; with a gateway that ignores keys a query by reference first).
 *
 * Must never:
 *  - report a timeout, reset, refused connection or 5xx as FAILED (when the
 *    budget is spent without evidence the call ends UNKNOWN);
 *  - POST again to a gateway that ignores keys unless a query listed no
 *    charge, or take a 402 to a re-POST as final before a query shows no
 *    succeeded charge;
 *  - send a POST past the deadline or while a holder's lease is lost or
 *    ends within the margin;
 *  - start a transfer from gateway_attempt_done() (gateway_poll() starts them).
 */
#include "gateway/client_int.h"

#include "util/metrics.h"
#include "util/timeutil.h"

#include <errno.h>
#include <string.h>

/* ---- jitter source (splitmix64) ---- */

static uint64_t gw_rand(void *opaque)
{
        uint64_t *s = opaque, z;

        z = (*s += 0x9e3779b97f4a7c15ULL);
        z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
        z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
        return z ^ (z >> 31);
}

/* ---- before an attempt ---- */

/* gateway_send_check() for the call c with the lease of holder (c or one of
 * the calls merged into it). */
static enum gw_send_check send_check(const struct gw_call *c,
                                     const struct gw_call *holder, int64_t now)
{
        const struct gateway *gw = c->gw;
        int64_t until =
            holder->lease_until ? atomic_load(holder->lease_until) : 0;

        return gateway_send_check(
            now, c->started_ms, gw->opts.retry.deadline_ms,
            holder->lease_until != NULL, until, gw->opts.lease_margin_ms);
}

/*
 * The check right before a POST (presend.h): the call's deadline, and the
 * lease of the leader and of every call merged into it (one of them may
 * have lost it: then another worker may own the payment).
 */
static enum gw_send_check may_post(const struct gw_call *c, int64_t now)
{
        enum gw_send_check chk = send_check(c, c, now);
        const struct gw_call *f;

        for (f = c->followers; f && chk == GW_SEND_OK; f = f->fnext)
                chk = send_check(c, f, now);
        return chk;
}

void gateway_attempt_start(struct gw_call *c)
{
        struct gateway *gw = c->gw;
        struct log_ctx ctx = gateway_call_ctx(c);
        int err;

        if (c->next_post) {
                enum gw_send_check chk = may_post(c, time_mono_ms());

                if (chk != GW_SEND_OK) {
                        /* nothing goes out: the payment stays processing
                         * and the reconciler (or the lease's new owner)
                         * settles it */
                        log_warn(&ctx, "%s (%d POST(s) sent before)",
                                 gateway_send_check_reason(chk), c->res.posts);
                        c->res.not_sent = true;
                        gateway_call_finish(c, GW_UNKNOWN,
                                            gateway_send_check_reason(chk));
                        return;
                }
        }
        gateway_list_del(&gw->waiting, c);
        c->state      = CALL_ACTIVE;
        c->attempt_ms = time_mono_ms();
        c->attempt_us = time_mono_us();
        gateway_list_push(&gw->active, c);
        c->res.attempts++;
        if (c->next_post)
                c->res.posts++;
        err = gateway_easy_setup(c);
        if (err == 0 && curl_multi_add_handle(gw->multi, c->easy) != CURLM_OK)
                err = -EIO;
        if (err) {
                /* nothing was sent; still no evidence either way */
                log_warn(&ctx, "could not start a gateway transfer (%d)", err);
                if (c->easy) {
                        curl_easy_cleanup(c->easy);
                        c->easy = NULL;
                }
                gateway_attempt_done(c, GW_TRANSPORT_OTHER, 0);
                return;
        }
        log_debug(&ctx, "gateway %s attempt %d", c->next_post ? "POST" : "GET",
                  c->res.attempts);
}

/* ---- after an attempt ---- */

static void evidence_add(struct gw_call *c, const struct gateway_attempt *a)
{
        struct gateway_result *r = &c->res;

        if (r->n_evidence < GATEWAY_EVIDENCE_MAX) {
                r->evidence[r->n_evidence++] = *a;
        } else {
                r->evidence[GATEWAY_EVIDENCE_MAX - 1] = *a;
                r->evidence_dropped++;
        }
}

/* The result label of an attempt: how its transport ended, else what
 * the classification made of the answer. */
static unsigned metric_result(enum gw_transport t, enum gw_outcome o)
{
        if (t == GW_TRANSPORT_TIMEOUT)
                return MG_TIMEOUT;
        if (t != GW_TRANSPORT_OK)
                return MG_TRANSPORT_ERROR;
        switch (o) {
        case GW_SUCCEEDED:
                return MG_SUCCEEDED;
        case GW_FAILED:
                return MG_FAILED;
        case GW_IN_PROGRESS:
                return MG_IN_PROGRESS;
        case GW_RETRY_AFTER:
                return MG_RATE_LIMITED;
        case GW_DEFECT:
                return MG_DEFECT;
        case GW_NOT_FOUND:
                return MG_NOT_FOUND;
        case GW_UNKNOWN:
                break;
        }
        return MG_UNKNOWN;
}

/* Every attempt that ended (once each), by result, and its duration. */
static void attempt_count(struct gw_call *c, enum gw_transport transport,
                          enum gw_outcome outcome)
{
        struct metrics *m = c->gw->opts.metrics;

        metrics_inc(m, METRIC_GATEWAY_REQUESTS,
                    metric_result(transport, outcome));
        metrics_observe(m, METRIC_GATEWAY_DURATION,
                        (double)(time_mono_us() - c->attempt_us) / 1e6);
}

/* Classifies the answer of the attempt that ended at now into v, keeps it
 * as evidence and in c's result. */
static void attempt_classify(struct gw_call *c, enum gw_transport transport,
                             int http_status, int64_t now, struct gw_verdict *v)
{
        struct gw_answer a        = { 0 };
        struct gateway_attempt ev = { 0 };
        bool was_post             = c->next_post;

        a.transport        = transport;
        a.http_status      = http_status;
        a.retry_after      = c->have_retry_after ? c->retry_after : NULL;
        a.replayed         = c->replayed;
        a.body             = c->resp.data;
        a.body_len         = c->resp.len;
        a.expect_reference = c->reference;
        a.expect_amount    = c->amount;
        a.expect_currency  = c->currency;
        if (was_post)
                gateway_classify_charge(&a, v);
        else
                gateway_classify_query(&a, v);

        ev.post        = was_post;
        ev.transport   = transport;
        ev.http_status = http_status;
        ev.outcome     = v->outcome;
        ev.replayed    = c->replayed;
        ev.at_ms       = c->attempt_ms - c->started_ms;
        ev.duration_ms = now - c->attempt_ms;
        evidence_add(c, &ev);
        attempt_count(c, transport, v->outcome);

        c->res.http_status = http_status;
        if (v->retry_after_ms >= 0)
                c->res.retry_after_ms = v->retry_after_ms;
        if (v->outcome == GW_SUCCEEDED || v->outcome == GW_FAILED ||
            v->outcome == GW_DEFECT) {
                memcpy(c->res.charge_id, v->charge_id, sizeof(v->charge_id));
                memcpy(c->res.error_code, v->error_code, sizeof(v->error_code));
                memcpy(c->res.error_message, v->error_message,
                       sizeof(v->error_message));
        }
}

/*
 * The query after a 402 to a re-POST (ignore-keys mode): an earlier POST
 * of this payment may have charged it. Never POSTs again.
 */
static void confirm_done(struct gw_call *c, const struct gw_verdict *v,
                         int64_t elapsed)
{
        struct gateway *gw = c->gw;
        struct retry_decision d;

        switch (v->outcome) {
        case GW_SUCCEEDED: {
                struct log_ctx ctx = gateway_call_ctx(c);

                log_warn(&ctx, "a re-POST was refused, but an earlier "
                               "POST of this payment charged it");
                c->res.error_code[0]    = '\0';
                c->res.error_message[0] = '\0';
                gateway_call_finish(c, GW_SUCCEEDED,
                                    "re-POST refused; the query lists the "
                                    "earlier charge");
                return;
        }
        case GW_FAILED:
        case GW_NOT_FOUND:
                memcpy(c->res.charge_id, c->refusal.charge_id,
                       sizeof(c->res.charge_id));
                memcpy(c->res.error_code, c->refusal.error_code,
                       sizeof(c->res.error_code));
                memcpy(c->res.error_message, c->refusal.error_message,
                       sizeof(c->res.error_message));
                gateway_call_finish(c, GW_FAILED,
                                    "final refusal, confirmed by a query: no "
                                    "succeeded charge listed");
                return;
        case GW_DEFECT:
                gateway_call_finish(c, GW_DEFECT, v->reason);
                return;
        default:
                break; /* no evidence: ask again, never POST */
        }
        d = payment_retry_decide(
            &gw->opts.retry, gateway_outcome_retry_class(v->outcome),
            c->res.attempts, elapsed, v->retry_after_ms, gw_rand, &gw->rng);
        if (d.verdict != RETRY_AGAIN) {
                gateway_call_finish(c, GW_UNKNOWN,
                                    "a re-POST was refused and no query "
                                    "confirmed it");
                return;
        }
        gateway_call_wait(c, d.delay_ms);
}

/*
 * A gateway that ignores keys refused a POST that may not be the payment's
 * first: the refusal is about this POST only, an earlier one may have
 * charged (its answer lost, the list late).
 */
static bool refusal_needs_confirm(const struct gw_call *c,
                                  const struct gw_verdict *v, bool was_post)
{
        return was_post && v->outcome == GW_FAILED &&
               !c->gw->opts.idempotency_keys && c->kind == CALL_CHARGE &&
               (c->resumed || c->res.posts > 1);
}

/* Final only once a query lists no succeeded charge; never POST again. */
static void confirm_start(struct gw_call *c, const struct gw_verdict *v,
                          int64_t elapsed)
{
        struct gateway *gw = c->gw;
        int64_t delay      = gw->opts.query_settle_ms;

        if (c->res.attempts >= gw->opts.retry.max_attempts ||
            elapsed + delay > gw->opts.retry.deadline_ms) {
                gateway_call_finish(c, GW_UNKNOWN,
                                    "a re-POST was refused and there is no "
                                    "budget left to confirm it");
                return;
        }
        c->refusal    = *v;
        c->confirming = true;
        c->next_post  = false;
        gateway_call_wait(c, delay);
}

/* Ignore-keys charge, the query listed nothing: the evidence that nothing
 * was charged; post now if the budget allows. */
static void post_after_not_found(struct gw_call *c, int64_t elapsed)
{
        struct gateway *gw = c->gw;

        if (c->res.attempts >= gw->opts.retry.max_attempts ||
            elapsed >= gw->opts.retry.deadline_ms) {
                gateway_call_finish(c, GW_UNKNOWN,
                                    "budget spent; the last query listed no "
                                    "charge");
                return;
        }
        c->next_post = true;
        gateway_call_wait(c, 0);
}

/* No evidence yet: the retry policy says when to go again, or to give up
 * as unknown. */
static void retry_or_give_up(struct gw_call *c, const struct gw_verdict *v,
                             int64_t elapsed, bool was_post)
{
        struct gateway *gw = c->gw;
        struct retry_decision d;

        d = payment_retry_decide(
            &gw->opts.retry, gateway_outcome_retry_class(v->outcome),
            c->res.attempts, elapsed, v->retry_after_ms, gw_rand, &gw->rng);
        if (d.verdict != RETRY_AGAIN) {
                gateway_call_finish(c, GW_UNKNOWN, d.reason);
                return;
        }
        if (c->kind == CALL_CHARGE && !gw->opts.idempotency_keys && was_post) {
                /* a gateway that ignores keys: ask before posting again,
                 * and give a request still in the works time to show up */
                int64_t delay = d.delay_ms;

                if (delay < gw->opts.query_settle_ms)
                        delay = gw->opts.query_settle_ms;
                if (delay > gw->opts.retry.deadline_ms - elapsed) {
                        gateway_call_finish(c, GW_UNKNOWN,
                                            "no time left to query before a "
                                            "re-POST");
                        return;
                }
                c->next_post = false;
                gateway_call_wait(c, delay);
                return;
        }
        gateway_call_wait(c, d.delay_ms);
}

void gateway_attempt_done(struct gw_call *c, enum gw_transport transport,
                          int http_status)
{
        struct gw_verdict v;
        int64_t now     = time_mono_ms();
        int64_t elapsed = now - c->started_ms;
        bool was_post   = c->next_post;

        attempt_classify(c, transport, http_status, now, &v);
        if (c->confirming && !was_post) {
                confirm_done(c, &v, elapsed);
                return;
        }
        if (refusal_needs_confirm(c, &v, was_post)) {
                confirm_start(c, &v, elapsed);
                return;
        }
        if (v.outcome == GW_SUCCEEDED && v.succeeded_charges > 1) {
                struct log_ctx ctx = gateway_call_ctx(c);
                log_error(&ctx,
                          "gateway lists %d succeeded charges for one "
                          "reference",
                          v.succeeded_charges);
        }

        switch (v.outcome) {
        case GW_SUCCEEDED:
        case GW_FAILED:
        case GW_DEFECT:
                gateway_call_finish(c, v.outcome, v.reason);
                return;
        case GW_NOT_FOUND:
                if (c->kind == CALL_QUERY)
                        gateway_call_finish(c, GW_NOT_FOUND, v.reason);
                else
                        post_after_not_found(c, elapsed);
                return;
        case GW_UNKNOWN:
        case GW_IN_PROGRESS:
        case GW_RETRY_AFTER:
                break;
        }
        retry_or_give_up(c, &v, elapsed, was_post);
}
