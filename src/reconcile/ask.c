/* SPDX-License-Identifier: Apache-2.0 */
/*
 * reconcile/ask: the reconciler's questions to the gateway and what it
 * makes of the answers (see reconcile.h, reconcile_int.h).
 *
 * A gateway callback only records the answer and queues the item on
 * r->answered; the loop then judges it here (decide.c), with the text of
 * its evidence row and, for a settle, its result, and act.c acts on it.
 *
 * Must never: post again with another provider key, or without the lease
 * check the gateway client makes before every POST (lease_until_ms); turn
 * an answer into `failed` other than through decide.c; put untrusted text
 * into evidence or a result without cleaning it (valid UTF-8, no control
 * characters, cut on a code-point boundary); log a full key or the
 * payment method.
 */
#include "gateway/client.h"
#include "payment/identity.h"
#include "payment/result.h"
#include "reconcile/reconcile_int.h"
#include "store/store.h"
#include "util/jsonesc.h"
#include "util/log.h"
#include "util/timeutil.h"
#include "util/utf8.h"
#include "util/uuid.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Untrusted or bounded text into dst: valid UTF-8, no control character,
 * cut on a code-point boundary (gateway_text_clean). */
static void text_copy(char *dst, size_t dstsz, const char *src)
{
        gateway_text_clean(src, src ? strlen(src) : 0, dst, dstsz);
}

static void answered_push(struct reconciler *r, struct reconcile_item *it)
{
        flow_queue_push(&r->answered, &it->qnode, time_mono_us());
}

/* @locality: the loop thread, from gateway_poll() / gateway_destroy() */
static void on_answer(void *opaque, const struct gateway_result *res)
{
        struct reconcile_item *it = opaque;
        struct reconciler *r      = it->r;
        const struct gateway_attempt *last =
            res->n_evidence > 0 ? &res->evidence[res->n_evidence - 1] : NULL;

        it->at_gateway = false;
        r->at_gateway--;
        it->attempts += res->attempts;
        it->outcome     = res->outcome;
        it->http_status = res->http_status;
        it->transport   = last && last->transport != GW_TRANSPORT_OK
                              ? gateway_transport_name(last->transport)
                              : NULL;
        it->gw_reason   = res->reason;
        /* the client hands over checked identifiers and clean text; copy
         * them so that nothing here can cut them inside a character */
        text_copy(it->charge_id, sizeof(it->charge_id), res->charge_id);
        text_copy(it->error_code, sizeof(it->error_code), res->error_code);
        text_copy(it->error_message, sizeof(it->error_message),
                  res->error_message);
        if (gateway_evidence_json(res, it->attempts_json,
                                  sizeof(it->attempts_json)) < 0)
                snprintf(it->attempts_json, sizeof(it->attempts_json),
                         "\"too long\"");
        /* a succeeded charge without an id is no usable evidence */
        if (it->outcome == GW_SUCCEEDED && !it->charge_id[0])
                it->outcome = GW_UNKNOWN;
        answered_push(r, it);
}

/* A call the client refused to start: a defect of our own data. */
static void refused_call(struct reconciler *r, struct reconcile_item *it,
                         const char *err)
{
        struct log_ctx lc;

        reconcile_item_ctx(it, &lc);
        log_error(&lc, "gateway client refused the %s: %s",
                  it->step == RECONCILE_STEP_QUERY ? "query" : "re-post", err);
        it->outcome     = GW_DEFECT;
        it->http_status = 0;
        it->transport   = NULL;
        it->gw_reason   = "request refused by the client";
        snprintf(it->error_code, sizeof(it->error_code),
                 "gateway_request_invalid");
        text_copy(it->error_message, sizeof(it->error_message), err);
        snprintf(it->attempts_json, sizeof(it->attempts_json), "[]");
        answered_push(r, it);
}

void reconcile_ask_query(struct reconciler *r, struct reconcile_item *it)
{
        char err[256];

        it->step          = RECONCILE_STEP_QUERY;
        it->asked_mono_ms = time_mono_ms();
        it->at_gateway    = true;
        r->at_gateway++;
        if (gateway_query(r->gw, it->p->payment_id, it->p->amount,
                          it->p->currency, on_answer, it, err,
                          sizeof(err)) < 0) {
                it->at_gateway = false;
                r->at_gateway--;
                refused_call(r, it, err);
        }
}

void reconcile_ask_repost(struct reconciler *r, struct reconcile_item *it)
{
        struct gateway_charge_req req;
        char err[256];
        struct log_ctx lc;

        memset(&req, 0, sizeof(req));
        req.payment_id     = it->p->payment_id;
        req.provider_key   = it->p->provider_key; /* the same, always */
        req.tenant_id      = it->p->tenant_id;
        req.order_id       = it->p->order_id;
        req.currency       = it->p->currency;
        req.payment_method = it->p->payment_method;
        req.amount         = it->p->amount;
        req.resume         = true;
        /* checked before every POST of the call: a reconciler stopped
         * past its lease never sends the queued request */
        req.lease_until_ms = &it->lease_until_ms;
        it->step           = RECONCILE_STEP_CHARGE;
        it->asked_mono_ms  = time_mono_ms();
        it->at_gateway     = true;
        r->at_gateway++;
        r->st.reposted++;
        reconcile_item_ctx(it, &lc);
        log_info(&lc,
                 "posting again with the same provider key %s (lease epoch "
                 "%lld)",
                 it->pkey_masked, (long long)it->p->lease_epoch);
        if (gateway_charge(r->gw, &req, on_answer, it, err, sizeof(err)) < 0) {
                it->at_gateway = false;
                r->at_gateway--;
                refused_call(r, it, err);
        }
}

/* The status, error code and message a verdict gives the payment. */
static void verdict_fields(struct reconcile_item *it)
{
        char tmp[GW_ERROR_MESSAGE_SIZE + 256];

        it->res_code       = NULL;
        it->res_message[0] = '\0';
        switch (it->v.action) {
        case RECONCILE_SETTLE_SUCCEEDED:
                it->status = PAYMENT_STATUS_SUCCEEDED;
                break;
        case RECONCILE_SETTLE_FAILED:
                it->status = PAYMENT_STATUS_FAILED;
                it->res_code =
                    it->error_code[0] ? it->error_code : "payment_failed";
                text_copy(it->res_message, sizeof(it->res_message),
                          it->error_message[0] ? it->error_message
                                               : "the gateway refused the "
                                                 "payment");
                break;
        case RECONCILE_REVIEW:
                it->status = PAYMENT_STATUS_REVIEW;
                if (it->outcome == GW_DEFECT) {
                        it->res_code = it->error_code[0] ? it->error_code
                                                         : it->v.error_code;
                        /* the gateway's own words, if any, for the person
                         * who decides; cut on a code-point boundary */
                        snprintf(tmp, sizeof(tmp), "gateway defect: %s%s%s",
                                 it->gw_reason ? it->gw_reason : "?",
                                 it->error_message[0] ? ": " : "",
                                 it->error_message);
                        text_copy(it->res_message, sizeof(it->res_message),
                                  tmp);
                } else {
                        it->res_code = it->v.error_code;
                        text_copy(it->res_message, sizeof(it->res_message),
                                  it->v.reason);
                }
                break;
        default:
                it->status = PAYMENT_STATUS_PROCESSING;
                break;
        }
}

/* The evidence row's text: what was asked, what came back, what we did. */
static void evidence_text(struct reconcile_item *it,
                          const struct reconcile_facts *f)
{
        char reason[256], gwr[160];
        char code_esc[GW_ERROR_CODE_SIZE * 6],
            msg_esc[GW_ERROR_MESSAGE_SIZE * 6];
        const char *decision =
            it->lost ? "none" : reconcile_action_name(it->v.action);
        int n;

        json_escape(it->v.reason, strlen(it->v.reason), reason, sizeof(reason));
        json_escape(it->gw_reason ? it->gw_reason : "",
                    it->gw_reason ? strlen(it->gw_reason) : 0, gwr,
                    sizeof(gwr));
        json_escape(it->error_code, strlen(it->error_code), code_esc,
                    sizeof(code_esc));
        json_escape(it->error_message, strlen(it->error_message), msg_esc,
                    sizeof(msg_esc));
        n = snprintf(it->excerpt, sizeof(it->excerpt),
                     "{\"decision\":\"%s\",\"reason\":\"%s\",\"gateway_"
                     "reason\":\"%s\",\"error_code\":\"%s\",\"error_"
                     "message\":\"%s\",\"lease_lost\":%s,\"asked_age_ms\":"
                     "%lld,\"age_ms\":%lld,\"attempts\":%s}",
                     decision, reason, gwr, code_esc, msg_esc,
                     it->lost ? "true" : "false", (long long)f->asked_age_ms,
                     (long long)f->age_ms, it->attempts_json);
        /* the row must always be storable (a text column: valid UTF-8),
         * or the evidence insert fails and the payment is retaken forever;
         * every part above is bounded and clean, this is the last guard */
        if (n < 0 || (size_t)n >= sizeof(it->excerpt) ||
            !utf8_valid(it->excerpt, strlen(it->excerpt)))
                snprintf(it->excerpt, sizeof(it->excerpt),
                         "{\"decision\":\"%s\",\"reason\":\"%s\","
                         "\"lease_lost\":%s,\"excerpt\":\"too long\"}",
                         decision, reason, it->lost ? "true" : "false");
        if (it->step == RECONCILE_STEP_QUERY)
                snprintf(it->summary, sizeof(it->summary),
                         "GET /v1/charges?reference=%s", it->p->payment_id);
        else
                snprintf(it->summary, sizeof(it->summary),
                         "POST /v1/charges resume, Idempotency-Key %s",
                         it->pkey_masked);
}

void reconcile_judge(struct reconciler *r, struct reconcile_item *it)
{
        struct reconcile_facts f;

        f.step         = it->step;
        f.outcome      = it->outcome;
        f.asked_age_ms = reconcile_item_age(it, it->asked_mono_ms);
        f.age_ms       = reconcile_item_age(it, time_mono_ms());
        reconcile_decide(&f, &r->timing, &it->v);
        verdict_fields(it);
        evidence_text(it, &f);
}

int reconcile_build_result(struct reconcile_item *it)
{
        struct payment_result res;
        char now[40], err[256];
        size_t len;
        struct log_ctx lc;

        if (!payment_status_name(it->status))
                return -1;
        free(it->result_json);
        it->result_json = NULL;
        free(it->result_detail);
        it->result_detail = NULL;
        /* derived (payment/identity.h), as the consumer's */
        payment_result_event_id(it->p->payment_id,
                                payment_status_name(it->status),
                                it->result_event_id);
        rfc3339_format(time_wall_ms(), now, sizeof(now));
        memset(&res, 0, sizeof(res));
        res.event_id           = it->result_event_id;
        res.intent_event_id    = it->p->intent_event_id;
        res.tenant_id          = it->p->tenant_id;
        res.idempotency_key    = it->p->idem_key;
        res.order_id           = it->p->order_id;
        res.payment_id         = it->p->payment_id;
        res.status             = it->status;
        res.has_amount         = true;
        res.amount             = it->p->amount;
        res.currency           = it->p->currency;
        res.provider_charge_id = it->charge_id[0] ? it->charge_id : NULL;
        res.error_code         = it->res_code;
        res.error_message      = it->res_code ? it->res_message : NULL;
        res.replayed           = false;
        res.occurred_at        = now;
        if (payment_result_build(&res, &it->result_json, &len, err,
                                 sizeof(err)) < 0 ||
            payment_result_detail(&res, it->p->intent_event_id,
                                  &it->result_detail, &len, err,
                                  sizeof(err)) < 0) {
                reconcile_item_ctx(it, &lc);
                log_error(&lc, "cannot build the %s result: %s",
                          payment_status_name(it->status), err);
                return -1;
        }
        return 0;
}
