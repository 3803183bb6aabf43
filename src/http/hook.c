/* SPDX-License-Identifier: Apache-2.0 */
/*
 * http/hook: POST /webhooks/gateway (http.h). Verify the exact bytes,
 * decode, apply in one transaction on a pooled connection, answer:
 *
 *   bad signature, headers, timestamp, or body      400, rejected
 *   body over 64 KiB                                413, rejected
 *   judged by the store (any result)                200, by result
 *   database error (outcome unknown or not written) 503 (retried)
 *
 * Must never: write anything for a refused request, answer an error to
 * a webhook the store judged, log the signature, a secret or the body
 * (the payment id only, and the webhook id through id_text), or log a
 * webhook id that is not well-formed or holds a card number or an e-mail
 * address.
 */
#include "http/http_int.h"

#include "gateway/webhook_event.h"
#include "store/store.h"
#include "store/webhook.h"
#include "util/guard.h"
#include "util/log.h"
#include "util/metrics.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

/* How long a webhook waits for a free connection of the pool. */
#define HTTP_POOL_WAIT_S 5

int http_pool_init(struct http_pool *p, int n)
{
        pthread_condattr_t ca;
        int e;

        memset(p, 0, sizeof(*p));
        if ((e = pthread_condattr_init(&ca)) != 0 ||
            (e = pthread_condattr_setclock(&ca, CLOCK_MONOTONIC)) != 0 ||
            (e = pthread_cond_init(&p->cv, &ca)) != 0) {
                errno = e;
                return -1;
        }
        pthread_condattr_destroy(&ca);
        pthread_mutex_init(&p->mu, NULL);
        p->n = n;
        return 0;
}

void http_pool_destroy(struct http_pool *p)
{
        if (p->n == 0)
                return; /* never initialised */
        for (int i = 0; i < p->n; i++)
                store_destroy(p->st[i]);
        pthread_cond_destroy(&p->cv);
        pthread_mutex_destroy(&p->mu);
        p->n = 0;
}

/* A free slot (marked busy), or -1 after HTTP_POOL_WAIT_S. */
static int pool_take(struct http_pool *p)
{
        struct timespec until;
        int slot = -1;

        clock_gettime(CLOCK_MONOTONIC, &until);
        until.tv_sec += HTTP_POOL_WAIT_S;
        pthread_mutex_lock(&p->mu);
        for (;;) {
                for (int i = 0; i < p->n && slot < 0; i++)
                        if (!p->busy[i])
                                slot = i;
                if (slot >= 0 ||
                    pthread_cond_timedwait(&p->cv, &p->mu, &until) != 0)
                        break;
        }
        if (slot >= 0)
                p->busy[slot] = true;
        pthread_mutex_unlock(&p->mu);
        return slot;
}

static void pool_give(struct http_pool *p, int slot)
{
        pthread_mutex_lock(&p->mu);
        p->busy[slot] = false;
        pthread_cond_signal(&p->cv);
        pthread_mutex_unlock(&p->mu);
}

static struct log_ctx hook_ctx(void)
{
        struct log_ctx lc = LOG_CTX_INIT;

        lc.component = "webhook";
        return lc;
}

/*
 * How a log line names a webhook id. The id is the sender's text, and
 * until the signature is checked the sender is anyone who reaches the
 * port: it could carry a card number or an e-mail address into the logs.
 * It is named as it is only when it is well-formed (what verify accepts)
 * and holds neither (util/guard); else it is withheld: its length and the
 * first 8 hex digits of its HMAC under the log mask key (log_mask_key's,
 * without its prefix), so that lines about one id still match, e.g.
 * "[withheld, 20 bytes, 3f9a1c2b]". A signed id goes through it too: a
 * gateway's text is guarded like any other. Returns id or out.
 */
#define ID_TEXT_SIZE 64

static const char *id_text(const char *id, char out[ID_TEXT_SIZE])
{
        char mask[LOG_MASKED_KEY_SIZE];
        const char *hex;
        size_t n;

        if (!id)
                return "[none]";
        n = strlen(id);
        if (gateway_webhook_id_valid(id) && !guard_has_card_number(id, n) &&
            !guard_has_email(id, n))
                return id;
        log_mask_key(id, n, mask, sizeof(mask));
        hex = strrchr(mask, '*'); /* the digits follow the last '*' */
        snprintf(out, ID_TEXT_SIZE, "[withheld, %zu bytes, %s]", n,
                 hex ? hex + 1 : "?");
        return out;
}

void http_webhook_rejected(struct http *h, const char *why)
{
        struct log_ctx lc = hook_ctx();

        metrics_inc(h->o.metrics, METRIC_WEBHOOKS, MW_REJECTED);
        log_info(&lc, "webhook refused: %s", why);
}

/* The label index of a store result, and whether it finished a payment. */
static unsigned result_label(enum store_webhook_result r)
{
        switch (r) {
        case STORE_WEBHOOK_APPLIED:
                return MW_APPLIED;
        case STORE_WEBHOOK_DUPLICATE:
                return MW_DUPLICATE;
        case STORE_WEBHOOK_IGNORED:
                return MW_IGNORED;
        case STORE_WEBHOOK_CONTRADICTION:
                return MW_CONTRADICTION;
        case STORE_WEBHOOK_UNKNOWN_REFERENCE:
                break;
        }
        return MW_UNKNOWN_REFERENCE;
}

/* A connected store in slot, or -1 (the slot is given back). */
static int pool_connect(struct http *h, int slot, char *err, size_t errsz)
{
        struct store **st = &h->pool.st[slot];

        if (*st && !store_ok(*st)) {
                store_destroy(*st);
                *st = NULL;
        }
        if (!*st && !(*st = store_connect_timeout(
                          h->o.conninfo, HTTP_DB_CONNECT_S, err, errsz))) {
                pool_give(&h->pool, slot);
                return -1;
        }
        return 0;
}

/* Applies ev; answers 200 for every judgement, 503 on a database error.
 * idt: how log lines name id (id_text). */
static enum MHD_Result apply(struct http *h, struct MHD_Connection *c,
                             const char *id, const char *idt, int64_t ts,
                             const struct gateway_event *ev)
{
        struct log_ctx lc = hook_ctx();
        struct store_webhook_in in;
        struct store_webhook_out out;
        char err[512], text[64];
        int slot, rc;

        if ((slot = pool_take(&h->pool)) < 0) {
                log_warn(&lc,
                         "webhook %s: every database connection busy "
                         "(webhook.db_connections); answered 503",
                         idt);
                return http_answer(c, 503, "busy: retry later\n");
        }
        if (pool_connect(h, slot, err, sizeof(err)) < 0) {
                log_warn(&lc, "webhook %s: %s; answered 503", idt, err);
                return http_answer(c, 503, "database unavailable\n");
        }
        memset(&in, 0, sizeof(in));
        memset(&out, 0, sizeof(out));
        in.webhook_id        = id;
        in.webhook_timestamp = ts;
        in.event             = ev;
        in.actor             = h->o.actor;
        rc = store_webhook_apply(h->pool.st[slot], &in, &out, err, sizeof(err));
        pool_give(&h->pool, slot);
        if (rc == STORE_ERR_DATA) {
                /* refused for its data: it would fail again as it is */
                log_error(&lc, "webhook %s: refused by the database: %s", idt,
                          err);
                metrics_inc(h->o.metrics, METRIC_WEBHOOKS, MW_REJECTED);
                return http_answer(c, 400, "refused\n");
        }
        if (rc != STORE_OK) {
                log_warn(&lc, "webhook %s: %s; answered 503", idt, err);
                return http_answer(c, 503, "database error: retry later\n");
        }
        metrics_inc(h->o.metrics, METRIC_WEBHOOKS, result_label(out.result));
        if (out.result == STORE_WEBHOOK_APPLIED) {
                if (!strcmp(out.applied, "succeeded"))
                        metrics_inc(h->o.metrics, METRIC_PAYMENTS_FINISHED,
                                    MF_SUCCEEDED);
                else if (!strcmp(out.applied, "failed"))
                        metrics_inc(h->o.metrics, METRIC_PAYMENTS_FINISHED,
                                    MF_FAILED);
        }
        lc.payment_id = *out.payment_id ? out.payment_id : NULL;
        if (out.result == STORE_WEBHOOK_CONTRADICTION)
                log_error(&lc, "webhook %s (%s): contradiction: %s", idt,
                          gateway_event_type_name(ev->type), out.detail);
        else
                log_info(&lc, "webhook %s (%s): %s%s%s%s%s", idt,
                         gateway_event_type_name(ev->type),
                         store_webhook_result_name(out.result),
                         *out.previous ? " " : "", out.previous,
                         *out.applied ? " -> " : "", out.applied);
        snprintf(text, sizeof(text), "%s\n",
                 store_webhook_result_name(out.result));
        return http_answer(c, MHD_HTTP_OK, text);
}

enum MHD_Result http_webhook(struct http *h, struct MHD_Connection *c,
                             struct http_req *r)
{
        const char *id, *ts_s, *sig;
        enum gateway_webhook_verdict v;
        struct gateway_event ev;
        int64_t ts = 0;
        char err[256], why[600], idbuf[ID_TEXT_SIZE];
        const char *idt;

        id   = MHD_lookup_connection_value(c, MHD_HEADER_KIND, "webhook-id");
        ts_s = MHD_lookup_connection_value(c, MHD_HEADER_KIND,
                                           "webhook-timestamp");
        sig  = MHD_lookup_connection_value(c, MHD_HEADER_KIND,
                                           "webhook-signature");
        v    = gateway_webhook_verify(
               &h->secrets, id, ts_s, sig, r->body.data ? r->body.data : "",
               r->body.len, (int64_t)time(NULL), h->o.tolerance_ms / 1000, &ts);
        idt = id_text(id, idbuf);
        if (v != GATEWAY_WEBHOOK_OK) {
                if (!id || !*id)
                        snprintf(why, sizeof(why), "%s",
                                 gateway_webhook_verdict_name(v));
                else
                        snprintf(why, sizeof(why), "%s (webhook %s)",
                                 gateway_webhook_verdict_name(v), idt);
                http_webhook_rejected(h, why);
                return http_answer(c,
                                   v == GATEWAY_WEBHOOK_TOO_LARGE ? 413 : 400,
                                   "webhook refused\n");
        }
        if (gateway_event_parse(r->body.data ? r->body.data : "", r->body.len,
                                &ev, err, sizeof(err)) < 0) {
                snprintf(why, sizeof(why), "webhook %s: body: %s", idt, err);
                http_webhook_rejected(h, why);
                return http_answer(c, 400, "webhook body refused\n");
        }
        return apply(h, c, id, idt, ts, &ev);
}
