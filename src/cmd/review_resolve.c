/*
 * cmd/review_resolve: `chargeonce review resolve PAYMENT_ID --as
 * succeeded|failed --evidence TEXT [--provider-charge-id ID]
 * [--without-gateway] [--json]` (issue 14):
 *
 *   1. the arguments are checked before anything is contacted (exit 2):
 *      a UUID, a decision, evidence text of 1..1000 bytes of UTF-8
 *      without control characters or a card number (util/guard.h), a
 *      charge id of the gateway's form, only with --as succeeded;
 *   2. the payment is read: not found or not in review -> refused (1);
 *   3. the gateway is asked once (gateway_query: GET ?reference=, a few
 *      attempts at most) and payment/review_rule.c judges the decision
 *      against its answer: a contradiction is refused (1), nothing
 *      written; no answer is refused unless --without-gateway;
 *   4. store_review_resolve finishes it in one transaction, only if it is
 *      still in review then (a webhook or another resolve may win: 1).
 *
 * Must never: write anything on a refusal; store a card number or an
 * invalid string; print a full idempotency key; decide `failed` against
 * a succeeded charge listed by the gateway.
 */
#include "cmd/cmd.h"
#include "cmd/opts.h"
#include "ops/progress.h"
#include "cmd/review.h"
#include "gateway/client.h"
#include "util/guard.h"
#include "payment/review_rule.h"
#include "store/review.h"
#include "store/store.h"
#include "util/config.h"
#include "util/log.h"
#include "util/timeutil.h"
#include "util/utf8.h"
#include "util/xalloc.h"

#include <inttypes.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define CMD "review resolve"
/* One question: a few attempts at most, and never long. */
#define RESOLVE_MAX_ATTEMPTS 3
#define RESOLVE_DEADLINE_MS  30000

struct args {
        const char *payment_id;
        const char *as;
        const char *evidence;
        const char *charge_id; /* or NULL */
        bool without_gateway;
        bool json;
};

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

static int parse(int argc, char **argv, struct args *a)
{
        memset(a, 0, sizeof(*a));
        for (int i = 1; i < argc; i++) {
                const char *s     = argv[i];
                const char **slot = NULL;

                if (!strcmp(s, "--as"))
                        slot = &a->as;
                else if (!strcmp(s, "--evidence"))
                        slot = &a->evidence;
                else if (!strcmp(s, "--provider-charge-id"))
                        slot = &a->charge_id;
                else if (!strcmp(s, "--without-gateway"))
                        a->without_gateway = true;
                else if (!strcmp(s, "--json"))
                        a->json = true;
                else if (s[0] == '-' || a->payment_id)
                        return cmd_usage_error(CMD, "unexpected argument %s",
                                               s);
                else
                        a->payment_id = s;
                if (slot) {
                        if (++i == argc)
                                return cmd_usage_error(CMD, "%s needs a value",
                                                       s);
                        *slot = argv[i];
                }
        }
        return 0;
}

/* Exit 2 naming the argument, or 0. */
static int check(const struct args *a)
{
        if (!a->payment_id)
                return cmd_usage_error(CMD, "PAYMENT_ID is missing");
        if (!uuid_valid(a->payment_id, strlen(a->payment_id)))
                return cmd_usage_error(CMD, "PAYMENT_ID: \"%s\" is not a UUID",
                                       a->payment_id);
        if (!a->as)
                return cmd_usage_error(CMD, "--as is missing (succeeded or "
                                            "failed)");
        if (strcmp(a->as, "succeeded") && strcmp(a->as, "failed"))
                return cmd_usage_error(CMD,
                                       "--as: \"%s\" is not succeeded or "
                                       "failed",
                                       a->as);
        if (cmd_review_evidence_check(CMD, a->evidence) != 0)
                return 2;
        if (a->charge_id &&
            !gateway_ident_valid(a->charge_id, strlen(a->charge_id),
                                 GW_CHARGE_ID_SIZE - 1))
                return cmd_usage_error(CMD,
                                       "--provider-charge-id: not a charge "
                                       "id (1..%d printable characters, no "
                                       "space)",
                                       GW_CHARGE_ID_SIZE - 1);
        if (a->charge_id && strcmp(a->as, "succeeded"))
                return cmd_usage_error(CMD, "--provider-charge-id goes with "
                                            "--as succeeded only");
        return 0;
}

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
static int ask(struct cmd_opts *o, const struct store_review_payment *p,
               struct answer *an, bool quiet)
{
        struct gateway_opts go = o->gateway;
        struct progress pr;
        struct gateway *gw;
        char err[512];

        memset(an, 0, sizeof(*an));
        if (go.retry.max_attempts > RESOLVE_MAX_ATTEMPTS)
                go.retry.max_attempts = RESOLVE_MAX_ATTEMPTS;
        if (go.retry.deadline_ms > RESOLVE_DEADLINE_MS)
                go.retry.deadline_ms = RESOLVE_DEADLINE_MS;
        if (!(gw = gateway_new(&go, err, sizeof(err))))
                return cmd_usage_error(CMD, "gateway: %s", err);
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

static int refuse(const struct args *a, const char *why, json_t *gw)
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

/* Steps 4: the transaction and what is said about it. */
static int apply(struct store *st, const struct args *a,
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
        in.succeeded          = !strcmp(a->as, "succeeded");
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
        cmd_review_mask(p->row.idem_key, m, sizeof(m));
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
                json_object_set_new(doc, "idempotency_key_masked",
                                    json_string(m));
                json_object_set_new(doc, "actor", json_string(actor));
                json_object_set(doc, "gateway", gw);
                json_dumpf(doc, stdout, JSON_INDENT(2));
                putchar('\n');
                json_decref(doc);
        } else {
                printf("payment %s resolved as %s%s%s by %s\n"
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

int cmd_review_resolve(struct config *cfg, int argc, char **argv)
{
        struct store_review_payment p;
        struct payment_review_ask q;
        struct payment_review_verdict v;
        struct answer an;
        struct cmd_opts o;
        struct args a;
        struct store *st;
        bool found = false, past;
        char err[512], actor[192];
        int rc;

        if ((rc = parse(argc, argv, &a)) != 0 || (rc = check(&a)) != 0)
                return rc;
        if (!(st = cmd_review_store(cfg)))
                return 1;
        memset(&p, 0, sizeof(p));
        cmd_opts_fill(&o, cfg);
        rc = 1;
        if (store_review_get(st, a.payment_id, &p, &found, err, sizeof(err)) <
            0) {
                fprintf(stderr, "chargeonce " CMD ": %s\n", err);
                goto done;
        }
        if (!found) {
                rc = refuse(&a, "no such payment", NULL);
                goto done;
        }
        if (strcmp(p.status, "review") != 0) {
                char why[96];

                snprintf(why, sizeof(why), "the payment is %s, not in review",
                         p.status);
                rc = refuse(&a, why, NULL);
                goto done;
        }
        if ((rc = ask(&o, &p, &an, a.json)) != 0)
                goto done;
        past =
            p.db_now_ms - p.row.created_at_ms >= o.reconcile.key_retention_ms;
        memset(&q, 0, sizeof(q));
        q.as_succeeded       = !strcmp(a.as, "succeeded");
        q.answer             = answer_kind(&an);
        q.gateway_charge_id  = an.charge_id;
        q.flag_charge_id     = a.charge_id;
        q.past_key_retention = past;
        q.without_gateway    = a.without_gateway;
        payment_review_decide(&q, &v);
        if (!v.allowed) {
                rc =
                    refuse(&a, v.reason,
                           answer_json(&an, true, &v, a.without_gateway, past));
                goto done;
        }
        cmd_review_actor(cfg, actor, sizeof(actor));
        rc = apply(st, &a, &p, actor, &an, &v,
                   answer_json(&an, true, &v, a.without_gateway, past));
done:
        cmd_opts_free(&o);
        store_review_payment_clear(&p);
        store_destroy(st);
        return rc;
}
