/*
 * reconcile: the reconciler's engine (see reconcile.h).
 *
 * One loop thread owns everything: a struct store (blocking calls, short
 * statements), a struct gateway (many calls in flight, polled with at
 * most 100 ms timeouts) and the items. A gateway callback only records
 * the answer and queues the item; the loop then decides (decide.c), writes
 * the evidence, and settles, posts again or releases in batches.
 *
 * Must never: mark a payment failed without a final refusal from the
 * gateway; post again without an empty list inside every bound, with
 * another provider key, or after our lease was found lost; act on a
 * decision whose evidence row was not stored; settle without the epoch it
 * took; log a full key or the payment method.
 */
#include "reconcile/reconcile.h"
#include "gateway/client.h"
#include "payment/result.h"
#include "payment/status.h"
#include "reconcile/decide.h"
#include "store/evidence.h"
#include "store/store.h"
#include "util/config.h"
#include "util/crypto.h"
#include "util/failpoint.h"
#include "util/jsonesc.h"
#include "util/log.h"
#include "util/timeutil.h"
#include "util/utf8.h"
#include "util/uuid.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define REC_EXCERPT_MAX 4096
#define REC_STATS_EVERY 10000 /* ms between two stats lines */
#define REC_DRAIN_SLACK 5000  /* ms added to the gateway budget on drain */
#define REC_POLL_MS     100

/* The rows of one takeover; freed when its last item is. */
struct rec_batch {
        struct store_payment *p; /* owned: store_payments_free */
        size_t n;
        size_t live;
};

struct engine;

struct rec_item {
        struct rec_item *anext, *aprev; /* every live item */
        struct rec_item *next;          /* the answered list */
        struct engine *e;
        struct rec_batch *batch;
        struct store_payment *p; /* borrowed from batch */
        char key_masked[LOG_MASKED_KEY_SIZE];
        char pkey_masked[LOG_MASKED_KEY_SIZE];
        int64_t taken_db_ms;   /* database clock at the takeover */
        int64_t taken_mono_ms; /* our clock at the same moment */
        int64_t asked_mono_ms; /* start of the current gateway call */
        int64_t renewed_mono_ms;
        /* Until when our lease surely holds, on our clock: the moment the
         * statement that set it was sent, plus its length. The gateway
         * client reads it before every POST (presend.h); a lease found
         * lost is GATEWAY_LEASE_LOST. */
        _Atomic int64_t lease_until_ms;
        enum reconcile_step step;
        bool at_gateway;
        bool lost; /* our lease was not renewed: act on nothing */
        int attempts;

        /* the last answer */
        enum gw_outcome outcome;
        int http_status;
        const char *transport; /* static, or NULL: an answer arrived */
        const char *gw_reason; /* static */
        char charge_id[GW_CHARGE_ID_SIZE];
        char error_code[GW_ERROR_CODE_SIZE];
        char error_message[GW_ERROR_MESSAGE_SIZE];
        char attempts_json[REC_EXCERPT_MAX];

        /* the decision */
        struct reconcile_verdict v;
        char excerpt[REC_EXCERPT_MAX + 4096];
        char summary[160];
        enum payment_status status;
        const char *res_code; /* the result's error.code, or NULL */
        char res_message[GW_ERROR_MESSAGE_SIZE + 64];
        char result_event_id[UUID_STR_LEN];
        char *result_json; /* owned */
};

struct engine {
        const struct config *cfg;
        struct store *db;   /* owned */
        struct gateway *gw; /* owned */
        char owner[192];
        int64_t lease_ms, interval_ms, backoff_base_ms, backoff_max_ms;
        int64_t drain_ms;
        size_t batch_size, max_in_flight;
        struct reconcile_timing timing;
        uint64_t rnd;

        struct rec_item *all; /* every live item */
        size_t live, at_gateway;
        struct rec_item *answered, **answered_tail;

        int64_t next_scan_ms, last_renew_ms, last_stats_ms;
        struct reconcile_stats st, st_logged;

        /* threaded mode: a snapshot of st for other threads */
        pthread_mutex_t *stats_mu;
        struct reconcile_stats *stats_out;
};

static uint64_t rec_rand(struct engine *e)
{
        /* splitmix64 */
        uint64_t z = (e->rnd += 0x9e3779b97f4a7c15ULL);
        z          = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
        z          = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
        return z ^ (z >> 31);
}

static void ctx_of(const struct rec_item *it, struct log_ctx *lc)
{
        *lc            = (struct log_ctx)LOG_CTX_INIT;
        lc->component  = "reconcile";
        lc->payment_id = it->p->payment_id;
        lc->tenant_id  = it->p->tenant_id;
        lc->key_masked = it->key_masked;
}

/* Age of the payment now, on the database's clock. */
static int64_t age_now(const struct rec_item *it)
{
        return it->taken_db_ms - it->p->created_at_ms + time_mono_ms() -
               it->taken_mono_ms;
}

static int64_t age_at(const struct rec_item *it, int64_t mono_ms)
{
        return it->taken_db_ms - it->p->created_at_ms + mono_ms -
               it->taken_mono_ms;
}

static void item_free(struct engine *e, struct rec_item *it)
{
        if (it->aprev)
                it->aprev->anext = it->anext;
        else
                e->all = it->anext;
        if (it->anext)
                it->anext->aprev = it->aprev;
        e->live--;
        free(it->result_json);
        if (--it->batch->live == 0) {
                store_payments_free(it->batch->p, it->batch->n);
                free(it->batch);
        }
        free(it);
}

static void publish_stats(struct engine *e)
{
        if (!e->stats_mu)
                return;
        pthread_mutex_lock(e->stats_mu);
        *e->stats_out = e->st;
        pthread_mutex_unlock(e->stats_mu);
}

static void log_stats(struct engine *e, bool force)
{
        int64_t now                     = time_mono_ms();
        const struct reconcile_stats *s = &e->st;
        struct log_ctx lc               = LOG_CTX_INIT;

        if (!force && now - e->last_stats_ms < REC_STATS_EVERY)
                return;
        e->last_stats_ms = now;
        if (!force && !memcmp(&e->st, &e->st_logged, sizeof(e->st)))
                return;
        e->st_logged = e->st;
        lc.component = "reconcile";
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
                 (unsigned long long)s->errors, e->live);
}

/* ------------------------------------------------------------------ */
/* gateway calls                                                        */

static void answered_push(struct engine *e, struct rec_item *it)
{
        it->next          = NULL;
        *e->answered_tail = it;
        e->answered_tail  = &it->next;
}

/* Untrusted or bounded text into dst: valid UTF-8, no control character,
 * cut on a code-point boundary (gw_text_clean). */
static void text_copy(char *dst, size_t dstsz, const char *src)
{
        gw_text_clean(src, src ? strlen(src) : 0, dst, dstsz);
}

/* @locality: the loop thread, from gateway_poll() / gateway_destroy() */
static void on_answer(void *opaque, const struct gateway_result *res)
{
        struct rec_item *it = opaque;
        struct engine *e    = it->e;
        const struct gateway_attempt *last =
            res->n_evidence > 0 ? &res->evidence[res->n_evidence - 1] : NULL;

        it->at_gateway = false;
        e->at_gateway--;
        it->attempts += res->attempts;
        it->outcome     = res->outcome;
        it->http_status = res->http_status;
        it->transport   = last && last->transport != GW_TRANSPORT_OK
                              ? gw_transport_name(last->transport)
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
        answered_push(e, it);
}

/* A call the client refused to start: a defect of our own data. */
static void refused_call(struct engine *e, struct rec_item *it, const char *err)
{
        struct log_ctx lc;

        ctx_of(it, &lc);
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
        answered_push(e, it);
}

static void start_query(struct engine *e, struct rec_item *it)
{
        char err[256];

        it->step          = RECONCILE_STEP_QUERY;
        it->asked_mono_ms = time_mono_ms();
        it->at_gateway    = true;
        e->at_gateway++;
        if (gateway_query(e->gw, it->p->payment_id, it->p->amount,
                          it->p->currency, on_answer, it, err,
                          sizeof(err)) < 0) {
                it->at_gateway = false;
                e->at_gateway--;
                refused_call(e, it, err);
        }
}

static void start_repost(struct engine *e, struct rec_item *it)
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
        e->at_gateway++;
        e->st.reposted++;
        ctx_of(it, &lc);
        log_info(&lc,
                 "posting again with the same provider key %s (lease epoch "
                 "%lld)",
                 it->pkey_masked, (long long)it->p->lease_epoch);
        if (gateway_charge(e->gw, &req, on_answer, it, err, sizeof(err)) < 0) {
                it->at_gateway = false;
                e->at_gateway--;
                refused_call(e, it, err);
        }
}

/* ------------------------------------------------------------------ */
/* deciding                                                             */

static void decide(struct engine *e, struct rec_item *it)
{
        struct reconcile_facts f;
        char reason[256], gwr[160], tmp[GW_ERROR_MESSAGE_SIZE + 256];
        char code_esc[GW_ERROR_CODE_SIZE * 6],
            msg_esc[GW_ERROR_MESSAGE_SIZE * 6];
        int n;

        f.step         = it->step;
        f.outcome      = it->outcome;
        f.asked_age_ms = age_at(it, it->asked_mono_ms);
        f.age_ms       = age_now(it);
        reconcile_decide(&f, &e->timing, &it->v);

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

        /* the evidence row: what was asked, what came back, what we did */
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
                     it->lost ? "none" : reconcile_action_name(it->v.action),
                     reason, gwr, code_esc, msg_esc,
                     it->lost ? "true" : "false", (long long)f.asked_age_ms,
                     (long long)f.age_ms, it->attempts_json);
        /* the row must always be storable (a text column: valid UTF-8),
         * or the evidence insert fails and the payment is retaken forever;
         * every part above is bounded and clean, this is the last guard */
        if (n < 0 || (size_t)n >= sizeof(it->excerpt) ||
            !utf8_valid(it->excerpt, strlen(it->excerpt)))
                snprintf(it->excerpt, sizeof(it->excerpt),
                         "{\"decision\":\"%s\",\"reason\":\"%s\","
                         "\"lease_lost\":%s,\"excerpt\":\"too long\"}",
                         it->lost ? "none"
                                  : reconcile_action_name(it->v.action),
                         reason, it->lost ? "true" : "false");
        if (it->step == RECONCILE_STEP_QUERY)
                snprintf(it->summary, sizeof(it->summary),
                         "GET /v1/charges?reference=%s", it->p->payment_id);
        else
                snprintf(it->summary, sizeof(it->summary),
                         "POST /v1/charges resume, Idempotency-Key %s",
                         it->pkey_masked);
}

/* Builds it->result_json for a settle. */
static int build_result(struct rec_item *it)
{
        struct payment_result r;
        char now[40], err[256];
        size_t len;
        struct log_ctx lc;

        if (!uuid_v4(it->result_event_id))
                return -1;
        rfc3339_format(time_wall_ms(), now, sizeof(now));
        memset(&r, 0, sizeof(r));
        r.event_id           = it->result_event_id;
        r.intent_event_id    = it->p->intent_event_id;
        r.tenant_id          = it->p->tenant_id;
        r.idempotency_key    = it->p->idem_key;
        r.order_id           = it->p->order_id;
        r.payment_id         = it->p->payment_id;
        r.status             = it->status;
        r.has_amount         = true;
        r.amount             = it->p->amount;
        r.currency           = it->p->currency;
        r.provider_charge_id = it->charge_id[0] ? it->charge_id : NULL;
        r.error_code         = it->res_code;
        r.error_message      = it->res_code ? it->res_message : NULL;
        r.replayed           = false;
        r.occurred_at        = now;
        if (payment_result_build(&r, &it->result_json, &len, err, sizeof(err)) <
            0) {
                ctx_of(it, &lc);
                log_error(&lc, "cannot build the %s result: %s",
                          payment_status_name(it->status), err);
                return -1;
        }
        return 0;
}

static bool is_settle(const struct rec_item *it)
{
        return !it->lost && (it->v.action == RECONCILE_SETTLE_SUCCEEDED ||
                             it->v.action == RECONCILE_SETTLE_FAILED ||
                             it->v.action == RECONCILE_REVIEW);
}

/* The wait before a payment still unknown is looked at again. */
static int64_t wait_ms(struct engine *e, const struct rec_item *it)
{
        int64_t takeovers = it->p->lease_epoch > 1 ? it->p->lease_epoch - 1 : 1;
        int64_t d = reconcile_backoff_ms(e->backoff_base_ms, e->backoff_max_ms,
                                         takeovers, rec_rand(e));
        int64_t age = age_now(it);

        if (it->v.not_before_ms > d)
                d = it->v.not_before_ms + e->interval_ms;
        /* look again when a bound is reached, not long after it */
        if (age < e->timing.review_after_ms &&
            d > e->timing.review_after_ms - age)
                d = e->timing.review_after_ms - age + 1;
        if (age < e->timing.key_retention_ms &&
            d > e->timing.key_retention_ms - age)
                d = e->timing.key_retention_ms - age + 1;
        return d > 0 ? d : 1;
}

/* ------------------------------------------------------------------ */
/* acting on the answered items, in batches                             */

static void act_settles(struct engine *e, struct rec_item **v, size_t n)
{
        struct settle_item *s;
        char err[512];
        struct log_ctx lc = LOG_CTX_INIT;
        int rc;

        if (n == 0)
                return;
        lc.component = "reconcile";
        s            = calloc(n, sizeof(*s));
        if (!s) {
                log_error(&lc,
                          "out of memory: %zu settles left to lease "
                          "expiry",
                          n);
                e->st.errors++;
                return;
        }
        for (size_t i = 0; i < n; i++) {
                struct rec_item *it = v[i];

                s[i].payment_id  = it->p->payment_id;
                s[i].lease_epoch = it->p->lease_epoch;
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
        }
        rc = store_settle_batch(e->db, s, n, err, sizeof(err));
        if (rc != STORE_OK) {
                /* nothing (or, on a broken connection, maybe all) written:
                 * the leases expire and the payments are looked at again;
                 * a settle that did commit leaves nothing to retake */
                log_error(&lc,
                          "settle of %zu payment(s) failed (%s): left to "
                          "lease expiry",
                          n, err);
                e->st.errors++;
                free(s);
                return;
        }
        for (size_t i = 0; i < n; i++) {
                struct rec_item *it = v[i];

                ctx_of(it, &lc);
                if (s[i].outcome == SETTLE_FENCED) {
                        log_warn(&lc,
                                 "settle fenced: lease epoch %lld is no "
                                 "longer ours (now %s, epoch %lld)",
                                 (long long)it->p->lease_epoch,
                                 s[i].current_status,
                                 (long long)s[i].current_epoch);
                        e->st.fenced++;
                        continue;
                }
                if (it->step == RECONCILE_STEP_QUERY &&
                    it->status != PAYMENT_STATUS_REVIEW)
                        e->st.settled_from_query++;
                else if (it->step == RECONCILE_STEP_CHARGE &&
                         it->status != PAYMENT_STATUS_REVIEW)
                        e->st.settled_after_repost++;
                if (it->status == PAYMENT_STATUS_SUCCEEDED) {
                        e->st.succeeded++;
                        log_info(&lc, "settled succeeded (%s)", it->v.reason);
                } else if (it->status == PAYMENT_STATUS_FAILED) {
                        e->st.failed++;
                        log_info(&lc, "settled failed: %s (%s)", it->res_code,
                                 it->v.reason);
                } else {
                        e->st.review++;
                        log_warn(&lc,
                                 "payment goes to review: %s (%s); a person "
                                 "must decide",
                                 it->res_code, it->res_message);
                }
        }
        free(s);
}

/* Renews the leases of v[0..n) to lease_ms; marks the ones lost. */
static int renew(struct engine *e, struct rec_item **v, size_t n,
                 int64_t lease_ms)
{
        struct lease_item *l;
        char err[512];
        struct log_ctx lc = LOG_CTX_INIT;
        int64_t sent;
        int rc;

        if (n == 0)
                return 0;
        lc.component = "reconcile";
        l            = calloc(n, sizeof(*l));
        if (!l)
                return -1;
        for (size_t i = 0; i < n; i++) {
                l[i].payment_id  = v[i]->p->payment_id;
                l[i].lease_epoch = v[i]->p->lease_epoch;
        }
        sent = time_mono_ms();
        rc   = store_lease_renew(e->db, l, n, e->owner, lease_ms, err,
                                 sizeof(err));
        if (rc != STORE_OK) {
                log_error(&lc, "lease renewal failed: %s", err);
                e->st.errors++;
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
                e->st.lost++;
                ctx_of(v[i], &lc);
                log_warn(&lc, "lease epoch %lld lost: acting on nothing more",
                         (long long)v[i]->p->lease_epoch);
        }
        free(l);
        return 0;
}

/* Holds each waiting payment for its backoff: the lease (still ours)
 * expires then and any reconciler takes it over again. */
static void act_waits(struct engine *e, struct rec_item **v, size_t n)
{
        for (size_t i = 0; i < n; i++) {
                struct rec_item *it = v[i];
                int64_t d           = wait_ms(e, it);
                struct log_ctx lc;

                ctx_of(it, &lc);
                e->st.still_unknown++;
                log_info(&lc,
                         "outcome still unknown (%s, %s): asking again in "
                         "%lld ms",
                         gw_outcome_name(it->outcome), it->v.reason,
                         (long long)d);
                /* on failure the lease runs out at its old time anyway */
                (void)renew(e, &v[i], 1, d);
        }
}

static void act_reposts(struct engine *e, struct rec_item **v, size_t n)
{
        /* only while the lease is ours, checked right before posting */
        if (renew(e, v, n, e->lease_ms) < 0) {
                for (size_t i = 0; i < n; i++)
                        item_free(e, v[i]);
                return;
        }
        for (size_t i = 0; i < n; i++) {
                if (v[i]->lost) {
                        item_free(e, v[i]);
                        continue;
                }
                v[i]->renewed_mono_ms = time_mono_ms();
                start_repost(e, v[i]);
        }
}

static void process_answered(struct engine *e)
{
        struct rec_item *list     = e->answered, *it;
        struct rec_item **settles = NULL, **reposts = NULL, **waits = NULL,
                        **all    = NULL;
        struct evidence_item *ev = NULL;
        size_t n = 0, ns = 0, nr = 0, nw = 0;
        char err[512];
        struct log_ctx lc = LOG_CTX_INIT;

        if (!list)
                return;
        e->answered      = NULL;
        e->answered_tail = &e->answered;
        lc.component     = "reconcile";
        for (it = list; it; it = it->next)
                n++;
        all     = calloc(n, sizeof(*all));
        settles = calloc(n, sizeof(*settles));
        reposts = calloc(n, sizeof(*reposts));
        waits   = calloc(n, sizeof(*waits));
        ev      = calloc(n, sizeof(*ev));
        if (!all || !settles || !reposts || !waits || !ev) {
                log_error(&lc,
                          "out of memory: %zu answer(s) dropped, left "
                          "to lease expiry",
                          n);
                e->st.errors++;
                for (it = list; it;) {
                        struct rec_item *next = it->next;
                        item_free(e, it);
                        it = next;
                }
                goto done;
        }
        n = 0;
        for (it = list; it; it = it->next) {
                all[n] = it;
                decide(e, it);
                if (is_settle(it) && build_result(it) < 0) {
                        /* our own data is broken: never settle it blind */
                        it->v.action = RECONCILE_WAIT;
                        it->lost     = true;
                }
                ev[n].payment_id = it->p->payment_id;
                ev[n].kind =
                    it->step == RECONCILE_STEP_QUERY ? "query" : "charge";
                ev[n].actor           = e->owner;
                ev[n].lease_epoch     = it->p->lease_epoch;
                ev[n].request_summary = it->summary;
                ev[n].http_status     = it->http_status;
                ev[n].transport_error = it->transport;
                ev[n].outcome         = gw_outcome_name(it->outcome);
                ev[n].provider_charge_id =
                    it->charge_id[0] ? it->charge_id : NULL;
                ev[n].response_excerpt = it->excerpt;
                n++;
        }
        /* the evidence first: no decision is acted on without its row */
        if (store_evidence_insert(e->db, ev, n, err, sizeof(err)) != STORE_OK) {
                log_error(&lc,
                          "storing the evidence of %zu answer(s) "
                          "failed (%s): left to lease expiry",
                          n, err);
                e->st.errors++;
                for (size_t i = 0; i < n; i++)
                        item_free(e, all[i]);
                goto done;
        }
        for (size_t i = 0; i < n; i++) {
                it = all[i];
                if (it->lost) {
                        all[i] = NULL;
                        item_free(e, it);
                } else if (is_settle(it)) {
                        settles[ns++] = it;
                } else if (it->v.action == RECONCILE_REPOST) {
                        reposts[nr++] = it;
                } else {
                        waits[nw++] = it;
                }
        }
        act_settles(e, settles, ns);
        act_waits(e, waits, nw);
        for (size_t i = 0; i < ns; i++)
                item_free(e, settles[i]);
        for (size_t i = 0; i < nw; i++)
                item_free(e, waits[i]);
        act_reposts(e, reposts, nr);

done:
        free(all);
        free(settles);
        free(reposts);
        free(waits);
        free(ev);
}

/* ------------------------------------------------------------------ */
/* takeovers and leases                                                 */

static void take_over(struct engine *e)
{
        struct store_payment *p = NULL;
        struct rec_batch *b;
        size_t n = 0, room;
        int64_t db_now, mono, sent;
        char err[512];
        struct log_ctx lc = LOG_CTX_INIT;

        lc.component = "reconcile";
        room = e->max_in_flight > e->live ? e->max_in_flight - e->live : 0;
        if (room > e->batch_size)
                room = e->batch_size;
        if (room == 0)
                return;
        e->st.rounds++;
        /* the lease runs from the statement's time, which is after this */
        sent = time_mono_ms();
        if (store_takeover_expired(e->db, e->owner, e->lease_ms, room, &p, &n,
                                   err, sizeof(err)) != STORE_OK) {
                log_error(&lc, "takeover failed: %s", err);
                e->st.errors++;
                return;
        }
        if (n == 0)
                return;
        e->st.takeovers += n;
        if (FAILPOINT("reconcile.after_takeover") < 0) {
                log_warn(&lc,
                         "failpoint reconcile.after_takeover: %zu "
                         "payment(s) left to lease expiry",
                         n);
                store_payments_free(p, n);
                return;
        }
        /* ages are measured on the database's clock, like created_at */
        if (store_clock_ms(e->db, &db_now, err, sizeof(err)) != STORE_OK) {
                log_error(&lc,
                          "database clock: %s; %zu payment(s) left to "
                          "lease expiry",
                          err, n);
                e->st.errors++;
                store_payments_free(p, n);
                return;
        }
        mono = time_mono_ms();
        b    = calloc(1, sizeof(*b));
        if (!b) {
                store_payments_free(p, n);
                e->st.errors++;
                return;
        }
        b->p    = p;
        b->n    = n;
        b->live = 0;
        for (size_t i = 0; i < n; i++) {
                struct rec_item *it = calloc(1, sizeof(*it));

                if (!it) {
                        /* the rest expire again and are retaken */
                        e->st.errors++;
                        break;
                }
                it->e     = e;
                it->batch = b;
                it->p     = &p[i];
                b->live++;
                it->anext = e->all;
                if (e->all)
                        e->all->aprev = it;
                e->all = it;
                e->live++;
                it->taken_db_ms     = db_now;
                it->taken_mono_ms   = mono;
                it->renewed_mono_ms = mono;
                atomic_store(&it->lease_until_ms, sent + e->lease_ms);
                log_mask_key(p[i].idem_key, strlen(p[i].idem_key),
                             it->key_masked, sizeof(it->key_masked));
                log_mask_key(p[i].provider_key, strlen(p[i].provider_key),
                             it->pkey_masked, sizeof(it->pkey_masked));
                ctx_of(it, &lc);
                log_info(&lc,
                         "taken over: lease epoch %lld, created %lld ms ago, "
                         "%d gateway attempt(s) before",
                         (long long)p[i].lease_epoch, (long long)age_now(it),
                         (int)p[i].attempts);
                start_query(e, it);
        }
        if (b->live == 0) {
                store_payments_free(p, n);
                free(b);
        }
}

/* Keeps the leases of the payments at the gateway, every lease/3. */
static void renew_at_gateway(struct engine *e)
{
        int64_t now = time_mono_ms();
        struct rec_item **v;
        size_t n = 0;

        if (now - e->last_renew_ms < 200)
                return;
        e->last_renew_ms = now;
        for (struct rec_item *it = e->all; it; it = it->anext)
                if (it->at_gateway && !it->lost &&
                    now - it->renewed_mono_ms >= e->lease_ms / 3)
                        n++;
        if (n == 0)
                return;
        v = calloc(n, sizeof(*v));
        if (!v)
                return;
        n = 0;
        for (struct rec_item *it = e->all; it; it = it->anext)
                if (it->at_gateway && !it->lost &&
                    now - it->renewed_mono_ms >= e->lease_ms / 3) {
                        it->renewed_mono_ms = now;
                        v[n++]              = it;
                }
        (void)renew(e, v, n, e->lease_ms);
        free(v);
}

/* ------------------------------------------------------------------ */
/* setup, loop, teardown                                                */

static void engine_destroy(struct engine *e)
{
        /* calls still at the gateway end UNKNOWN through on_answer */
        gateway_destroy(e->gw);
        e->gw = NULL;
        /* what is left is retaken once its lease expires */
        while (e->all)
                item_free(e, e->all);
        e->answered      = NULL;
        e->answered_tail = &e->answered;
        store_destroy(e->db);
        e->db = NULL;
}

static int engine_setup(struct engine *e, const struct config *cfg,
                        char *errstr, size_t errstr_size)
{
        struct gateway_opts go;
        char host[64];
        const char *warn;
        struct log_ctx lc = LOG_CTX_INIT;

        lc.component     = "reconcile";
        e->cfg           = cfg;
        e->answered      = NULL;
        e->answered_tail = &e->answered;
        if (*config_str(cfg, "worker.id"))
                snprintf(e->owner, sizeof(e->owner), "%s/reconcile",
                         config_str(cfg, "worker.id"));
        else {
                if (gethostname(host, sizeof(host)) != 0)
                        snprintf(host, sizeof(host), "host");
                host[sizeof(host) - 1] = '\0';
                snprintf(e->owner, sizeof(e->owner), "%s:%d/reconcile", host,
                         (int)getpid());
        }
        e->lease_ms        = config_ms(cfg, "lease.duration");
        e->interval_ms     = config_ms(cfg, "reconcile.interval");
        e->backoff_base_ms = config_ms(cfg, "reconcile.backoff_base");
        e->backoff_max_ms  = config_ms(cfg, "reconcile.backoff_max");
        e->batch_size      = (size_t)config_int(cfg, "reconcile.batch_size");
        e->max_in_flight   = (size_t)config_int(cfg, "reconcile.max_in_flight");
        e->timing.review_after_ms  = config_ms(cfg, "reconcile.review_after");
        e->timing.key_retention_ms = config_ms(cfg, "gateway.key_retention");
        /* the consumer's call: started before created + deadline, each
         * attempt at most gateway.timeout; a re-post has the same budget */
        e->timing.in_flight_ms = config_ms(cfg, "gateway.deadline") +
                                 config_ms(cfg, "gateway.timeout");
        e->timing.repost_ms = e->timing.in_flight_ms;
        e->drain_ms         = e->timing.in_flight_ms + REC_DRAIN_SLACK;
        if (!reconcile_timing_valid(&e->timing, errstr, errstr_size))
                return 2;
        if ((warn = reconcile_timing_warning(&e->timing)))
                log_warn(&lc, "%s", warn);
        if (!crypto_random(&e->rnd, sizeof(e->rnd)))
                e->rnd = (uint64_t)time_mono_us() ^ (uint64_t)getpid();

        gateway_opts_from_config(&go, cfg);
        if (!(e->gw = gateway_new(&go, errstr, errstr_size)))
                return 2;
        if (!(e->db = store_connect(config_str(cfg, "db.conninfo"), errstr,
                                    errstr_size))) {
                gateway_destroy(e->gw);
                e->gw = NULL;
                return 1;
        }
        log_info(&lc,
                 "reconciling as %s: every %lld ms, up to %zu per round and "
                 "%zu at once; review after %lld ms, gateway keys kept %lld "
                 "ms, original call over after %lld ms",
                 e->owner, (long long)e->interval_ms, e->batch_size,
                 e->max_in_flight, (long long)e->timing.review_after_ms,
                 (long long)e->timing.key_retention_ms,
                 (long long)e->timing.in_flight_ms);
        return 0;
}

/*
 * The loop. Returns 0 after a drain, 1 after a second signal.
 * @locality: the engine's thread
 */
static int engine_loop(struct engine *e, volatile sig_atomic_t *stop)
{
        struct log_ctx lc = LOG_CTX_INIT;
        bool draining     = false;
        int64_t drain_end = 0;

        lc.component = "reconcile";
        for (;;) {
                int64_t now = time_mono_ms();
                int timeout;

                if (*stop >= 2) {
                        log_warn(&lc,
                                 "second signal: stopping now; %zu "
                                 "payment(s) in hand are retaken after "
                                 "their leases expire",
                                 e->live);
                        return 1;
                }
                if (*stop && !draining) {
                        draining  = true;
                        drain_end = now + e->drain_ms;
                        log_info(&lc,
                                 "stopping: no new takeovers, "
                                 "finishing %zu in hand",
                                 e->live);
                }
                if (draining && (e->live == 0 || now > drain_end))
                        break;
                if (!draining && now >= e->next_scan_ms) {
                        size_t before = e->st.takeovers;

                        take_over(e);
                        /* a full round: there may be more right now */
                        e->next_scan_ms =
                            e->st.takeovers - before >= e->batch_size
                                ? now
                                : now + e->interval_ms;
                }
                renew_at_gateway(e);
                process_answered(e);
                log_stats(e, false);
                publish_stats(e);
                timeout = e->answered ? 0 : REC_POLL_MS;
                if (!draining && e->next_scan_ms - now < timeout)
                        timeout = e->next_scan_ms > now
                                      ? (int)(e->next_scan_ms - now)
                                      : 0;
                if (gateway_poll(e->gw, timeout) < 0) {
                        log_warn(&lc, "gateway poll failed");
                        usleep(10000);
                }
        }
        if (e->live)
                log_warn(&lc,
                         "%zu payment(s) still at the gateway after the "
                         "drain time: retaken after their leases expire",
                         e->live);
        return 0;
}

int reconcile_run(const struct config *cfg, volatile sig_atomic_t *stop)
{
        struct engine e;
        char err[512];
        struct log_ctx lc = LOG_CTX_INIT;
        int rc;

        lc.component = "reconcile";
        memset(&e, 0, sizeof(e));
        if ((rc = engine_setup(&e, cfg, err, sizeof(err))) != 0) {
                log_error(&lc, "cannot start: %s", err);
                engine_destroy(&e);
                return rc;
        }
        rc = engine_loop(&e, stop);
        log_stats(&e, true);
        engine_destroy(&e);
        return rc;
}

/* ------------------------------------------------------------------ */
/* on a thread of its own                                               */

struct reconciler {
        pthread_t thread;
        volatile sig_atomic_t stop;
        pthread_mutex_t mu;
        struct reconcile_stats stats; /* under mu */
        struct engine e;
};

static void *reconciler_main(void *arg)
{
        struct reconciler *r = arg;

        (void)engine_loop(&r->e, &r->stop);
        log_stats(&r->e, true);
        publish_stats(&r->e);
        engine_destroy(&r->e);
        return NULL;
}

struct reconciler *reconciler_start(const struct config *cfg, char *errstr,
                                    size_t errstr_size)
{
        struct reconciler *r = calloc(1, sizeof(*r));

        if (!r) {
                snprintf(errstr, errstr_size, "reconciler: out of memory");
                return NULL;
        }
        pthread_mutex_init(&r->mu, NULL);
        r->e.stats_mu  = &r->mu;
        r->e.stats_out = &r->stats;
        if (engine_setup(&r->e, cfg, errstr, errstr_size) != 0)
                goto fail;
        if (pthread_create(&r->thread, NULL, reconciler_main, r) != 0) {
                snprintf(errstr, errstr_size,
                         "reconciler: cannot start its thread");
                goto fail;
        }
        return r;

fail:
        engine_destroy(&r->e);
        pthread_mutex_destroy(&r->mu);
        free(r);
        return NULL;
}

void reconciler_stop(struct reconciler *r)
{
        if (!r)
                return;
        r->stop = 1;
        pthread_join(r->thread, NULL);
        pthread_mutex_destroy(&r->mu);
        free(r);
}

void reconciler_get_stats(struct reconciler *r, struct reconcile_stats *out)
{
        pthread_mutex_lock(&r->mu);
        *out = r->stats;
        pthread_mutex_unlock(&r->mu);
}
