/* SPDX-License-Identifier: Apache-2.0 */
/*
 * sim_server: request routing and the charge path with its faults.
 *
 * Order of a POST /v1/charges: draw every random value of this request (a
 * fixed number, from the request's own generator), check auth, validate,
 * 429?, idempotency key (409 / 422 / replay / hold), 500-before-charge?,
 * charge (recorded in the store at once), webhook, then the answer, maybe
 * delayed, maybe replaced by a 500 or a dropped connection. The key's
 * answer is stored when the answer is due, so the key is "in progress"
 * for exactly as long as the client waits.
 *
 * Must never charge without recording the charge, never store the answer
 * of a fault that happened before the charge, and never block a worker
 * thread on a timer.
 */
#include "sim_server.h"

#include <arpa/inet.h>
#include <inttypes.h>
#include <microhttpd.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>

#include "sim_charge.h"
#include "sim_hostile.h"
#include "sim_prng.h"
#include "sim_request.h"
#include "sim_store.h"
#include "sim_tls.h"
#include "sim_webhook.h"
#include "util/crypto.h"
#include "util/log.h"
#include "util/timeutil.h"

#define MAX_BODY    (64 * 1024)
#define MAX_KEY_LEN 1024
#define SWEEP_BATCH 20000

enum cx_state {
        CX_COLLECTING,
        CX_WAITING, /* suspended, in the timer heap */
        CX_READY,   /* due: answer on the next handler call */
};

struct conn_ctx {
        struct MHD_Connection *conn;
        enum cx_state state;
        char *body;
        size_t len, cap;
        bool too_big;
        /* the prepared answer */
        unsigned status;
        char *answer;
        bool replayed;
        int64_t retry_after; /* < 0: no header */
        bool drop;
        /* key to finish when the answer is due */
        char *key;
        uint64_t gen;
        int store_status;
        char *store_body;
};

struct timer_entry {
        int64_t due_ms;
        struct conn_ctx *cx;
};

struct sim_server {
        struct MHD_Daemon *mhd;
        struct sim_tls tls; /* --tls-cert: HTTPS */
        int port;
        struct sim_store *st;
        struct sim_webhook *wh;
        pthread_mutex_t cfg_lock;
        struct sim_config cfg;
        char id_prefix[13];
        atomic_uint_fast64_t next_charge;
        /* timer */
        pthread_mutex_t tlock;
        pthread_cond_t tcond;
        pthread_t tthread;
        bool tstarted;
        bool tstop;
        struct timer_entry *heap;
        size_t n, cap;
};

static const struct log_ctx srv_ctx = { "gatewaysim", NULL, -1,  -1,
                                        NULL,         NULL, NULL };

/* ---- timer heap (tlock held) ---- */

static int timer_push(struct sim_server *srv, int64_t due, struct conn_ctx *cx)
{
        size_t i;

        if (srv->n == srv->cap) {
                size_t cap            = srv->cap ? srv->cap * 2 : 256;
                struct timer_entry *h = realloc(srv->heap, cap * sizeof(*h));

                if (!h)
                        return -1;
                srv->heap = h;
                srv->cap  = cap;
        }
        i = srv->n++;
        while (i > 0 && srv->heap[(i - 1) / 2].due_ms > due) {
                srv->heap[i] = srv->heap[(i - 1) / 2];
                i            = (i - 1) / 2;
        }
        srv->heap[i].due_ms = due;
        srv->heap[i].cx     = cx;
        return 0;
}

static struct conn_ctx *timer_pop(struct sim_server *srv)
{
        struct conn_ctx *top    = srv->heap[0].cx;
        struct timer_entry last = srv->heap[--srv->n];
        size_t i                = 0;

        for (;;) {
                size_t c = 2 * i + 1;

                if (c >= srv->n)
                        break;
                if (c + 1 < srv->n &&
                    srv->heap[c + 1].due_ms < srv->heap[c].due_ms)
                        c++;
                if (srv->heap[c].due_ms >= last.due_ms)
                        break;
                srv->heap[i] = srv->heap[c];
                i            = c;
        }
        if (srv->n)
                srv->heap[i] = last;
        return top;
}

static void cfg_snapshot(struct sim_server *srv, struct sim_config *out)
{
        pthread_mutex_lock(&srv->cfg_lock);
        *out = srv->cfg;
        pthread_mutex_unlock(&srv->cfg_lock);
}

/* Timer thread: resumes due connections, forgets expired keys. */
static void *timer_main(void *arg)
{
        struct sim_server *srv = arg;
        int64_t next_sweep     = 0;

        pthread_mutex_lock(&srv->tlock);
        while (!srv->tstop) {
                int64_t now = time_mono_ms();
                int64_t wait;
                struct timespec ts;

                while (srv->n && srv->heap[0].due_ms <= now) {
                        struct conn_ctx *cx = timer_pop(srv);

                        cx->state = CX_READY;
                        MHD_resume_connection(cx->conn);
                }
                if (now >= next_sweep) {
                        struct sim_config cfg;

                        pthread_mutex_unlock(&srv->tlock);
                        cfg_snapshot(srv, &cfg);
                        sim_store_sweep(srv->st, now, cfg.key_retention_ms,
                                        SWEEP_BATCH);
                        next_sweep = now + 100;
                        pthread_mutex_lock(&srv->tlock);
                        continue;
                }
                wait = srv->n ? srv->heap[0].due_ms - now : 100;
                if (wait > 100)
                        wait = 100;
                clock_gettime(CLOCK_MONOTONIC, &ts);
                ts.tv_nsec += (long)(wait * 1000000);
                ts.tv_sec += ts.tv_nsec / 1000000000L;
                ts.tv_nsec %= 1000000000L;
                pthread_cond_timedwait(&srv->tcond, &srv->tlock, &ts);
        }
        pthread_mutex_unlock(&srv->tlock);
        return NULL;
}

/* ---- answers ---- */

/* Takes ownership of body (malloc'd text). */
static void prepare(struct conn_ctx *cx, unsigned status, char *body)
{
        free(cx->answer);
        cx->status = status;
        cx->answer = body;
}

static char *error_body(const char *type, const char *code, const char *param,
                        const char *message)
{
        json_t *err = json_pack("{ssss}", "type", type, "code", code);
        json_t *o;
        char *text;

        if (!err)
                return NULL;
        if (param)
                json_object_set_new(err, "param", json_string(param));
        if (message)
                json_object_set_new(err, "message", json_string(message));
        o    = json_pack("{so}", "error", err);
        text = o ? json_dumps(o, JSON_COMPACT) : NULL;
        json_decref(o);
        return text;
}

/* Sends the prepared answer now (or drops the connection). */
static enum MHD_Result answer_now(struct sim_server *srv, struct conn_ctx *cx)
{
        struct MHD_Response *resp;
        enum MHD_Result ret;
        char buf[32];

        if (cx->key) {
                sim_store_key_finish(
                    srv->st, cx->key, cx->gen, cx->store_status,
                    cx->store_body ? cx->store_body : cx->answer,
                    time_mono_ms());
                free(cx->key);
                cx->key = NULL;
        }
        if (cx->drop || !cx->answer)
                return MHD_NO; /* closes the connection, no answer */
        resp = MHD_create_response_from_buffer(strlen(cx->answer), cx->answer,
                                               MHD_RESPMEM_MUST_FREE);
        if (!resp)
                return MHD_NO;
        cx->answer = NULL; /* owned by resp */
        MHD_add_response_header(resp, "Content-Type", "application/json");
        if (cx->replayed)
                MHD_add_response_header(resp, "Idempotent-Replayed", "true");
        if (cx->retry_after >= 0) {
                snprintf(buf, sizeof(buf), "%" PRId64, cx->retry_after);
                MHD_add_response_header(resp, "Retry-After", buf);
        }
        ret = MHD_queue_response(cx->conn, cx->status, resp);
        MHD_destroy_response(resp);
        return ret;
}

/* Answers after delay_ms without holding the worker thread. */
static enum MHD_Result deliver(struct sim_server *srv, struct conn_ctx *cx,
                               int64_t delay_ms)
{
        int rc;

        if (delay_ms <= 0)
                return answer_now(srv, cx);
        pthread_mutex_lock(&srv->tlock);
        if (srv->tstop) {
                /* shutting down: no new suspensions */
                pthread_mutex_unlock(&srv->tlock);
                return answer_now(srv, cx);
        }
        rc = timer_push(srv, time_mono_ms() + delay_ms, cx);
        if (rc == 0) {
                /* Suspended under tlock: the timer cannot resume it
                 * before this suspend (a resume must follow it). */
                cx->state = CX_WAITING;
                MHD_suspend_connection(cx->conn);
                if (srv->heap[0].cx == cx)
                        pthread_cond_signal(&srv->tcond);
        }
        pthread_mutex_unlock(&srv->tlock);
        if (rc < 0) /* no memory for the timer: answer now, not never */
                return answer_now(srv, cx);
        return MHD_YES;
}

static enum MHD_Result simple(struct sim_server *srv, struct conn_ctx *cx,
                              unsigned status, char *body)
{
        prepare(cx, status, body);
        return answer_now(srv, cx);
}

static enum MHD_Result json_answer(struct sim_server *srv, struct conn_ctx *cx,
                                   unsigned status, json_t *o)
{
        char *text = o ? json_dumps(o, JSON_COMPACT) : NULL;

        json_decref(o);
        return simple(srv, cx, status, text);
}

static bool authorized(const struct sim_config *cfg,
                       struct MHD_Connection *conn)
{
        const char *h;
        char want[SIM_STR_LARGE + 8];
        size_t wl;

        if (!cfg->api_key[0])
                return true;
        h = MHD_lookup_connection_value(conn, MHD_HEADER_KIND, "Authorization");
        if (!h)
                return false;
        wl = (size_t)snprintf(want, sizeof(want), "Bearer %s", cfg->api_key);
        return strlen(h) == wl && crypto_equal(h, want, wl);
}

/* ---- POST /v1/charges ---- */

struct draws {
        bool f429, f500_before, slow, drop, f500_after, tail, wh_dup;
        int64_t latency, wh_delay, wh_dup_delay;
};

static void draw_all(const struct sim_config *cfg, uint64_t seq,
                     struct draws *d)
{
        struct sim_prng prng;

        sim_prng_init(&prng, cfg->seed, seq);
        /* fixed order and count: see sim_prng.h */
        d->f429        = sim_prng_chance(&prng, cfg->p_429);
        d->f500_before = sim_prng_chance(&prng, cfg->p_500_before_charge);
        d->slow        = sim_prng_chance(&prng, cfg->p_slow);
        d->drop        = sim_prng_chance(&prng, cfg->p_drop_after_charge);
        d->f500_after  = sim_prng_chance(&prng, cfg->p_500_after_charge);
        d->tail        = sim_prng_chance(&prng, cfg->p_tail);
        d->wh_dup      = sim_prng_chance(&prng, cfg->p_webhook_dup);
        d->latency =
            sim_prng_range(&prng, cfg->latency_min_ms, cfg->latency_max_ms);
        d->wh_delay     = sim_prng_range(&prng, 0, cfg->webhook_delay_ms);
        d->wh_dup_delay = sim_prng_range(&prng, 0, cfg->webhook_delay_ms);
}

static char *webhook_body(bool succeeded, const char *charge)
{
        static const char fmt[] = "{\"type\":\"%s\",\"data\":%s}";
        const char *type = succeeded ? "charge.succeeded" : "charge.failed";
        size_t len       = sizeof(fmt) + strlen(type) + strlen(charge);
        char *out        = malloc(len);

        if (out)
                snprintf(out, len, fmt, type, charge);
        return out;
}

static enum MHD_Result post_charge(struct sim_server *srv, struct conn_ctx *cx)
{
        struct sim_config cfg;
        struct sim_request req;
        struct draws d;
        const char *code, *param, *key;
        enum sim_key_result kr;
        enum MHD_Result ret;
        char base_id[40], *id, *charge = NULL, *wbody;
        bool succeeded;
        uint64_t seq;
        int64_t delay;
        size_t plen;
        int kstatus = 0;

        cfg_snapshot(srv, &cfg);
        seq = sim_store_next_post(srv->st);
        draw_all(&cfg, seq, &d);

        if (!authorized(&cfg, cx->conn)) {
                sim_store_count(srv->st, SIM_CTR_401, 1);
                return simple(srv, cx, 401,
                              error_body("invalid_request_error",
                                         "unauthorized", NULL,
                                         "missing or wrong API key"));
        }
        if (cx->too_big || sim_request_parse(cx->body ? cx->body : "", cx->len,
                                             &req, &code, &param) < 0) {
                sim_store_count(srv->st, SIM_CTR_400, 1);
                return simple(srv, cx, 400,
                              error_body("invalid_request_error",
                                         cx->too_big ? "body_too_large" : code,
                                         cx->too_big ? NULL : param, NULL));
        }
        key = MHD_lookup_connection_value(cx->conn, MHD_HEADER_KIND,
                                          "Idempotency-Key");
        if (key && strlen(key) > MAX_KEY_LEN) {
                sim_store_count(srv->st, SIM_CTR_400, 1);
                ret = simple(srv, cx, 400,
                             error_body("invalid_request_error",
                                        "parameter_invalid", "Idempotency-Key",
                                        NULL));
                goto out;
        }
        if (cfg.ignore_idempotency || (key && !key[0]))
                key = NULL;
        delay = d.latency;
        if (d.latency > 0)
                sim_store_count(srv->st, SIM_FAULT_LATENCY, 1);
        if (d.tail) {
                delay += cfg.tail_ms;
                sim_store_count(srv->st, SIM_FAULT_TAIL, 1);
        }
        if (d.f429) {
                sim_store_count(srv->st, SIM_FAULT_429, 1);
                cx->retry_after = cfg.retry_after;
                prepare(cx, 429,
                        error_body("rate_limit_error", "rate_limited", NULL,
                                   "simulated rate limit"));
                ret = deliver(srv, cx, delay);
                goto out;
        }
        if (key) {
                char *stored = NULL;

                kr = sim_store_key_begin(srv->st, key, req.fingerprint,
                                         time_mono_ms(), cfg.key_retention_ms,
                                         &cx->gen, &kstatus, &stored);
                switch (kr) {
                case SIM_KEY_IN_PROGRESS:
                        sim_store_count(srv->st, SIM_CTR_409, 1);
                        prepare(cx, 409,
                                error_body("idempotency_error",
                                           "request_in_progress", NULL, NULL));
                        ret = deliver(srv, cx, delay);
                        goto out;
                case SIM_KEY_MISMATCH:
                        sim_store_count(srv->st, SIM_CTR_422, 1);
                        prepare(cx, 422,
                                error_body("idempotency_error",
                                           "parameters_mismatch", NULL, NULL));
                        ret = deliver(srv, cx, delay);
                        goto out;
                case SIM_KEY_REPLAY:
                        sim_store_count(srv->st, SIM_CTR_REPLAYED, 1);
                        cx->replayed = true;
                        prepare(cx, (unsigned)kstatus, stored);
                        ret = deliver(srv, cx, delay);
                        goto out;
                case SIM_KEY_NEW:
                        break;
                }
        }
        if (d.f500_before) {
                sim_store_count(srv->st, SIM_FAULT_500_BEFORE_CHARGE, 1);
                if (key)
                        sim_store_key_release(srv->st, key, cx->gen);
                prepare(cx, 500,
                        error_body("api_error", "internal_error", NULL,
                                   "simulated failure before the charge"));
                ret = deliver(srv, cx, delay);
                goto out;
        }

        /* the charge */
        plen = strlen(cfg.decline_prefix);
        succeeded =
            !(plen && !strncmp(req.payment_method, cfg.decline_prefix, plen));
        snprintf(base_id, sizeof(base_id), "ch_%s%016" PRIxFAST64,
                 srv->id_prefix, atomic_fetch_add(&srv->next_charge, 1));
        id = malloc((size_t)cfg.charge_id_bytes + sizeof(base_id));
        if (id && sim_charge_id(base_id, (size_t)cfg.charge_id_bytes, id,
                                (size_t)cfg.charge_id_bytes + sizeof(base_id)))
                charge = sim_charge_json(id, succeeded, &req, &cfg);
        free(id);
        if (!charge ||
            sim_store_add_charge(srv->st, req.reference, req.tenant_id,
                                 req.order_id, succeeded, charge) < 0) {
                log_error(&srv_ctx, "out of memory: charge not made");
                if (key)
                        sim_store_key_release(srv->st, key, cx->gen);
                ret = simple(
                    srv, cx, 500,
                    error_body("api_error", "out_of_memory", NULL, NULL));
                goto out;
        }
        if (cfg.webhook_url[0]) {
                wbody = webhook_body(succeeded, charge);
                if (wbody) {
                        if (d.wh_dup)
                                sim_store_count(srv->st, SIM_FAULT_WEBHOOK_DUP,
                                                1);
                        sim_webhook_enqueue(
                            srv->wh, cfg.webhook_url, cfg.webhook_secret, wbody,
                            d.wh_delay, d.wh_dup, d.wh_dup_delay,
                            (int)cfg.webhook_attempts);
                        free(wbody);
                } else {
                        sim_store_count(srv->st, SIM_CTR_WH_DROPPED, 1);
                }
        }
        if (d.slow) {
                delay += cfg.slow_ms;
                sim_store_count(srv->st, SIM_FAULT_SLOW, 1);
        }
        cx->store_status = succeeded ? 200 : 402;
        if (d.drop) {
                sim_store_count(srv->st, SIM_FAULT_DROP_AFTER_CHARGE, 1);
                cx->drop = true;
                prepare(cx, (unsigned)cx->store_status, charge);
                charge = NULL;
        } else if (d.f500_after) {
                sim_store_count(srv->st, SIM_FAULT_500_AFTER_CHARGE, 1);
                prepare(cx, 500,
                        error_body("api_error", "internal_error", NULL,
                                   "simulated failure after the charge"));
                if (cfg.store_500_after_charge) {
                        cx->store_status = 500;
                } else {
                        cx->store_body = charge;
                        charge         = NULL;
                }
        } else {
                prepare(cx, (unsigned)cx->store_status, charge);
                charge = NULL;
        }
        if (key) {
                cx->key = strdup(key);
                if (!cx->key) /* cannot store the answer: free the key */
                        sim_store_key_release(srv->st, key, cx->gen);
        }
        ret = deliver(srv, cx, delay);
out:
        free(charge);
        sim_request_release(&req);
        return ret;
}

/* ---- other routes ---- */

static enum MHD_Result get_charges(struct sim_server *srv, struct conn_ctx *cx)
{
        struct sim_config cfg;
        const char *ref;

        cfg_snapshot(srv, &cfg);
        if (!authorized(&cfg, cx->conn)) {
                sim_store_count(srv->st, SIM_CTR_401, 1);
                return simple(srv, cx, 401,
                              error_body("invalid_request_error",
                                         "unauthorized", NULL, NULL));
        }
        ref = MHD_lookup_connection_value(cx->conn, MHD_GET_ARGUMENT_KIND,
                                          "reference");
        if (!ref || !ref[0])
                return simple(srv, cx, 400,
                              error_body("invalid_request_error",
                                         "parameter_missing", "reference",
                                         NULL));
        return simple(srv, cx, 200,
                      sim_store_charges_by_reference(srv->st, ref));
}

static enum MHD_Result post_config(struct sim_server *srv, struct conn_ctx *cx)
{
        json_t *o = json_loadb(cx->body ? cx->body : "", cx->len, 0, NULL);
        char err[256];
        uint64_t old_seed;
        enum log_level lvl;
        json_t *out;
        int rc;

        if (!o || cx->too_big) {
                json_decref(o);
                return simple(srv, cx, 400,
                              error_body("invalid_request_error",
                                         "invalid_json", NULL, NULL));
        }
        pthread_mutex_lock(&srv->cfg_lock);
        old_seed = srv->cfg.seed;
        rc       = sim_config_apply_json(&srv->cfg, o, err, sizeof(err));
        if (rc == 0 &&
            (json_object_get(o, "seed") || old_seed != srv->cfg.seed))
                sim_store_restart_sequence(srv->st);
        if (rc == 0 && log_level_parse(srv->cfg.log_level, &lvl))
                log_set_level(lvl);
        out = sim_config_to_json(&srv->cfg);
        pthread_mutex_unlock(&srv->cfg_lock);
        json_decref(o);
        if (rc < 0) {
                json_decref(out);
                return simple(srv, cx, 400,
                              error_body("invalid_request_error",
                                         "invalid_config", NULL, err));
        }
        log_info(&srv_ctx, "configuration changed at runtime");
        return json_answer(srv, cx, 200, out);
}

static enum MHD_Result route(struct sim_server *srv, struct conn_ctx *cx,
                             const char *url, const char *method)
{
        bool get = !strcmp(method, "GET"), post = !strcmp(method, "POST");
        struct sim_config cfg;
        const char *q;

        if (!strcmp(url, "/v1/charges")) {
                if (post)
                        return post_charge(srv, cx);
                if (get)
                        return get_charges(srv, cx);
        } else if (!strcmp(url, "/_sim/health")) {
                if (get)
                        return json_answer(srv, cx, 200,
                                           json_pack("{ss}", "status", "ok"));
        } else if (!strcmp(url, "/_sim/stats")) {
                if (get) {
                        q = MHD_lookup_connection_value(
                            cx->conn, MHD_GET_ARGUMENT_KIND, "summary");
                        return json_answer(
                            srv, cx, 200,
                            sim_store_stats(srv->st, q && strcmp(q, "0") != 0 &&
                                                         strcmp(q, "false")));
                }
        } else if (!strcmp(url, "/_sim/reset")) {
                if (post) {
                        sim_webhook_clear(srv->wh);
                        sim_store_reset(srv->st);
                        return json_answer(srv, cx, 200,
                                           json_pack("{sb}", "reset", 1));
                }
        } else if (!strcmp(url, "/_sim/config")) {
                if (post)
                        return post_config(srv, cx);
                if (get) {
                        cfg_snapshot(srv, &cfg);
                        return json_answer(srv, cx, 200,
                                           sim_config_to_json(&cfg));
                }
        } else {
                return simple(srv, cx, 404,
                              error_body("invalid_request_error", "not_found",
                                         NULL, url));
        }
        return simple(srv, cx, 405,
                      error_body("invalid_request_error", "method_not_allowed",
                                 NULL, method));
}

static enum MHD_Result on_request(void *cls, struct MHD_Connection *conn,
                                  const char *url, const char *method,
                                  const char *version, const char *upload,
                                  size_t *upload_size, void **con_cls)
{
        struct sim_server *srv = cls;
        struct conn_ctx *cx    = *con_cls;

        (void)version;
        if (!cx) {
                cx = calloc(1, sizeof(*cx));
                if (!cx)
                        return MHD_NO;
                cx->conn        = conn;
                cx->retry_after = -1;
                *con_cls        = cx;
                return MHD_YES;
        }
        if (cx->state == CX_READY)
                return answer_now(srv, cx);
        if (cx->state == CX_WAITING)
                return MHD_YES; /* not due yet */
        if (*upload_size) {
                size_t n = *upload_size;

                *upload_size = 0;
                if (cx->too_big || cx->len + n > MAX_BODY) {
                        cx->too_big = true;
                        return MHD_YES;
                }
                if (cx->len + n + 1 > cx->cap) {
                        size_t cap = (cx->len + n + 1) * 2;
                        char *b    = realloc(cx->body, cap);

                        if (!b)
                                return MHD_NO;
                        cx->body = b;
                        cx->cap  = cap;
                }
                memcpy(cx->body + cx->len, upload, n);
                cx->len += n;
                cx->body[cx->len] = '\0';
                return MHD_YES;
        }
        return route(srv, cx, url, method);
}

static void on_completed(void *cls, struct MHD_Connection *conn, void **con_cls,
                         enum MHD_RequestTerminationCode toe)
{
        struct conn_ctx *cx    = *con_cls;
        struct sim_server *srv = cls;

        (void)conn;
        (void)toe;
        if (!cx)
                return;
        /* cx->key is set only once the charge was made (see the POST
         * handler). A connection that ends before its answer went out (the
         * client gave up on a slow answer, or shutdown) must still store
         * that answer for the key: releasing it would let the client's
         * retry with the same key charge a second time. */
        if (cx->key)
                sim_store_key_finish(
                    srv->st, cx->key, cx->gen, cx->store_status,
                    cx->store_body ? cx->store_body : cx->answer,
                    time_mono_ms());
        free(cx->key);
        free(cx->body);
        free(cx->answer);
        free(cx->store_body);
        free(cx);
        *con_cls = NULL;
}

/* libmicrohttpd's messages go to the JSON-lines log. The one for a
 * deliberately dropped connection (drop-after-charge) is expected. */
static void on_mhd_log(void *cls, const char *fmt, va_list ap)
{
        char msg[512];
        size_t n;

        (void)cls;
        vsnprintf(msg, sizeof(msg), fmt, ap);
        n = strlen(msg);
        while (n && msg[n - 1] == '\n')
                msg[--n] = '\0';
        if (strstr(msg, "Application reported internal error"))
                log_debug(&srv_ctx, "libmicrohttpd: %s", msg);
        else
                log_warn(&srv_ctx, "libmicrohttpd: %s", msg);
}

struct sim_server *sim_server_start(const struct sim_config *cfg, char *errstr,
                                    size_t errstr_size)
{
        struct sim_server *srv = calloc(1, sizeof(*srv));
        unsigned char rnd[6];
        struct sockaddr_in sa;
        const union MHD_DaemonInfo *info;
        pthread_condattr_t ca;

        if (!srv) {
                snprintf(errstr, errstr_size, "out of memory");
                return NULL;
        }
        srv->cfg = *cfg;
        pthread_mutex_init(&srv->cfg_lock, NULL);
        pthread_mutex_init(&srv->tlock, NULL);
        pthread_condattr_init(&ca);
        pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
        pthread_cond_init(&srv->tcond, &ca);
        pthread_condattr_destroy(&ca);
        atomic_init(&srv->next_charge, 1);
        if (!crypto_random(rnd, sizeof(rnd))) {
                snprintf(errstr, errstr_size, "no random source");
                goto fail;
        }
        crypto_hex(rnd, sizeof(rnd), srv->id_prefix);
        srv->st = sim_store_new();
        srv->wh = srv->st ? sim_webhook_new(srv->st) : NULL;
        if (!srv->wh) {
                snprintf(errstr, errstr_size,
                         "cannot start the webhook "
                         "sender");
                goto fail;
        }
        if (pthread_create(&srv->tthread, NULL, timer_main, srv) != 0) {
                snprintf(errstr, errstr_size, "cannot start the timer thread");
                goto fail;
        }
        srv->tstarted = true;

        memset(&sa, 0, sizeof(sa));
        sa.sin_family = AF_INET;
        sa.sin_port   = htons((uint16_t)cfg->port);
        if (inet_pton(AF_INET, cfg->bind, &sa.sin_addr) != 1) {
                snprintf(errstr, errstr_size,
                         "invalid value for --bind: %s (IPv4 address)",
                         cfg->bind);
                goto fail;
        }
        if (sim_tls_load(&srv->tls, cfg, errstr, errstr_size) < 0)
                goto fail;
        srv->mhd = MHD_start_daemon(
            MHD_USE_AUTO_INTERNAL_THREAD | MHD_ALLOW_SUSPEND_RESUME |
                MHD_USE_ERROR_LOG | sim_tls_flags(&srv->tls),
            0, NULL, NULL, on_request, srv, MHD_OPTION_EXTERNAL_LOGGER,
            on_mhd_log, NULL, MHD_OPTION_SOCK_ADDR, &sa,
            MHD_OPTION_THREAD_POOL_SIZE, (unsigned int)cfg->threads,
            MHD_OPTION_NOTIFY_COMPLETED, on_completed, srv,
            MHD_OPTION_CONNECTION_TIMEOUT, (unsigned int)60,
            MHD_OPTION_CONNECTION_LIMIT, (unsigned int)4000,
            MHD_OPTION_LISTEN_BACKLOG_SIZE, (unsigned int)1024,
            MHD_OPTION_ARRAY, srv->tls.opts, MHD_OPTION_END);
        if (!srv->mhd) {
                snprintf(errstr, errstr_size, "cannot listen on %s:%d (%s)",
                         cfg->bind, cfg->port,
                         srv->tls.cert ? "in use, not allowed, or the TLS "
                                         "certificate or key was refused"
                                       : "in use, or not allowed");
                goto fail;
        }
        info      = MHD_get_daemon_info(srv->mhd, MHD_DAEMON_INFO_BIND_PORT);
        srv->port = info ? (int)info->port : cfg->port;
        log_info(&srv_ctx, "listening on %s:%d (%s) with %d threads", cfg->bind,
                 srv->port, srv->tls.cert ? "https" : "http", cfg->threads);
        return srv;
fail:
        sim_server_stop(srv);
        return NULL;
}

int sim_server_port(const struct sim_server *srv)
{
        return srv->port;
}

void sim_server_stop(struct sim_server *srv)
{
        if (!srv)
                return;
        if (srv->tstarted) {
                pthread_mutex_lock(&srv->tlock);
                srv->tstop = true;
                pthread_cond_signal(&srv->tcond);
                pthread_mutex_unlock(&srv->tlock);
                pthread_join(srv->tthread, NULL);
        }
        /* MHD_stop_daemon() needs every suspended connection resumed;
         * tstop keeps new ones from being suspended. */
        pthread_mutex_lock(&srv->tlock);
        srv->tstop = true;
        while (srv->n) {
                struct conn_ctx *cx = timer_pop(srv);

                cx->state = CX_READY;
                cx->drop  = true;
                MHD_resume_connection(cx->conn);
        }
        pthread_mutex_unlock(&srv->tlock);
        if (srv->mhd)
                MHD_stop_daemon(srv->mhd);
        sim_tls_free(&srv->tls);
        sim_webhook_destroy(srv->wh);
        sim_store_destroy(srv->st);
        free(srv->heap);
        pthread_cond_destroy(&srv->tcond);
        pthread_mutex_destroy(&srv->tlock);
        pthread_mutex_destroy(&srv->cfg_lock);
        free(srv);
}
