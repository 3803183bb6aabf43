/*
 * gateway client over libcurl multi: one thread, many calls, one connection
 * pool. A call is a small state machine: POST (or GET first when resuming
 * against a gateway that ignores keys), classify, ask the retry policy,
 * wait on a timer, go again. Nothing blocks; gateway_poll() moves it all.
 *
 * Must never report a timeout, reset or 5xx as FAILED, never change the key
 * or the body of a payment between attempts, never re-POST to a gateway
 * that ignores keys without an empty query list first, and never log the
 * API key, a full provider key or the payment method.
 */
#include "gateway/client.h"

#include "util/crypto.h"
#include "util/log.h"
#include "util/timeutil.h"

#include <curl/curl.h>
#include <errno.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#define GW_CHARGE_BODY_MAX (64 * 1024)  /* answer to a POST */
#define GW_QUERY_BODY_MAX  (512 * 1024) /* answer to a GET */
#define GW_BUCKETS         1024         /* provider key -> call in flight */
#define GW_START_MAX       4096         /* attempts started per poll */

enum call_kind { CALL_CHARGE, CALL_QUERY };
enum call_state { CALL_WAITING, CALL_ACTIVE, CALL_DONE, CALL_FOLLOWER };

struct gw_call {
        struct gateway *gw;
        enum call_kind kind;
        enum call_state state;
        bool next_post; /* the next attempt is a POST (else a GET) */
        struct gw_call *prev, *next; /* in gw->waiting / active / done */
        struct gw_call *hnext;       /* in gw->bucket[] (leaders) */
        struct gw_call *followers;   /* coalesced calls, via fnext */
        struct gw_call *fnext;

        char *body; /* POST body, built once: the same bytes every time */
        char *reference;
        char *provider_key;
        char *tenant_id;
        char *currency;
        int64_t amount;
        _Atomic int64_t *lease_until; /* the caller's lease, or NULL */
        bool resumed;    /* the payment may have been posted before */
        bool confirming; /* ignore-keys: a 402 to a re-POST awaits a query */
        struct gw_verdict refusal; /* that 402, while confirming */
        char key_masked[LOG_MASKED_KEY_SIZE];
        char *query_url;
        struct curl_slist *post_headers;

        CURL *easy;
        char *resp;
        size_t resp_len, resp_cap, resp_max;
        bool resp_too_large;
        char retry_after[32];
        bool have_retry_after;
        bool replayed;
        char curl_err[CURL_ERROR_SIZE];

        int64_t started_ms; /* gateway_charge / gateway_query */
        int64_t attempt_ms; /* current attempt's start */
        int64_t due_ms;     /* CALL_WAITING: when to go */

        gateway_done_cb *cb;
        void *opaque;
        struct gateway_result res;
};

struct call_list {
        struct gw_call *head, *tail;
        int n;
};

struct gateway {
        CURLM *multi;
        char *base_url;
        char *charges_url;
        char *auth_header; /* "Authorization: Bearer <key>": a secret */
        char *ca_file;
        struct curl_slist *get_headers;
        struct gateway_opts opts; /* string members point to copies above */
        uint64_t rng;
        struct call_list waiting, active, done;
        struct gw_call *bucket[GW_BUCKETS];
        int in_flight;
        bool in_poll;
        bool destroying;
};

static struct log_ctx call_ctx(const struct gw_call *c)
{
        struct log_ctx ctx = LOG_CTX_INIT;

        ctx.component  = "gateway";
        ctx.payment_id = c->reference;
        ctx.tenant_id  = c->tenant_id;
        ctx.key_masked = c->key_masked[0] ? c->key_masked : NULL;
        return ctx;
}

/* ---- lists ---- */

static void list_push(struct call_list *l, struct gw_call *c)
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

static void list_del(struct call_list *l, struct gw_call *c)
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

/* ---- jitter source (splitmix64) ---- */

static uint64_t gw_rand(void *opaque)
{
        uint64_t *s = opaque, z;

        z = (*s += 0x9e3779b97f4a7c15ULL);
        z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
        z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
        return z ^ (z >> 31);
}

/* ---- options ---- */

void gateway_opts_default(struct gateway_opts *o)
{
        memset(o, 0, sizeof(*o));
        o->tls_verify         = true;
        o->idempotency_keys   = true;
        o->connect_timeout_ms = 3000;
        o->timeout_ms         = 10000;
        o->max_connections    = 16;
        o->query_settle_ms    = 2000;
        o->lease_margin_ms    = 5000;
        retry_policy_default(&o->retry);
}

static bool url_is_loopback_http(const char *url)
{
        static const char *const ok[] = { "http://127.0.0.1",
                                          "http://localhost", "http://[::1]" };

        for (size_t i = 0; i < sizeof(ok) / sizeof(ok[0]); i++) {
                size_t n = strlen(ok[i]);
                if (strncasecmp(url, ok[i], n) == 0 &&
                    (url[n] == ':' || url[n] == '/' || url[n] == '\0'))
                        return true;
        }
        return false;
}

static void wipe_free(char *s)
{
        if (!s)
                return;
        /* volatile so the wipe of a secret is not optimised away */
        for (volatile char *p = s; *p; p++)
                *p = 0;
        free(s);
}

/* Wipes the strings of a header list (it may hold the API key), frees it. */
static void slist_wipe_free(struct curl_slist *l)
{
        for (struct curl_slist *i = l; i; i = i->next)
                for (volatile char *p = i->data; *p; p++)
                        *p = 0;
        curl_slist_free_all(l);
}

struct gateway *gateway_new(const struct gateway_opts *o, char *errstr,
                            size_t errstr_size)
{
        struct gateway *gw = NULL;
        bool curl_up       = false;
        size_t klen;
        struct log_ctx ctx = LOG_CTX_INIT;

        ctx.component = "gateway";
        if (!o->base_url || (strncasecmp(o->base_url, "https://", 8) != 0 &&
                             strncasecmp(o->base_url, "http://", 7) != 0)) {
                snprintf(errstr, errstr_size,
                         "gateway.url must start with https:// or http://");
                goto fail;
        }
        if (!o->api_key || !*o->api_key || strpbrk(o->api_key, "\r\n")) {
                snprintf(errstr, errstr_size,
                         "gateway.api_key is missing or has a line break");
                goto fail;
        }
        if (o->connect_timeout_ms <= 0 || o->timeout_ms <= 0 ||
            o->max_connections < 1 || o->query_settle_ms < 0 ||
            o->lease_margin_ms < 0) {
                snprintf(errstr, errstr_size,
                         "gateway timeouts must be > 0, max connections "
                         ">= 1 and the lease margin >= 0");
                goto fail;
        }
        if (!retry_policy_valid(&o->retry, errstr, errstr_size))
                goto fail;
        if (curl_global_init(CURL_GLOBAL_DEFAULT) != CURLE_OK) {
                snprintf(errstr, errstr_size, "libcurl initialisation failed");
                goto fail;
        }
        curl_up = true;
        gw      = calloc(1, sizeof(*gw));
        if (!gw) {
                snprintf(errstr, errstr_size, "out of memory");
                goto fail;
        }
        gw->opts        = *o;
        gw->base_url    = strdup(o->base_url);
        klen            = strlen(o->api_key);
        gw->auth_header = malloc(klen + sizeof("Authorization: Bearer "));
        gw->ca_file     = o->ca_file ? strdup(o->ca_file) : NULL;
        gw->multi       = curl_multi_init();
        if (!gw->base_url || !gw->auth_header || !gw->multi ||
            (o->ca_file && !gw->ca_file)) {
                snprintf(errstr, errstr_size, "out of memory");
                goto fail;
        }
        memcpy(gw->auth_header, "Authorization: Bearer ",
               sizeof("Authorization: Bearer ") - 1);
        memcpy(gw->auth_header + sizeof("Authorization: Bearer ") - 1,
               o->api_key, klen + 1);
        gw->opts.base_url = gw->base_url;
        gw->opts.api_key  = NULL; /* only auth_header holds it */
        gw->opts.ca_file  = gw->ca_file;
        gw->charges_url   = gw_charges_url(gw->base_url);
        if (!gw->charges_url) {
                snprintf(errstr, errstr_size, "out of memory");
                goto fail;
        }
        gw->get_headers = curl_slist_append(NULL, "Accept: application/json");
        if (gw->get_headers)
                gw->get_headers =
                    curl_slist_append(gw->get_headers, gw->auth_header);
        if (!gw->get_headers || !gw->get_headers->next) {
                snprintf(errstr, errstr_size, "out of memory");
                goto fail;
        }
        if (curl_multi_setopt(gw->multi, CURLMOPT_MAX_HOST_CONNECTIONS,
                              (long)o->max_connections) != CURLM_OK ||
            curl_multi_setopt(gw->multi, CURLMOPT_MAX_TOTAL_CONNECTIONS,
                              (long)o->max_connections) != CURLM_OK ||
            curl_multi_setopt(gw->multi, CURLMOPT_MAXCONNECTS,
                              (long)o->max_connections) != CURLM_OK) {
                snprintf(errstr, errstr_size,
                         "libcurl refused the connection limits");
                goto fail;
        }
        gw->rng = o->jitter_seed;
        if (gw->rng == 0 && !crypto_random(&gw->rng, sizeof(gw->rng))) {
                snprintf(errstr, errstr_size, "no randomness for jitter");
                goto fail;
        }
        if (!o->tls_verify)
                log_warn(&ctx, "TLS certificate verification is OFF for the "
                               "gateway (gateway.tls_verify = false)");
        if (strncasecmp(o->base_url, "http://", 7) == 0 &&
            !url_is_loopback_http(o->base_url))
                log_warn(&ctx, "gateway URL is plain http: the API key "
                               "travels unencrypted");
        if (!o->idempotency_keys)
                log_info(&ctx, "gateway ignores Idempotency-Key: querying "
                               "by reference before every retry");
        return gw;
fail:
        if (gw) {
                slist_wipe_free(gw->get_headers);
                free(gw->charges_url);
                free(gw->ca_file);
                wipe_free(gw->auth_header);
                free(gw->base_url);
                if (gw->multi)
                        curl_multi_cleanup(gw->multi);
                free(gw);
        }
        if (curl_up)
                curl_global_cleanup();
        return NULL;
}

/* ---- calls ---- */

static void call_free(struct gw_call *c)
{
        if (!c)
                return;
        if (c->easy)
                curl_easy_cleanup(c->easy);
        slist_wipe_free(c->post_headers);
        free(c->body);
        free(c->reference);
        free(c->provider_key);
        free(c->tenant_id);
        free(c->currency);
        free(c->query_url);
        free(c->resp);
        free(c);
}

static struct gw_call *call_new(struct gateway *gw, enum call_kind kind,
                                gateway_done_cb *cb, void *opaque)
{
        struct gw_call *c = calloc(1, sizeof(*c));

        if (!c)
                return NULL;
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

/* Moves c (and its followers) to the done list; callbacks run later. */
static void call_finish(struct gw_call *c, enum gw_outcome outcome,
                        const char *reason)
{
        struct gateway *gw = c->gw;
        struct log_ctx ctx = call_ctx(c);
        struct gw_call *f;

        if (c->state == CALL_WAITING)
                list_del(&gw->waiting, c);
        else if (c->state == CALL_ACTIVE)
                list_del(&gw->active, c);
        if (c->kind == CALL_CHARGE && c->provider_key)
                leader_del(gw, c);
        c->res.outcome    = outcome;
        c->res.reason     = reason;
        c->res.elapsed_ms = time_mono_ms() - c->started_ms;
        if (outcome != GW_SUCCEEDED)
                c->res.charge_id[0] = '\0';
        c->state = CALL_DONE;
        list_push(&gw->done, c);

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
                          gw_outcome_name(outcome), c->res.attempts);

        /* Followers share the result; they keep their own callback. */
        while ((f = c->followers) != NULL) {
                c->followers      = f->fnext;
                f->res            = c->res;
                f->res.coalesced  = true;
                f->res.elapsed_ms = time_mono_ms() - f->started_ms;
                f->state          = CALL_DONE;
                list_push(&gw->done, f);
        }
}

static void call_wait(struct gw_call *c, int64_t delay_ms)
{
        if (c->state == CALL_ACTIVE)
                list_del(&c->gw->active, c);
        c->due_ms = time_mono_ms() + (delay_ms > 0 ? delay_ms : 0);
        c->state  = CALL_WAITING;
        list_push(&c->gw->waiting, c);
}

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

/* ---- curl callbacks ---- */

static size_t on_body(char *ptr, size_t size, size_t nmemb, void *userdata)
{
        struct gw_call *c = userdata;
        size_t n          = size * nmemb;

        if (n > c->resp_max - c->resp_len) {
                c->resp_too_large = true;
                return 0; /* aborts the transfer: CURLE_WRITE_ERROR */
        }
        if (c->resp_len + n + 1 > c->resp_cap) {
                size_t cap = c->resp_cap ? c->resp_cap : 1024;
                char *p;

                while (cap < c->resp_len + n + 1)
                        cap *= 2;
                p = realloc(c->resp, cap);
                if (!p)
                        return 0;
                c->resp     = p;
                c->resp_cap = cap;
        }
        memcpy(c->resp + c->resp_len, ptr, n);
        c->resp_len += n;
        c->resp[c->resp_len] = '\0';
        return n;
}

static bool header_is(const char *line, size_t len, const char *name,
                      const char **value, size_t *vlen)
{
        size_t n = strlen(name);

        if (len <= n || strncasecmp(line, name, n) != 0 || line[n] != ':')
                return false;
        line += n + 1;
        len -= n + 1;
        while (len > 0 && (*line == ' ' || *line == '\t')) {
                line++;
                len--;
        }
        while (len > 0 && (line[len - 1] == '\r' || line[len - 1] == '\n' ||
                           line[len - 1] == ' ' || line[len - 1] == '\t'))
                len--;
        *value = line;
        *vlen  = len;
        return true;
}

static size_t on_header(char *buf, size_t size, size_t nitems, void *userdata)
{
        struct gw_call *c = userdata;
        size_t len        = size * nitems;
        const char *v;
        size_t vlen;

        if (len >= 5 && strncmp(buf, "HTTP/", 5) == 0) {
                /* a new response (e.g. after 100 Continue): forget */
                c->have_retry_after = false;
                c->replayed         = false;
        } else if (header_is(buf, len, "Retry-After", &v, &vlen)) {
                if (vlen >= sizeof(c->retry_after))
                        vlen = sizeof(c->retry_after) - 1;
                memcpy(c->retry_after, v, vlen);
                c->retry_after[vlen] = '\0';
                c->have_retry_after  = true;
        } else if (header_is(buf, len, "Idempotent-Replayed", &v, &vlen)) {
                c->replayed = vlen == 4 && strncasecmp(v, "true", 4) == 0;
        }
        return len;
}

static enum gw_transport transport_of(CURLcode rc)
{
        switch (rc) {
        case CURLE_OK:
                return GW_TRANSPORT_OK;
        case CURLE_OPERATION_TIMEDOUT:
                return GW_TRANSPORT_TIMEOUT;
        case CURLE_COULDNT_CONNECT:
                return GW_TRANSPORT_REFUSED;
        case CURLE_COULDNT_RESOLVE_HOST:
        case CURLE_COULDNT_RESOLVE_PROXY:
                return GW_TRANSPORT_DNS;
        case CURLE_SSL_CONNECT_ERROR:
        case CURLE_PEER_FAILED_VERIFICATION:
        case CURLE_SSL_CERTPROBLEM:
        case CURLE_SSL_CIPHER:
        case CURLE_SSL_CACERT_BADFILE:
        case CURLE_SSL_ENGINE_NOTFOUND:
        case CURLE_SSL_ENGINE_SETFAILED:
        case CURLE_SSL_ISSUER_ERROR:
        case CURLE_SSL_CRL_BADFILE:
        case CURLE_SSL_PINNEDPUBKEYNOTMATCH:
        case CURLE_SSL_INVALIDCERTSTATUS:
        case CURLE_USE_SSL_FAILED:
                return GW_TRANSPORT_TLS;
        case CURLE_RECV_ERROR:
        case CURLE_SEND_ERROR:
        case CURLE_GOT_NOTHING:
        case CURLE_PARTIAL_FILE:
        case CURLE_HTTP2:
        case CURLE_HTTP2_STREAM:
        case CURLE_HTTP3:
                return GW_TRANSPORT_RESET;
        default:
                return GW_TRANSPORT_OTHER;
        }
}

/* ---- attempts ---- */

static int easy_setup(struct gw_call *c)
{
        struct gateway *gw = c->gw;
        CURL *e            = curl_easy_init();
        CURLcode rc        = CURLE_OK;

        if (!e)
                return -ENOMEM;
        c->resp_len         = 0;
        c->resp_too_large   = false;
        c->have_retry_after = false;
        c->replayed         = false;
        c->curl_err[0]      = '\0';
        c->resp_max = c->next_post ? GW_CHARGE_BODY_MAX : GW_QUERY_BODY_MAX;

#define SET(opt, val)                                                          \
        do {                                                                   \
                if (rc == CURLE_OK)                                            \
                        rc = curl_easy_setopt(e, opt, val);                    \
        } while (0)
        SET(CURLOPT_PRIVATE, c);
        SET(CURLOPT_NOSIGNAL, 1L);
        SET(CURLOPT_PROTOCOLS_STR, "http,https");
        SET(CURLOPT_FOLLOWLOCATION, 0L);
        SET(CURLOPT_TCP_KEEPALIVE, 1L);
        SET(CURLOPT_CONNECTTIMEOUT_MS, (long)gw->opts.connect_timeout_ms);
        SET(CURLOPT_TIMEOUT_MS, (long)gw->opts.timeout_ms);
        SET(CURLOPT_SSL_VERIFYPEER, gw->opts.tls_verify ? 1L : 0L);
        SET(CURLOPT_SSL_VERIFYHOST, gw->opts.tls_verify ? 2L : 0L);
        if (gw->ca_file)
                SET(CURLOPT_CAINFO, gw->ca_file);
        SET(CURLOPT_ERRORBUFFER, c->curl_err);
        SET(CURLOPT_WRITEFUNCTION, on_body);
        SET(CURLOPT_WRITEDATA, c);
        SET(CURLOPT_HEADERFUNCTION, on_header);
        SET(CURLOPT_HEADERDATA, c);
        if (c->next_post) {
                /* libcurl resends a request by itself when a reused
                 * connection dies before any answer byte; the gateway may
                 * have charged before closing it. Under the same key that
                 * is a replay, to a gateway that ignores keys it is a
                 * second charge: such POSTs never ride a reused
                 * connection (curl retries only on those). */
                if (!gw->opts.idempotency_keys)
                        SET(CURLOPT_FRESH_CONNECT, 1L);
                SET(CURLOPT_URL, gw->charges_url);
                SET(CURLOPT_HTTPHEADER, c->post_headers);
                SET(CURLOPT_POSTFIELDSIZE, (long)strlen(c->body));
                SET(CURLOPT_POSTFIELDS, c->body);
        } else {
                SET(CURLOPT_URL, c->query_url);
                SET(CURLOPT_HTTPHEADER, gw->get_headers);
                SET(CURLOPT_HTTPGET, 1L);
        }
#undef SET
        if (rc != CURLE_OK) {
                curl_easy_cleanup(e);
                return -EINVAL;
        }
        c->easy = e;
        return 0;
}

static void attempt_done(struct gw_call *c, enum gw_transport transport,
                         int http_status);

/* gw_send_check() for the call c with the lease of holder (c or one of
 * the calls merged into it). */
static enum gw_send_check send_check(const struct gw_call *c,
                                     const struct gw_call *holder, int64_t now)
{
        const struct gateway *gw = c->gw;
        int64_t until =
            holder->lease_until ? atomic_load(holder->lease_until) : 0;

        return gw_send_check(now, c->started_ms, gw->opts.retry.deadline_ms,
                             holder->lease_until != NULL, until,
                             gw->opts.lease_margin_ms);
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

static void attempt_start(struct gw_call *c)
{
        struct gateway *gw = c->gw;
        struct log_ctx ctx = call_ctx(c);
        int err;

        if (c->next_post) {
                enum gw_send_check chk = may_post(c, time_mono_ms());

                if (chk != GW_SEND_OK) {
                        /* nothing goes out: the payment stays processing
                         * and the reconciler (or the lease's new owner)
                         * settles it */
                        log_warn(&ctx, "%s (%d POST(s) sent before)",
                                 gw_send_check_reason(chk), c->res.posts);
                        c->res.not_sent = true;
                        call_finish(c, GW_UNKNOWN, gw_send_check_reason(chk));
                        return;
                }
        }
        list_del(&gw->waiting, c);
        c->state      = CALL_ACTIVE;
        c->attempt_ms = time_mono_ms();
        list_push(&gw->active, c);
        c->res.attempts++;
        if (c->next_post)
                c->res.posts++;
        err = easy_setup(c);
        if (err == 0 && curl_multi_add_handle(gw->multi, c->easy) != CURLM_OK)
                err = -EIO;
        if (err) {
                /* nothing was sent; still no evidence either way */
                log_warn(&ctx, "could not start a gateway transfer (%d)", err);
                if (c->easy) {
                        curl_easy_cleanup(c->easy);
                        c->easy = NULL;
                }
                attempt_done(c, GW_TRANSPORT_OTHER, 0);
                return;
        }
        log_debug(&ctx, "gateway %s attempt %d", c->next_post ? "POST" : "GET",
                  c->res.attempts);
}

/*
 * One attempt ended: classify it, keep the evidence, and either finish the
 * call or schedule the next attempt. Never starts a transfer itself.
 */
static void attempt_done(struct gw_call *c, enum gw_transport transport,
                         int http_status)
{
        struct gateway *gw = c->gw;
        struct gw_answer a = { 0 };
        struct gw_verdict v;
        struct gateway_attempt ev = { 0 };
        struct retry_decision d;
        int64_t now     = time_mono_ms();
        int64_t elapsed = now - c->started_ms;
        bool was_post   = c->next_post;

        a.transport        = transport;
        a.http_status      = http_status;
        a.retry_after      = c->have_retry_after ? c->retry_after : NULL;
        a.replayed         = c->replayed;
        a.body             = c->resp;
        a.body_len         = c->resp_len;
        a.expect_reference = c->reference;
        a.expect_amount    = c->amount;
        a.expect_currency  = c->currency;
        if (was_post)
                gw_classify_charge(&a, &v);
        else
                gw_classify_query(&a, &v);

        ev.post        = was_post;
        ev.transport   = transport;
        ev.http_status = http_status;
        ev.outcome     = v.outcome;
        ev.replayed    = c->replayed;
        ev.at_ms       = c->attempt_ms - c->started_ms;
        ev.duration_ms = now - c->attempt_ms;
        evidence_add(c, &ev);

        c->res.http_status = http_status;
        if (v.retry_after_ms >= 0)
                c->res.retry_after_ms = v.retry_after_ms;
        if (v.outcome == GW_SUCCEEDED || v.outcome == GW_FAILED ||
            v.outcome == GW_DEFECT) {
                memcpy(c->res.charge_id, v.charge_id, sizeof(v.charge_id));
                memcpy(c->res.error_code, v.error_code, sizeof(v.error_code));
                memcpy(c->res.error_message, v.error_message,
                       sizeof(v.error_message));
        }
        if (c->confirming && !was_post) {
                /* the query after a 402 to a re-POST: an earlier POST of
                 * this payment may have charged it */
                switch (v.outcome) {
                case GW_SUCCEEDED: {
                        struct log_ctx ctx = call_ctx(c);

                        log_warn(&ctx, "a re-POST was refused, but an earlier "
                                       "POST of this payment charged it");
                        c->res.error_code[0]    = '\0';
                        c->res.error_message[0] = '\0';
                        call_finish(c, GW_SUCCEEDED,
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
                        call_finish(c, GW_FAILED,
                                    "final refusal, confirmed by a query: no "
                                    "succeeded charge listed");
                        return;
                case GW_DEFECT:
                        call_finish(c, GW_DEFECT, v.reason);
                        return;
                default:
                        break; /* no evidence: ask again, never POST */
                }
                d = retry_decide(&gw->opts.retry,
                                 gw_outcome_retry_class(v.outcome),
                                 c->res.attempts, elapsed, v.retry_after_ms,
                                 gw_rand, &gw->rng);
                if (d.verdict != RETRY_AGAIN) {
                        call_finish(c, GW_UNKNOWN,
                                    "a re-POST was refused and no query "
                                    "confirmed it");
                        return;
                }
                call_wait(c, d.delay_ms);
                return;
        }
        if (was_post && v.outcome == GW_FAILED && !gw->opts.idempotency_keys &&
            c->kind == CALL_CHARGE && (c->resumed || c->res.posts > 1)) {
                /*
                 * A gateway that ignores keys refused a POST that may not
                 * be the payment's first: the refusal is about this POST
                 * only, an earlier one may have charged (its answer lost,
                 * the list late). Final only once a query lists no
                 * succeeded charge; never POST again.
                 */
                int64_t delay = gw->opts.query_settle_ms;

                if (c->res.attempts >= gw->opts.retry.max_attempts ||
                    elapsed + delay > gw->opts.retry.deadline_ms) {
                        call_finish(c, GW_UNKNOWN,
                                    "a re-POST was refused and there is no "
                                    "budget left to confirm it");
                        return;
                }
                c->refusal    = v;
                c->confirming = true;
                c->next_post  = false;
                call_wait(c, delay);
                return;
        }
        if (v.outcome == GW_SUCCEEDED && v.succeeded_charges > 1) {
                struct log_ctx ctx = call_ctx(c);
                log_error(&ctx,
                          "gateway lists %d succeeded charges for one "
                          "reference",
                          v.succeeded_charges);
        }

        switch (v.outcome) {
        case GW_SUCCEEDED:
        case GW_FAILED:
        case GW_DEFECT:
                call_finish(c, v.outcome, v.reason);
                return;
        case GW_NOT_FOUND:
                if (c->kind == CALL_QUERY) {
                        call_finish(c, GW_NOT_FOUND, v.reason);
                        return;
                }
                /* ignore-keys charge: the evidence that nothing was charged;
                 * post now if the budget allows */
                if (c->res.attempts >= gw->opts.retry.max_attempts ||
                    elapsed >= gw->opts.retry.deadline_ms) {
                        call_finish(c, GW_UNKNOWN,
                                    "budget spent; the last query listed no "
                                    "charge");
                        return;
                }
                c->next_post = true;
                call_wait(c, 0);
                return;
        case GW_UNKNOWN:
        case GW_IN_PROGRESS:
        case GW_RETRY_AFTER:
                break;
        }

        d = retry_decide(&gw->opts.retry, gw_outcome_retry_class(v.outcome),
                         c->res.attempts, elapsed, v.retry_after_ms, gw_rand,
                         &gw->rng);
        if (d.verdict != RETRY_AGAIN) {
                call_finish(c, GW_UNKNOWN, d.reason);
                return;
        }
        if (c->kind == CALL_CHARGE && !gw->opts.idempotency_keys && was_post) {
                /* a gateway that ignores keys: ask before posting again,
                 * and give a request still in the works time to show up */
                int64_t delay = d.delay_ms;

                if (delay < gw->opts.query_settle_ms)
                        delay = gw->opts.query_settle_ms;
                if (delay > gw->opts.retry.deadline_ms - elapsed) {
                        call_finish(c, GW_UNKNOWN,
                                    "no time left to query before a re-POST");
                        return;
                }
                c->next_post = false;
                call_wait(c, delay);
                return;
        }
        call_wait(c, d.delay_ms);
}

/* ---- API ---- */


/* The headers of every POST of one payment. Owned by the caller. */
static struct curl_slist *post_headers_new(const char *auth_header,
                                           const char *provider_key)
{
        static const char prefix[] = "Idempotency-Key: ";
        size_t klen                = strlen(provider_key);
        char *kh                   = malloc(sizeof(prefix) + klen);
        const char *h[5];
        struct curl_slist *l = NULL, *t;

        if (!kh)
                return NULL;
        memcpy(kh, prefix, sizeof(prefix) - 1);
        memcpy(kh + sizeof(prefix) - 1, provider_key, klen + 1);
        h[0] = "Content-Type: application/json";
        h[1] = "Accept: application/json";
        h[2] = "Expect:"; /* no 100-continue round trip */
        h[3] = kh;
        h[4] = auth_header;
        for (size_t i = 0; i < 5; i++) {
                t = curl_slist_append(l, h[i]);
                if (!t) {
                        slist_wipe_free(l);
                        l = NULL;
                        break;
                }
                l = t;
        }
        free(kh);
        return l;
}

static char *dup_opt(const char *s)
{
        return s ? strdup(s) : NULL;
}

int gateway_charge(struct gateway *gw, const struct gateway_charge_req *req,
                   gateway_done_cb *cb, void *opaque, char *errstr,
                   size_t errstr_size)
{
        struct gw_call *c = NULL, *leader;
        char *body        = NULL;
        int err           = -EINVAL;

        if (gw->destroying) {
                snprintf(errstr, errstr_size,
                         "gateway client is shutting "
                         "down");
                return -ESHUTDOWN;
        }
        if (!cb || !gw_key_valid(req->provider_key)) {
                snprintf(errstr, errstr_size,
                         "charge needs a callback and a provider key of "
                         "1..255 printable characters");
                goto fail;
        }
        body = gw_charge_body(req, errstr, errstr_size);
        if (!body)
                goto fail;
        err = -ENOMEM;
        c   = call_new(gw, CALL_CHARGE, cb, opaque);
        if (!c) {
                snprintf(errstr, errstr_size, "out of memory");
                goto fail;
        }
        c->body         = body;
        body            = NULL;
        c->lease_until  = req->lease_until_ms;
        c->resumed      = req->resume;
        c->reference    = strdup(req->payment_id);
        c->provider_key = strdup(req->provider_key);
        c->tenant_id    = strdup(req->tenant_id);
        c->currency     = strdup(req->currency);
        c->amount       = req->amount;
        if (!c->reference || !c->provider_key || !c->tenant_id ||
            !c->currency) {
                snprintf(errstr, errstr_size, "out of memory");
                goto fail;
        }
        log_mask_key(c->provider_key, strlen(c->provider_key), c->key_masked,
                     sizeof(c->key_masked));

        leader = leader_find(gw, c->provider_key);
        if (leader) {
                /* the same payment is already on its way: share it */
                if (strcmp(leader->body, c->body) != 0) {
                        struct log_ctx ctx = call_ctx(c);

                        snprintf(c->res.error_code, sizeof(c->res.error_code),
                                 "parameters_mismatch");
                        log_error(&ctx, "provider key in flight with other "
                                        "parameters; nothing sent");
                        c->state       = CALL_DONE;
                        c->res.outcome = GW_DEFECT;
                        c->res.reason  = "provider key in flight with other "
                                         "parameters";
                        list_push(&gw->done, c);
                } else {
                        c->state          = CALL_FOLLOWER;
                        c->fnext          = leader->followers;
                        leader->followers = c;
                }
                gw->in_flight++;
                return 0;
        }

        c->query_url    = gw_query_url(gw->base_url, c->reference);
        c->post_headers = post_headers_new(gw->auth_header, c->provider_key);
        if (!c->query_url || !c->post_headers) {
                snprintf(errstr, errstr_size, "out of memory");
                goto fail;
        }
        /* resuming against a gateway that ignores keys: ask first */
        c->next_post = gw->opts.idempotency_keys || !req->resume;
        leader_add(gw, c);
        c->state  = CALL_WAITING;
        c->due_ms = c->started_ms;
        list_push(&gw->waiting, c);
        gw->in_flight++;
        return 0;
fail:
        free(body);
        call_free(c);
        return err;
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
        c = call_new(gw, CALL_QUERY, cb, opaque);
        if (!c) {
                snprintf(errstr, errstr_size, "out of memory");
                return -ENOMEM;
        }
        c->reference = strdup(reference);
        c->currency  = dup_opt(currency);
        c->amount    = amount;
        c->query_url =
            c->reference ? gw_query_url(gw->base_url, reference) : NULL;
        if (!c->reference || !c->query_url || (currency && !c->currency)) {
                snprintf(errstr, errstr_size, "out of memory");
                call_free(c);
                return -ENOMEM;
        }
        c->next_post = false;
        c->state     = CALL_WAITING;
        c->due_ms    = c->started_ms;
        list_push(&gw->waiting, c);
        gw->in_flight++;
        return 0;
}

/* Starts every waiting call that is due; returns ms until the next. */
static int64_t start_due(struct gateway *gw, int64_t max_wait_ms)
{
        struct gw_call *c = gw->waiting.head, *next;
        int64_t now       = time_mono_ms();
        int64_t wait      = max_wait_ms;
        int started       = 0;

        /* attempt_start() may push a failed start back to the tail: the
         * pass stops at the tail it saw, and GW_START_MAX bounds it */
        struct gw_call *last = gw->waiting.tail;

        for (; c && started < GW_START_MAX; c = next) {
                bool was_last = c == last;

                next = c->next;
                if (c->due_ms <= now) {
                        attempt_start(c);
                        started++;
                } else if (c->due_ms - now < wait) {
                        wait = c->due_ms - now;
                }
                if (was_last)
                        break;
        }
        if (started == GW_START_MAX)
                wait = 0;
        return wait;
}

static void collect_finished(struct gateway *gw)
{
        CURLMsg *m;
        int left;

        while ((m = curl_multi_info_read(gw->multi, &left)) != NULL) {
                struct gw_call *c;
                char *priv  = NULL;
                long status = 0;
                enum gw_transport t;

                if (m->msg != CURLMSG_DONE)
                        continue;
                curl_easy_getinfo(m->easy_handle, CURLINFO_PRIVATE, &priv);
                c = (struct gw_call *)priv;
                t = transport_of(m->data.result);
                curl_easy_getinfo(m->easy_handle, CURLINFO_RESPONSE_CODE,
                                  &status);
                if (c->resp_too_large)
                        t = GW_TRANSPORT_OTHER;
                if (t != GW_TRANSPORT_OK) {
                        struct log_ctx ctx = call_ctx(c);
                        log_info(&ctx, "gateway %s transport error: %s (%s)",
                                 c->next_post ? "POST" : "GET",
                                 gw_transport_name(t),
                                 c->curl_err[0]
                                     ? c->curl_err
                                     : curl_easy_strerror(m->data.result));
                }
                curl_multi_remove_handle(gw->multi, c->easy);
                curl_easy_cleanup(c->easy);
                c->easy = NULL;
                attempt_done(c, t, (int)status);
        }
}

static int run_callbacks(struct gateway *gw)
{
        struct call_list done = gw->done;
        struct gw_call *c, *next;
        int n = 0;

        memset(&gw->done, 0, sizeof(gw->done));
        for (c = done.head; c; c = next) {
                next = c->next;
                gw->in_flight--;
                c->cb(c->opaque, &c->res);
                call_free(c);
                n++;
        }
        return n;
}

int gateway_poll(struct gateway *gw, int timeout_ms)
{
        int64_t wait;
        int running = 0, n;
        CURLMcode mc;

        if (gw->in_poll || gw->destroying)
                return -EBUSY;
        gw->in_poll = true;
        if (timeout_ms < 0)
                timeout_ms = 0;
        wait = start_due(gw, timeout_ms);
        if (gw->done.n > 0)
                wait = 0;
        mc = curl_multi_poll(gw->multi, NULL, 0, (int)wait, NULL);
        if (mc == CURLM_OK)
                mc = curl_multi_perform(gw->multi, &running);
        collect_finished(gw);
        /* retries due now (delay 0) go out in this round */
        (void)start_due(gw, 0);
        if (mc == CURLM_OK)
                mc = curl_multi_perform(gw->multi, &running);
        collect_finished(gw);
        n           = run_callbacks(gw); /* still in_poll: no nesting */
        gw->in_poll = false;
        if (mc != CURLM_OK) {
                struct log_ctx ctx = LOG_CTX_INIT;
                ctx.component      = "gateway";
                log_error(&ctx, "curl multi: %s", curl_multi_strerror(mc));
                return -EIO;
        }
        return n;
}

int gateway_in_flight(const struct gateway *gw)
{
        return gw->in_flight;
}

void gateway_destroy(struct gateway *gw)
{
        struct gw_call *c;

        if (!gw)
                return;
        gw->destroying = true;
        while ((c = gw->active.head) != NULL) {
                curl_multi_remove_handle(gw->multi, c->easy);
                call_finish(c, GW_UNKNOWN, "client destroyed before an answer");
        }
        while ((c = gw->waiting.head) != NULL)
                call_finish(c, GW_UNKNOWN, "client destroyed before an answer");
        (void)run_callbacks(gw);
        curl_multi_cleanup(gw->multi);
        slist_wipe_free(gw->get_headers);
        free(gw->charges_url);
        free(gw->ca_file);
        wipe_free(gw->auth_header);
        free(gw->base_url);
        free(gw);
        /* balances gateway_new(); libcurl counts (7.84+: thread-safe) */
        curl_global_cleanup();
}

int gateway_evidence_json(const struct gateway_result *res, char *out,
                          size_t outsz)
{
        size_t o = 0;
        int n;

        if (outsz < 3)
                return -1;
        out[o++] = '[';
        for (int i = 0; i < res->n_evidence; i++) {
                const struct gateway_attempt *a = &res->evidence[i];

                n = snprintf(out + o, outsz - o,
                             "%s{\"method\":\"%s\",\"status\":%d,"
                             "\"transport\":\"%s\",\"outcome\":\"%s\","
                             "\"replayed\":%s,\"at_ms\":%lld,"
                             "\"duration_ms\":%lld}",
                             i ? "," : "", a->post ? "POST" : "GET",
                             a->http_status, gw_transport_name(a->transport),
                             gw_outcome_name(a->outcome),
                             a->replayed ? "true" : "false",
                             (long long)a->at_ms, (long long)a->duration_ms);
                if (n < 0 || (size_t)n >= outsz - o)
                        return -1;
                o += (size_t)n;
        }
        if (o + 2 > outsz)
                return -1;
        out[o++] = ']';
        out[o]   = '\0';
        return (int)o;
}
