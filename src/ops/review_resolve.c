/* SPDX-License-Identifier: Apache-2.0 */
/*
 * ops/review_resolve: `chargeonce review resolve` (review.h):
 *
 *   1. the payment is read: not found or not in review -> refused (1);
 *   2. the gateway is asked once (gateway_query: GET ?reference=, a few
 *      attempts at most) and payment/review_rule.c judges the decision
 *      against its answer: a contradiction is refused (1), nothing
 *      written; no answer is refused unless --without-gateway;
 *   3. a dry run stops here and says what it would write;
 *   4. store_review_resolve finishes it in one transaction, only if it is
 *      still in review then (a webhook or another resolve may win: 1),
 *      and what it changed is printed.
 *
 * The arguments were checked by cmd/review.c before anything is
 * contacted (exit 2).
 */
#include "ops/review.h"
#include "ops/review_int.h"

#include "ops/progress.h"
#include "payment/review_rule.h"
#include "store/review.h"
#include "store/store.h"
#include "util/log.h"
#include "util/timeutil.h"
#include "util/xalloc.h"

#include <inttypes.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define CMD "review resolve"
/* One question: a few attempts at most, and never long. */
#define RESOLVE_MAX_ATTEMPTS 3
#define RESOLVE_DEADLINE_MS  30000

/* What the gateway answered (copied in the callback). */
struct answer {
        bool done;
        enum gw_outcome outcome;
        int http_status;
        int attempts;
        char charge_id[GW_CHARGE_ID_SIZE];
        char error_code[GW_ERROR_CODE_SIZE];
        char error_message[GW_ERROR_MESSAGE_SIZE];
        const char *reason;
        const char *transport; /* of the last attempt, or NULL */
};

/* @locality: the calling thread, from gateway_poll() */
static void on_answer(void *opaque, const struct gateway_result *res)
{
        struct answer *an = opaque;
        const struct gateway_attempt *last =
            res->n_evidence > 0 ? &res->evidence[res->n_evidence - 1] : NULL;

        an->done        = true;
        an->outcome     = res->outcome;
        an->http_status = res->http_status;
        an->attempts    = res->attempts;
        an->reason      = res->reason;
        an->transport   = last && last->transport != GW_TRANSPORT_OK
                              ? gateway_transport_name(last->transport)
                              : NULL;
        /* checked identifiers and clean text (gateway/classify.h) */
        snprintf(an->charge_id, sizeof(an->charge_id), "%s", res->charge_id);
        snprintf(an->error_code, sizeof(an->error_code), "%s", res->error_code);
        snprintf(an->error_message, sizeof(an->error_message), "%s",
                 res->error_message);
}

/*
 * Asks GET /v1/charges?reference=<payment> once. Returns 0 (an->done),
 * or 2 for a gateway configuration the client refuses.
 */
static int ask(const struct ops_review_opts *o,
               const struct store_review_payment *p, struct answer *an,
               bool quiet)
{
        struct gateway_opts go = *o->gateway;
        struct progress pr;
        struct gateway *gw;
        char err[512];

        memset(an, 0, sizeof(*an));
        if (go.retry.max_attempts > RESOLVE_MAX_ATTEMPTS)
                go.retry.max_attempts = RESOLVE_MAX_ATTEMPTS;
        if (go.retry.deadline_ms > RESOLVE_DEADLINE_MS)
                go.retry.deadline_ms = RESOLVE_DEADLINE_MS;
        if (!(gw = gateway_new(&go, err, sizeof(err)))) {
                fprintf(stderr, "chargeonce " CMD ": gateway: %s\n", err);
                return 2;
        }
        progress_init(&pr, stderr, "review resolve", quiet);
        if (gateway_query(gw, p->row.payment_id, p->row.amount, p->row.currency,
                          on_answer, an, err, sizeof(err)) < 0) {
                /* our own data refused: no answer (an->done stays false) */
                an->reason = "the query could not be made";
                fprintf(stderr, "chargeonce " CMD ": gateway: %s\n", err);
        } else {
                int64_t t0 = time_mono_ms();

                while (!an->done) {
                        if (gateway_poll(gw, 100) < 0)
                                break;
                        progress_update(&pr,
                                        "asking the gateway (%" PRId64 " s)",
                                        (time_mono_ms() - t0) / 1000);
                }
                progress_done(&pr, "the gateway answered: %s",
                              an->done ? gateway_outcome_name(an->outcome)
                                       : "nothing");
        }
        gateway_destroy(gw); /* an answer not in yet is GW_UNKNOWN */
        return 0;
}

static enum payment_review_answer answer_kind(const struct answer *an)
{
        if (!an->done)
                return PAYMENT_REVIEW_NO_ANSWER;
        switch (an->outcome) {
        case GW_SUCCEEDED:
                return PAYMENT_REVIEW_LISTS_SUCCEEDED;
        case GW_FAILED:
                return PAYMENT_REVIEW_LISTS_FAILED;
        case GW_NOT_FOUND:
                return PAYMENT_REVIEW_LISTS_NONE;
        default:
                return PAYMENT_REVIEW_NO_ANSWER;
        }
}

/* What the gateway said, for the evidence row and --json (owned). */
static json_t *answer_json(const struct answer *an, bool asked,
                           const struct payment_review_verdict *v,
                           bool without_gateway, bool past_retention)
{
        json_t *o = json_object();

        if (!o)
                xalloc_die();
        json_object_set_new(o, "asked", json_boolean(asked));
        json_object_set_new(o, "answered", json_boolean(an->done));
        json_object_set_new(
            o, "outcome",
            json_string(an->done ? gateway_outcome_name(an->outcome) : "none"));
        json_object_set_new(o, "http_status", json_integer(an->http_status));
        json_object_set_new(o, "attempts", json_integer(an->attempts));
        if (an->reason)
                json_object_set_new(o, "reason", json_string(an->reason));
        if (an->transport)
                json_object_set_new(o, "transport", json_string(an->transport));
        if (an->charge_id[0])
                json_object_set_new(o, "charge_id", json_string(an->charge_id));
        if (an->error_code[0])
                json_object_set_new(o, "error_code",
                                    json_string(an->error_code));
        json_object_set_new(o, "past_key_retention",
                            json_boolean(past_retention));
        json_object_set_new(o, "without_gateway",
                            json_boolean(without_gateway));
        json_object_set_new(o, "decision", json_string(v->reason));
        return o;
}

static int refuse(const struct ops_review_resolve *a, const char *why,
                  json_t *gw)
{
        fprintf(stderr,
                "chargeonce " CMD ": refused: %s; nothing was written\n", why);
        if (a->json) {
                json_t *doc = json_object();

                if (!doc)
                        xalloc_die();
                json_object_set_new(doc, "payment_id",
                                    json_string(a->payment_id));
                json_object_set_new(doc, "resolved", json_false());
                json_object_set_new(doc, "refused", json_string(why));
                if (gw)
                        json_object_set(doc, "gateway", gw);
                json_dumpf(doc, stdout, JSON_INDENT(2));
                putchar('\n');
                json_decref(doc);
        }
        json_decref(gw);
        return 1;
}


/* The common tail of the --json answers: the masked key, the actor, the
 * gateway's evidence; printed and freed. */
static void print_doc(json_t *doc, const char *masked, const char *actor,
                      json_t *gw)
{
        json_object_set_new(doc, "idempotency_key_masked", json_string(masked));
        json_object_set_new(doc, "actor", json_string(actor));
        json_object_set(doc, "gateway", gw);
        json_dumpf(doc, stdout, JSON_INDENT(2));
        putchar('\n');
        json_decref(doc);
}
/* Steps 4: the transaction and what is said about it. */
static int apply(struct store *st, const struct ops_review_resolve *a,
                 const struct store_review_payment *p, const char *actor,
                 const struct answer *an,
                 const struct payment_review_verdict *v, json_t *gw)
{
        struct store_review_resolve_in in;
        struct store_review_resolve_out out;
        char *excerpt = json_dumps(gw, JSON_COMPACT);
        char err[512], m[LOG_MASKED_KEY_SIZE], why[160], gwo[80];
        bool failed_listed = answer_kind(an) == PAYMENT_REVIEW_LISTS_FAILED;
        int rc;

        memset(&in, 0, sizeof(in));
        in.payment_id         = a->payment_id;
        in.succeeded          = a->as_succeeded;
        in.provider_charge_id = v->charge_id;
        in.error_code =
            failed_listed && an->error_code[0] ? an->error_code : NULL;
        in.error_message =
            failed_listed && an->error_message[0] ? an->error_message : NULL;
        in.actor         = actor;
        in.evidence_text = a->evidence;
        snprintf(gwo, sizeof(gwo), "%s%s",
                 an->done ? gateway_outcome_name(an->outcome) : "no answer",
                 answer_kind(an) == PAYMENT_REVIEW_NO_ANSWER
                     ? ", decided with --without-gateway"
                     : "");
        in.gateway_outcome = gwo;
        in.http_status     = an->http_status;
        in.transport_error = an->transport;
        in.gateway_excerpt = excerpt;
        rc = store_review_resolve(st, &in, &out, err, sizeof(err));
        free(excerpt);
        if (rc == STORE_ERR_CONN) {
                fprintf(stderr,
                        "chargeonce " CMD ": the database connection broke: "
                        "unknown whether it was resolved; see `chargeonce "
                        "review show %s` (%s)\n",
                        a->payment_id, err);
                json_decref(gw);
                return 1;
        }
        if (rc < 0) {
                fprintf(stderr,
                        "chargeonce " CMD ": failed, nothing written: "
                        "%s\n",
                        err);
                json_decref(gw);
                return 1;
        }
        if (out.result != STORE_REVIEW_RESOLVED) {
                snprintf(why, sizeof(why),
                         out.result == STORE_REVIEW_NOT_FOUND
                             ? "no such payment"
                             : "the payment is %s now, no longer in review "
                               "(finished meanwhile by a webhook or another "
                               "resolution)",
                         out.status);
                return refuse(a, why, gw);
        }
        ops_review_mask(p->row.idem_key, m, sizeof(m));
        if (a->json) {
                json_t *doc = json_object();

                if (!doc)
                        xalloc_die();
                json_object_set_new(doc, "payment_id",
                                    json_string(a->payment_id));
                json_object_set_new(doc, "resolved", json_true());
                json_object_set_new(doc, "status", json_string(out.status));
                json_object_set_new(doc, "provider_charge_id",
                                    v->charge_id ? json_string(v->charge_id)
                                                 : json_null());
                json_object_set_new(doc, "result_event_id",
                                    json_string(out.result_event_id));
                print_doc(doc, m, actor, gw);
        } else {
                printf("changed: payment %s resolved as %s%s%s by %s\n"
                       "result %s (resolves_review) goes to the result "
                       "topic; key %s now replays %s\n",
                       a->payment_id, out.status,
                       v->charge_id ? ", charge " : "",
                       v->charge_id ? v->charge_id : "", actor,
                       out.result_event_id, m, out.status);
        }
        json_decref(gw);
        return 0;
}

/* Step 3: what a resolution would write, and nothing written. */
static int dry(const struct ops_review_resolve *a,
               const struct store_review_payment *p, const char *actor,
               const struct payment_review_verdict *v, json_t *gw)
{
        const char *status = a->as_succeeded ? "succeeded" : "failed";
        char m[LOG_MASKED_KEY_SIZE];

        ops_review_mask(p->row.idem_key, m, sizeof(m));
        if (a->json) {
                json_t *doc = json_object();

                if (!doc)
                        xalloc_die();
                json_object_set_new(doc, "payment_id",
                                    json_string(a->payment_id));
                json_object_set_new(doc, "dry_run", json_true());
                json_object_set_new(doc, "resolved", json_false());
                json_object_set_new(doc, "would_resolve", json_true());
                json_object_set_new(doc, "status", json_string(status));
                json_object_set_new(doc, "provider_charge_id",
                                    v->charge_id ? json_string(v->charge_id)
                                                 : json_null());
                print_doc(doc, m, actor, gw);
        } else {
                printf("dry run: payment %s would be resolved as %s%s%s by "
                       "%s (%s);\na result with resolves_review would go to "
                       "the result topic and key %s would replay %s.\n"
                       "Nothing was written; run it again without --dry-run "
                       "to resolve.\n",
                       a->payment_id, status, v->charge_id ? ", charge " : "",
                       v->charge_id ? v->charge_id : "", actor, v->reason, m,
                       status);
        }
        json_decref(gw);
        return 0;
}

int ops_review_resolve(const struct ops_review_opts *o,
                       const struct ops_review_resolve *a)
{
        struct store_review_payment p;
        struct payment_review_ask q;
        struct payment_review_verdict v;
        struct answer an;
        struct store *st;
        bool found = false, past;
        char err[512];
        int rc;

        if (!(st = ops_review_store(o)))
                return 1;
        memset(&p, 0, sizeof(p));
        rc = 1;
        if (store_review_get(st, a->payment_id, &p, &found, err, sizeof(err)) <
            0) {
                fprintf(stderr, "chargeonce " CMD ": %s\n", err);
                goto done;
        }
        if (!found) {
                rc = refuse(a, "no such payment", NULL);
                goto done;
        }
        if (strcmp(p.status, "review") != 0) {
                char why[96];

                snprintf(why, sizeof(why), "the payment is %s, not in review",
                         p.status);
                rc = refuse(a, why, NULL);
                goto done;
        }
        if ((rc = ask(o, &p, &an, a->json)) != 0)
                goto done;
        past = p.db_now_ms - p.row.created_at_ms >= o->key_retention_ms;
        memset(&q, 0, sizeof(q));
        q.as_succeeded       = a->as_succeeded;
        q.answer             = answer_kind(&an);
        q.gateway_charge_id  = an.charge_id;
        q.flag_charge_id     = a->charge_id;
        q.past_key_retention = past;
        q.without_gateway    = a->without_gateway;
        payment_review_decide(&q, &v);
        if (!v.allowed) {
                rc = refuse(
                    a, v.reason,
                    answer_json(&an, true, &v, a->without_gateway, past));
                goto done;
        }
        if (a->dry_run)
                rc = dry(a, &p, o->actor, &v,
                         answer_json(&an, true, &v, a->without_gateway, past));
        else
                rc =
                    apply(st, a, &p, o->actor, &an, &v,
                          answer_json(&an, true, &v, a->without_gateway, past));
done:
        store_review_payment_clear(&p);
        store_destroy(st);
        return rc;
}
