/* SPDX-License-Identifier: Apache-2.0 */
/*
 * client_call: the calls of the gateway client. A call is made by
 * gateway_charge() or gateway_query(), waits, runs attempts
 * (client_attempt.c) and ends on the done list, where gateway_poll() runs
 * its callback. Calls for a provider key already in flight join that call
 * (one network sequence, one result for all).
 *
 * Must never let a call join another with other parameters (it ends
 * GW_DEFECT, nothing sent), log the payment method or a full provider key,
 * or end a call other than through the done list (every accepted call gets
 * its callback exactly once).
 */
#include "gateway/client_int.h"

#include "util/timeutil.h"
#include "util/xalloc.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct log_ctx gateway_call_ctx(const struct gw_call *c)
{
        struct log_ctx ctx = LOG_CTX_INIT;

        ctx.component  = "gateway";
        ctx.payment_id = c->reference;
        ctx.tenant_id  = c->tenant_id;
        ctx.key_masked = c->key_masked[0] ? c->key_masked : NULL;
        return ctx;
}

/* ---- lists ---- */

void gateway_list_push(struct call_list *l, struct gw_call *c)
{
        c->next = NULL;
        c->prev = l->tail;
        if (l->tail)
                l->tail->next = c;
        else
                l->head = c;
        l->tail = c;
        l->n++;
}

void gateway_list_del(struct call_list *l, struct gw_call *c)
{
        if (c->prev)
                c->prev->next = c->next;
        else
                l->head = c->next;
        if (c->next)
                c->next->prev = c->prev;
        else
                l->tail = c->prev;
        c->prev = c->next = NULL;
        l->n--;
}

/*
 * Unkeyed FNV-1a may stay here, unlike keyq's and the replay judge's
 * tables: every provider key is hex(HMAC-SHA256(provider_key.secret,
 * payment id)) (payment_provider_key, made by the claim; the reconciler
 * and review read it back from the database), an output of a MAC under a
 * secret. A producer may choose what a payment id is made from, but
 * without the secret cannot tell which provider keys its intents get,
 * hence cannot make them share a bucket; and the calls in flight are
 * bounded by consumer.max_in_flight. Provider keys taken as given from
 * outside (not a MAC) would need a keyed hash here (util/siphash.h).
 */
static unsigned bucket_of(const char *key)
{
        uint32_t h = 2166136261u; /* FNV-1a */

        for (; *key; key++)
                h = (h ^ (unsigned char)*key) * 16777619u;
        return h % GW_BUCKETS;
}

static struct gw_call *leader_find(struct gateway *gw, const char *key)
{
        struct gw_call *c = gw->bucket[bucket_of(key)];

        for (; c; c = c->hnext)
                if (strcmp(c->provider_key, key) == 0)
                        return c;
        return NULL;
}

static void leader_add(struct gateway *gw, struct gw_call *c)
{
        unsigned b = bucket_of(c->provider_key);

        c->hnext      = gw->bucket[b];
        gw->bucket[b] = c;
}

static void leader_del(struct gateway *gw, struct gw_call *c)
{
        struct gw_call **pp = &gw->bucket[bucket_of(c->provider_key)];

        for (; *pp; pp = &(*pp)->hnext) {
                if (*pp == c) {
                        *pp      = c->hnext;
                        c->hnext = NULL;
                        return;
                }
        }
}

/* ---- a call's life ---- */

void gateway_call_free(struct gw_call *c)
{
        if (!c)
                return;
        if (c->easy)
                curl_easy_cleanup(c->easy);
        gateway_slist_wipe_free(c->post_headers);
        free(c->body);
        free(c->reference);
        free(c->provider_key);
        free(c->tenant_id);
        free(c->currency);
        free(c->query_url);
        buf_free(&c->resp);
        free(c);
}

static struct gw_call *call_new(struct gateway *gw, enum call_kind kind,
                                gateway_done_cb *cb, void *opaque)
{
        struct gw_call *c = xcalloc(1, sizeof(*c));

        c->gw                 = gw;
        c->kind               = kind;
        c->cb                 = cb;
        c->opaque             = opaque;
        c->started_ms         = time_mono_ms();
        c->res.outcome        = GW_UNKNOWN;
        c->res.retry_after_ms = -1;
        c->res.reason         = "no answer yet";
        return c;
}

void gateway_call_finish(struct gw_call *c, enum gw_outcome outcome,
                         const char *reason)
{
        struct gateway *gw = c->gw;
        struct log_ctx ctx = gateway_call_ctx(c);
        struct gw_call *f;

        if (c->state == CALL_WAITING)
                gateway_list_del(&gw->waiting, c);
        else if (c->state == CALL_ACTIVE)
                gateway_list_del(&gw->active, c);
        if (c->kind == CALL_CHARGE && c->provider_key)
                leader_del(gw, c);
        c->res.outcome    = outcome;
        c->res.reason     = reason;
        c->res.elapsed_ms = time_mono_ms() - c->started_ms;
        if (outcome != GW_SUCCEEDED)
                c->res.charge_id[0] = '\0';
        c->state = CALL_DONE;
        gateway_list_push(&gw->done, c);

        if (outcome == GW_DEFECT)
                log_error(&ctx,
                          "gateway call needs review: %s (code %s, HTTP %d, "
                          "%d attempts)",
                          reason, c->res.error_code, c->res.http_status,
                          c->res.attempts);
        else if (outcome == GW_UNKNOWN)
                log_warn(&ctx,
                         "gateway outcome unknown: %s (HTTP %d, %d attempts, "
                         "%lld ms); left to the reconciler",
                         reason, c->res.http_status, c->res.attempts,
                         (long long)c->res.elapsed_ms);
        else
                log_debug(&ctx, "gateway call done: %s (%d attempts)",
                          gateway_outcome_name(outcome), c->res.attempts);

        /* Followers share the result; they keep their own callback. */
        while ((f = c->followers) != NULL) {
                c->followers      = f->fnext;
                f->res            = c->res;
                f->res.coalesced  = true;
                f->res.elapsed_ms = time_mono_ms() - f->started_ms;
                f->state          = CALL_DONE;
                gateway_list_push(&gw->done, f);
        }
}

void gateway_call_wait(struct gw_call *c, int64_t delay_ms)
{
        if (c->state == CALL_ACTIVE)
                gateway_list_del(&c->gw->active, c);
        c->due_ms = time_mono_ms() + (delay_ms > 0 ? delay_ms : 0);
        c->state  = CALL_WAITING;
        gateway_list_push(&c->gw->waiting, c);
}

/* ---- API ---- */

/* A charge call for req, its body built once: the bytes of every POST.
 * Returns NULL with a reason in errstr (req cannot make a body). */
static struct gw_call *charge_call_new(struct gateway *gw,
                                       const struct gateway_charge_req *req,
                                       gateway_done_cb *cb, void *opaque,
                                       char *errstr, size_t errstr_size)
{
        struct gw_call *c = NULL;
        char *body        = gateway_charge_body(req, errstr, errstr_size);

        if (!body)
                return NULL;
        c               = call_new(gw, CALL_CHARGE, cb, opaque);
        c->body         = body;
        c->lease_until  = req->lease_until_ms;
        c->resumed      = req->resume;
        c->reference    = xstrdup(req->payment_id);
        c->provider_key = xstrdup(req->provider_key);
        c->tenant_id    = xstrdup(req->tenant_id);
        c->currency     = xstrdup(req->currency);
        c->amount       = req->amount;
        log_mask_key(c->provider_key, strlen(c->provider_key), c->key_masked,
                     sizeof(c->key_masked));
        return c;
}

/* The same payment is already on its way: c shares leader's attempts, or
 * ends GW_DEFECT at once if its parameters differ. */
static void charge_join(struct gateway *gw, struct gw_call *leader,
                        struct gw_call *c)
{
        if (strcmp(leader->body, c->body) != 0) {
                struct log_ctx ctx = gateway_call_ctx(c);

                snprintf(c->res.error_code, sizeof(c->res.error_code),
                         "parameters_mismatch");
                log_error(&ctx, "provider key in flight with other "
                                "parameters; nothing sent");
                c->state       = CALL_DONE;
                c->res.outcome = GW_DEFECT;
                c->res.reason  = "provider key in flight with other "
                                 "parameters";
                gateway_list_push(&gw->done, c);
        } else {
                c->state          = CALL_FOLLOWER;
                c->fnext          = leader->followers;
                leader->followers = c;
        }
        gw->in_flight++;
}

int gateway_charge(struct gateway *gw, const struct gateway_charge_req *req,
                   gateway_done_cb *cb, void *opaque, char *errstr,
                   size_t errstr_size)
{
        struct gw_call *c, *leader;

        if (gw->destroying) {
                snprintf(errstr, errstr_size,
                         "gateway client is shutting "
                         "down");
                return -ESHUTDOWN;
        }
        if (!cb || !gateway_key_valid(req->provider_key)) {
                snprintf(errstr, errstr_size,
                         "charge needs a callback and a provider key of "
                         "1..255 printable characters");
                return -EINVAL;
        }
        c = charge_call_new(gw, req, cb, opaque, errstr, errstr_size);
        if (!c)
                return -EINVAL;
        leader = leader_find(gw, c->provider_key);
        if (leader) {
                charge_join(gw, leader, c);
                return 0;
        }
        c->query_url = gateway_query_url(gw->base_url, c->reference);
        c->post_headers =
            gateway_post_headers_new(gw->auth_header, c->provider_key);
        /* resuming against a gateway that ignores keys: ask first */
        c->next_post = gw->opts.idempotency_keys || !req->resume;
        leader_add(gw, c);
        c->state  = CALL_WAITING;
        c->due_ms = c->started_ms;
        gateway_list_push(&gw->waiting, c);
        gw->in_flight++;
        return 0;
}

int gateway_query(struct gateway *gw, const char *reference, int64_t amount,
                  const char *currency, gateway_done_cb *cb, void *opaque,
                  char *errstr, size_t errstr_size)
{
        struct gw_call *c;

        if (gw->destroying) {
                snprintf(errstr, errstr_size,
                         "gateway client is shutting "
                         "down");
                return -ESHUTDOWN;
        }
        if (!cb || !reference || !*reference || strlen(reference) > 255 ||
            amount <= 0 || !currency || !*currency) {
                snprintf(errstr, errstr_size,
                         "query needs a callback, a reference of 1..255 "
                         "bytes and the amount and currency to check");
                return -EINVAL;
        }
        c            = call_new(gw, CALL_QUERY, cb, opaque);
        c->reference = xstrdup(reference);
        c->currency  = xstrdup(currency);
        c->amount    = amount;
        c->query_url = gateway_query_url(gw->base_url, reference);
        c->next_post = false;
        c->state     = CALL_WAITING;
        c->due_ms    = c->started_ms;
        gateway_list_push(&gw->waiting, c);
        gw->in_flight++;
        return 0;
}
