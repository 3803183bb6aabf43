/* SPDX-License-Identifier: Apache-2.0 */
/*
 * gateway client over libcurl multi: one thread, many calls, one connection
 * pool. A call is a small state machine: POST (or GET first when resuming
 * against a gateway that ignores keys), classify, ask the retry policy,
 * wait on a timer, go again. Nothing blocks; gateway_poll() moves it all.
 * This file holds the client itself (options check, new, poll, destroy)
 * and the evidence rendering; client_int.h lists the other pieces.
 *
 * Must never report a timeout, reset or 5xx as FAILED, never change the key
 * or the body of a payment between attempts, never re-POST to a gateway
 * that ignores keys without an empty query list first, never log the API
 * key, a full provider key or the payment method, and never make up an
 * option the caller left unset (the daemon's configuration holds the
 * defaults).
 */
#include "gateway/client_int.h"

#include "util/crypto.h"
#include "util/timeutil.h"
#include "util/xalloc.h"

#include <errno.h>
#include <stdio.h>
#include <sys/epoll.h>
#include <unistd.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#define AUTH_PREFIX "Authorization: Bearer "

/* ---- options ---- */

/* Why o cannot make a client (the first field unset or out of range), or
 * NULL, naming the configuration key the field comes from (cmd/opts.c
 * fills gateway_opts from them; the configuration checked each value when
 * it was read, so what is left here is mostly "required by this command").
 * Never repeats the API key. */
static const char *opts_problem(const struct gateway_opts *o)
{
        const struct retry_policy *r = &o->retry;

        if (!o->base_url || !*o->base_url)
                return "gateway.url is unset";
        if (strncasecmp(o->base_url, "https://", 8) != 0 &&
            strncasecmp(o->base_url, "http://", 7) != 0)
                return "gateway.url must start with https:// or http://";
        if (!o->api_key || !*o->api_key)
                return "gateway.api_key is unset (or gateway.api_key_file): "
                       "this command calls the gateway";
        if (strpbrk(o->api_key, "\r\n"))
                return "gateway.api_key holds a line break";
        if (o->connect_timeout_ms <= 0)
                return "gateway.connect_timeout must be > 0";
        if (o->timeout_ms <= 0)
                return "gateway.timeout must be > 0";
        if (o->max_connections <= 0)
                return "gateway.max_connections must be > 0";
        if (o->query_settle_ms <= 0)
                return "the gateway client's query settle time must be > 0";
        if (o->lease_margin_ms < 0)
                return "gateway.lease_margin must be >= 0";
        if (r->base_ms <= 0)
                return "gateway.backoff_base must be > 0";
        if (r->cap_ms <= 0)
                return "gateway.backoff_max must be > 0";
        if (r->max_attempts <= 0)
                return "gateway.max_attempts must be > 0";
        if (r->deadline_ms <= 0)
                return "gateway.deadline must be > 0";
        return NULL;
}

static bool opts_check(const struct gateway_opts *o, char *errstr,
                       size_t errstr_size)
{
        const char *why = opts_problem(o);

        if (why) {
                snprintf(errstr, errstr_size, "%s", why);
                return false;
        }
        /* what is left: the policy's own rules (cap >= base) */
        return payment_retry_policy_valid(&o->retry, errstr, errstr_size);
}

/* ---- the client ---- */

/* Frees what client_setup() made of gw, wiping the secrets, and gw. */
static void client_free(struct gateway *gw)
{
        if (!gw)
                return;
        if (gw->multi)
                curl_multi_cleanup(gw->multi);
        if (gw->epfd >= 0)
                close(gw->epfd);
        gateway_slist_wipe_free(gw->get_headers);
        free(gw->charges_url);
        free(gw->ca_file);
        gateway_wipe_free(gw->auth_header);
        free(gw->base_url);
        free(gw);
}

/*
 * libcurl's event interface. curl_multi_perform() and curl_multi_poll()
 * walk every transfer on every call; with hundreds of payments at the
 * gateway and a loop that turns every millisecond that was most of the
 * daemon's CPU (bench/, docs/benchmarks.md "Performance round 2"). With
 * curl_multi_socket_action() libcurl says which sockets to watch and when
 * its timer is due; only the sockets that are ready are serviced.
 */
static int on_socket(CURL *easy, curl_socket_t s, int what, void *userp,
                     void *socketp)
{
        struct gateway *gw    = userp;
        struct epoll_event ev = { 0 };

        (void)easy;
        (void)socketp;
        if (what == CURL_POLL_REMOVE) {
                /* the socket may be closed already: nothing to undo then */
                (void)epoll_ctl(gw->epfd, EPOLL_CTL_DEL, s, NULL);
                return 0;
        }
        ev.events = (what & CURL_POLL_IN ? EPOLLIN : 0u) |
                    (what & CURL_POLL_OUT ? EPOLLOUT : 0u);
        ev.data.fd = s;
        if (epoll_ctl(gw->epfd, EPOLL_CTL_MOD, s, &ev) != 0 &&
            (errno != ENOENT ||
             epoll_ctl(gw->epfd, EPOLL_CTL_ADD, s, &ev) != 0))
                return -1; /* libcurl fails the transfers on this socket */
        return 0;
}

static int on_timer(CURLM *multi, long timeout_ms, void *userp)
{
        struct gateway *gw = userp;

        (void)multi;
        gw->timer_due_ms = timeout_ms < 0 ? -1 : time_mono_ms() + timeout_ms;
        return 0;
}

/* Copies what gw needs from o (the API key only into the Authorization
 * header) and sets up the multi handle. A reason in errstr on error. */
static bool client_setup(struct gateway *gw, const struct gateway_opts *o,
                         char *errstr, size_t errstr_size)
{
        size_t klen = strlen(o->api_key);

        gw->opts         = *o;
        gw->base_url     = xstrdup(o->base_url);
        gw->auth_header  = xmalloc(klen + sizeof(AUTH_PREFIX));
        gw->ca_file      = o->ca_file ? xstrdup(o->ca_file) : NULL;
        gw->multi        = curl_multi_init();
        gw->epfd         = epoll_create1(EPOLL_CLOEXEC);
        gw->timer_due_ms = -1;
        if (!gw->multi || gw->epfd < 0) {
                snprintf(errstr, errstr_size,
                         "libcurl could not make a multi handle");
                return false;
        }
        if (curl_multi_setopt(gw->multi, CURLMOPT_SOCKETFUNCTION, on_socket) !=
                CURLM_OK ||
            curl_multi_setopt(gw->multi, CURLMOPT_SOCKETDATA, gw) != CURLM_OK ||
            curl_multi_setopt(gw->multi, CURLMOPT_TIMERFUNCTION, on_timer) !=
                CURLM_OK ||
            curl_multi_setopt(gw->multi, CURLMOPT_TIMERDATA, gw) != CURLM_OK) {
                snprintf(errstr, errstr_size,
                         "libcurl refused the event callbacks");
                return false;
        }
        memcpy(gw->auth_header, AUTH_PREFIX, sizeof(AUTH_PREFIX) - 1);
        memcpy(gw->auth_header + sizeof(AUTH_PREFIX) - 1, o->api_key, klen + 1);
        gw->opts.base_url = gw->base_url;
        gw->opts.api_key  = NULL; /* only auth_header holds it */
        gw->opts.ca_file  = gw->ca_file;
        gw->charges_url   = gateway_charges_url(gw->base_url);
        /* curl_slist_append's only failure is out of memory */
        gw->get_headers = curl_slist_append(NULL, "Accept: application/json");
        if (!gw->get_headers ||
            !curl_slist_append(gw->get_headers, gw->auth_header))
                xalloc_die();
        if (curl_multi_setopt(gw->multi, CURLMOPT_MAX_HOST_CONNECTIONS,
                              (long)o->max_connections) != CURLM_OK ||
            curl_multi_setopt(gw->multi, CURLMOPT_MAX_TOTAL_CONNECTIONS,
                              (long)o->max_connections) != CURLM_OK ||
            curl_multi_setopt(gw->multi, CURLMOPT_MAXCONNECTS,
                              (long)o->max_connections) != CURLM_OK) {
                snprintf(errstr, errstr_size,
                         "libcurl refused the connection limits");
                return false;
        }
        gw->rng = o->jitter_seed;
        if (gw->rng == 0 && !crypto_random(&gw->rng, sizeof(gw->rng))) {
                snprintf(errstr, errstr_size, "no randomness for jitter");
                return false;
        }
        return true;
}

/* What an operator must know about the options, once per client. */
static void log_opts(const struct gateway_opts *o)
{
        struct log_ctx ctx = LOG_CTX_INIT;

        ctx.component = "gateway";
        /* plain http and gateway.tls_verify = false: judged by
         * security.mode at start (ops/security.c), refused in production,
         * one warning line in development */
        if (!o->idempotency_keys)
                log_info(&ctx, "gateway ignores Idempotency-Key: querying "
                               "by reference before every retry");
}

struct gateway *gateway_new(const struct gateway_opts *o, char *errstr,
                            size_t errstr_size)
{
        struct gateway *gw;

        if (!opts_check(o, errstr, errstr_size))
                return NULL;
        if (curl_global_init(CURL_GLOBAL_DEFAULT) != CURLE_OK) {
                snprintf(errstr, errstr_size, "libcurl initialisation failed");
                return NULL;
        }
        gw          = xcalloc(1, sizeof(*gw));
        gw->epfd    = -1;
        gw->wake_fd = -1;
        if (!client_setup(gw, o, errstr, errstr_size)) {
                client_free(gw);
                curl_global_cleanup();
                return NULL;
        }
        log_opts(o);
        return gw;
}

/* Starts every waiting call that is due; returns ms until the next. */
static int64_t start_due(struct gateway *gw, int64_t max_wait_ms)
{
        struct gw_call *c = gw->waiting.head, *next;
        int64_t now       = time_mono_ms();
        int64_t wait      = max_wait_ms;
        int started       = 0;

        /* gateway_attempt_start() may push a failed start back to the tail: the
         * pass stops at the tail it saw, and GW_START_MAX bounds it */
        struct gw_call *last = gw->waiting.tail;

        for (; c && started < GW_START_MAX; c = next) {
                bool was_last = c == last;

                next = c->next;
                if (c->due_ms <= now) {
                        gateway_attempt_start(c);
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
                gateway_call_free(c);
                n++;
        }
        return n;
}

/* Runs libcurl's timer if it is due. */
static CURLMcode run_timer(struct gateway *gw)
{
        int running = 0;

        if (gw->timer_due_ms < 0 || gw->timer_due_ms > time_mono_ms())
                return CURLM_OK;
        gw->timer_due_ms = -1; /* libcurl sets it again if it wants */
        return curl_multi_socket_action(gw->multi, CURL_SOCKET_TIMEOUT, 0,
                                        &running);
}

enum { GW_EVENTS = 256 };

/* The tag of the wake fd in the epoll set (curl's sockets carry their fd). */
#define GW_WAKE_TAG ((uint64_t)1 << 40)

int gateway_wake_fd(struct gateway *gw, int fd)
{
        struct epoll_event ev = { .events = EPOLLIN, .data.u64 = GW_WAKE_TAG };

        if (gw->wake_fd >= 0 || fd < 0)
                return -EINVAL;
        if (epoll_ctl(gw->epfd, EPOLL_CTL_ADD, fd, &ev) != 0)
                return -errno;
        gw->wake_fd = fd;
        return 0;
}

/* Empties the wake fd (an eventfd: one read resets it). */
static void drain_wake(struct gateway *gw)
{
        uint64_t v;

        while (read(gw->wake_fd, &v, sizeof(v)) > 0)
                ;
}

int gateway_poll(struct gateway *gw, int timeout_ms)
{
        struct epoll_event ev[GW_EVENTS];
        int64_t wait, now;
        int running  = 0, n, ne;
        CURLMcode mc = CURLM_OK;

        if (gw->in_poll || gw->destroying)
                return -EBUSY;
        gw->in_poll = true;
        if (timeout_ms < 0)
                timeout_ms = 0;
        wait = start_due(gw, timeout_ms);
        if (gw->done.n > 0)
                wait = 0;
        now = time_mono_ms();
        if (gw->timer_due_ms >= 0 && gw->timer_due_ms - now < wait)
                wait = gw->timer_due_ms > now ? gw->timer_due_ms - now : 0;
        ne = epoll_wait(gw->epfd, ev, GW_EVENTS, (int)wait);
        for (int i = 0; i < ne && mc == CURLM_OK; i++) {
                if (ev[i].data.u64 == GW_WAKE_TAG) {
                        drain_wake(gw);
                        continue;
                }
                int flags =
                    (ev[i].events & EPOLLIN ? CURL_CSELECT_IN : 0) |
                    (ev[i].events & EPOLLOUT ? CURL_CSELECT_OUT : 0) |
                    (ev[i].events & (EPOLLERR | EPOLLHUP) ? CURL_CSELECT_ERR
                                                          : 0);
                mc = curl_multi_socket_action(gw->multi, ev[i].data.fd, flags,
                                              &running);
        }
        if (mc == CURLM_OK)
                mc = run_timer(gw);
        gateway_collect_finished(gw);
        /* retries due now (delay 0) go out in this round: adding a
         * transfer sets libcurl's timer to 0, which starts it */
        (void)start_due(gw, 0);
        if (mc == CURLM_OK)
                mc = run_timer(gw);
        gateway_collect_finished(gw);
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
                gateway_call_finish(c, GW_UNKNOWN,
                                    "client destroyed before an answer");
        }
        while ((c = gw->waiting.head) != NULL)
                gateway_call_finish(c, GW_UNKNOWN,
                                    "client destroyed before an answer");
        (void)run_callbacks(gw);
        client_free(gw);
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
                             a->http_status,
                             gateway_transport_name(a->transport),
                             gateway_outcome_name(a->outcome),
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
