/* SPDX-License-Identifier: Apache-2.0 */
/*
 * http: the server (libmicrohttpd) and its small routes; see http.h.
 *
 * Threads: MHD's internal polling thread accepts, and each connection
 * gets a thread of its own (MHD_USE_THREAD_PER_CONNECTION), bounded by
 * the connection limit. A pool of N threads would be simpler to bound
 * but lets N slow webhooks (each waits on PostgreSQL) starve /healthz
 * and /readyz; a thread per connection keeps the probes answering while
 * the database is slow, and every wait a request can meet is bounded
 * (pool wait, connect_timeout, statement_timeout, connection timeout).
 *
 * Must never: read a body past 64 KiB, answer a route not in http.h, or
 * log a secret, a signature or a body.
 */
#include "http/http_int.h"

#include "flow/flow.h"
#include "store/gauges.h"
#include "store/store.h"
#include "util/crypto.h"
#include "util/file.h"
#include "util/log.h"
#include "util/metrics.h"
#include "util/xalloc.h"

#include <arpa/inet.h>
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <netdb.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#define HTTP_CONN_LIMIT   64
#define HTTP_CONN_TIMEOUT 10 /* s without progress: closed */
/* A chunked body past the cap is read and dropped up to this much more,
 * so that it still gets its 413; beyond, the connection is closed. */
#define HTTP_DISCARD_MAX (1024 * 1024)

enum route {
        ROUTE_NONE = 0,
        ROUTE_WEBHOOK,
        ROUTE_METRICS,
        ROUTE_HEALTHZ,
        ROUTE_READYZ,
};

static const struct {
        const char *path, *method;
        enum route route;
} routes[] = {
        { "/webhooks/gateway", "POST", ROUTE_WEBHOOK },
        { "/metrics", "GET", ROUTE_METRICS },
        { "/healthz", "GET", ROUTE_HEALTHZ },
        { "/readyz", "GET", ROUTE_READYZ },
};

static struct log_ctx http_ctx(void)
{
        struct log_ctx lc = LOG_CTX_INIT;

        lc.component = "http";
        return lc;
}

enum MHD_Result http_answer(struct MHD_Connection *c, unsigned status,
                            const char *text)
{
        struct MHD_Response *resp;
        enum MHD_Result ret;

        resp = MHD_create_response_from_buffer(strlen(text), (void *)text,
                                               MHD_RESPMEM_MUST_COPY);
        if (!resp)
                return MHD_NO;
        MHD_add_response_header(resp, "Content-Type",
                                "text/plain; charset=utf-8");
        if (status == MHD_HTTP_METHOD_NOT_ALLOWED)
                MHD_add_response_header(resp, "Allow", "GET, POST");
        ret = MHD_queue_response(c, status, resp);
        MHD_destroy_response(resp);
        return ret;
}

static enum MHD_Result get_metrics(struct http *h, struct MHD_Connection *c)
{
        struct MHD_Response *resp;
        enum MHD_Result ret;
        struct buf b;
        size_t len = 0;
        char *data;

        buf_init(&b, 64 * 1024 * 1024);
        if (metrics_render(h->o.metrics, &b) < 0 ||
            buf_append_str(&b, "") < 0) {
                buf_free(&b);
                return http_answer(c, 500, "metrics: out of memory\n");
        }
        data = buf_detach(&b, &len);
        resp = MHD_create_response_from_buffer(len, data ? data : (char *)"",
                                               data ? MHD_RESPMEM_MUST_FREE
                                                    : MHD_RESPMEM_PERSISTENT);
        if (!resp) {
                free(data);
                return MHD_NO;
        }
        MHD_add_response_header(resp, "Content-Type",
                                "text/plain; version=0.0.4; charset=utf-8");
        ret = MHD_queue_response(c, MHD_HTTP_OK, resp);
        MHD_destroy_response(resp);
        return ret;
}

static enum MHD_Result get_healthz(struct http *h, struct MHD_Connection *c)
{
        int64_t oldest  = 0;
        const char *who = NULL;
        char text[160];

        if (metrics_alive(h->o.metrics, h->o.alive_timeout_ms, &oldest, &who))
                return http_answer(c, MHD_HTTP_OK, "ok\n");
        snprintf(text, sizeof(text),
                 "loop %s has not turned for %" PRId64 " ms\n", who ? who : "?",
                 oldest);
        return http_answer(c, MHD_HTTP_SERVICE_UNAVAILABLE, text);
}

/* The database part of readiness: 0, or -1 with the reason. Bounded:
 * the lock waits up to the time one probe may take. */
static int ready_db(struct http *h, char *why, size_t whysz)
{
        struct timespec until;
        char err[512];
        int rc = -1;

        clock_gettime(CLOCK_REALTIME, &until);
        until.tv_sec += HTTP_DB_CONNECT_S + 1;
        if (pthread_mutex_timedlock(&h->ready_mu, &until) != 0) {
                snprintf(why, whysz, "database: a check is still waiting");
                return -1;
        }
        if (h->ready_st && !store_ok(h->ready_st)) {
                store_destroy(h->ready_st);
                h->ready_st = NULL;
        }
        if (!h->ready_st &&
            !(h->ready_st = store_connect_timeout(
                  h->o.conninfo, HTTP_DB_CONNECT_S, err, sizeof(err)))) {
                snprintf(why, whysz, "database: %s", err);
                goto done;
        }
        if (store_ping(h->ready_st, HTTP_DB_STATEMENT_MS, err, sizeof(err)) !=
            STORE_OK) {
                snprintf(why, whysz, "database: %s", err);
                goto done;
        }
        rc = 0;
done:
        pthread_mutex_unlock(&h->ready_mu);
        return rc;
}

static enum MHD_Result get_readyz(struct http *h, struct MHD_Connection *c)
{
        char why[700];
        size_t n;
        uint64_t refused = 0;

        if (ready_db(h, why, sizeof(why)) < 0) {
                /* one line: libpq's messages end in new lines */
                for (n = 0; why[n]; n++)
                        if (why[n] == '\n')
                                why[n] = ' ';
                while (n > 0 && why[n - 1] == ' ')
                        why[--n] = '\0';
                snprintf(why + n, sizeof(why) - n, "\n");
                return http_answer(c, MHD_HTTP_SERVICE_UNAVAILABLE, why);
        }
        if (h->o.ready_needs_consumer &&
            metrics_gauge(h->o.metrics, METRIC_CONSUMER_JOINED) != 1)
                return http_answer(c, MHD_HTTP_SERVICE_UNAVAILABLE,
                                   "consumer: not joined to its group\n");
        for (unsigned k = MR_CLAIM; k <= MR_PROBE; k++)
                refused += metrics_counter(h->o.metrics, METRIC_DB_REFUSED, k);
        if (refused == 0)
                return http_answer(c, MHD_HTTP_OK, "ready\n");
        /* ready (the process works), and it says what needs a person */
        snprintf(why, sizeof(why),
                 "ready\nnote: %" PRIu64 " item(s) refused by the database "
                 "since start (chargeonce_db_refused_total): the payments "
                 "are in review, the messages in the DLQ\n",
                 refused);
        return http_answer(c, MHD_HTTP_OK, why);
}

/* The first call of a request: route, method, Content-Length. */
static enum MHD_Result begin(struct http *h, struct MHD_Connection *c,
                             const char *url, const char *method, void **cls)
{
        enum route route = ROUTE_NONE;
        bool path_found  = false;
        const char *cl;
        struct http_req *r;

        for (size_t i = 0; i < sizeof(routes) / sizeof(*routes); i++) {
                if (strcmp(url, routes[i].path))
                        continue;
                if (routes[i].route == ROUTE_WEBHOOK && !h->webhooks)
                        break; /* not served: 404 */
                path_found = true;
                if (!strcmp(method, routes[i].method))
                        route = routes[i].route;
        }
        if (route == ROUTE_NONE)
                return path_found ? http_answer(c, 405, "method not allowed\n")
                                  : http_answer(c, 404, "not found\n");
        switch (route) {
        case ROUTE_METRICS:
                return get_metrics(h, c);
        case ROUTE_HEALTHZ:
                return get_healthz(h, c);
        case ROUTE_READYZ:
                return get_readyz(h, c);
        default:
                break;
        }
        cl = MHD_lookup_connection_value(c, MHD_HEADER_KIND,
                                         MHD_HTTP_HEADER_CONTENT_LENGTH);
        if (cl) {
                char *end            = NULL;
                unsigned long long v = strtoull(cl, &end, 10);

                if (end == cl || v > GATEWAY_WEBHOOK_BODY_MAX) {
                        http_webhook_rejected(h, "too_large");
                        return http_answer(c, 413, "body too large\n");
                }
        }
        r        = xcalloc(1, sizeof(*r));
        r->route = route;
        buf_init(&r->body, GATEWAY_WEBHOOK_BODY_MAX);
        *cls = r;
        return MHD_YES;
}

static enum MHD_Result on_request(void *cls, struct MHD_Connection *c,
                                  const char *url, const char *method,
                                  const char *version, const char *data,
                                  size_t *size, void **con_cls)
{
        struct http *h     = cls;
        struct http_req *r = *con_cls;

        (void)version;
        if (!r)
                return begin(h, c, url, method, con_cls);
        if (*size) {
                if (!r->too_large && buf_append(&r->body, data, *size) < 0) {
                        r->too_large = true;
                        http_webhook_rejected(h, "too_large");
                }
                if (r->too_large) {
                        r->discarded += *size;
                        if (r->discarded > HTTP_DISCARD_MAX)
                                return MHD_NO; /* close, read no more */
                }
                *size = 0;
                return MHD_YES;
        }
        if (r->too_large)
                return http_answer(c, 413, "body too large\n");
        return http_webhook(h, c, r);
}

static void on_completed(void *cls, struct MHD_Connection *c, void **con_cls,
                         enum MHD_RequestTerminationCode toe)
{
        struct http_req *r = *con_cls;

        (void)cls;
        (void)c;
        (void)toe;
        if (r) {
                buf_free(&r->body);
                free(r);
                *con_cls = NULL;
        }
}

static void on_mhd_log(void *cls, const char *fmt, va_list ap)
{
        struct log_ctx lc = http_ctx();
        char line[512];
        size_t n;

        (void)cls;
        vsnprintf(line, sizeof(line), fmt, ap);
        n = strlen(line);
        while (n > 0 && line[n - 1] == '\n')
                line[--n] = '\0';
        log_debug(&lc, "libmicrohttpd: %s", line);
}

/* Splits "host:port" ("[v6]:port") and resolves it. 0, or -1 (EINVAL)
 * with the reason naming http.listen. */
static int listen_addr(const char *spec, struct sockaddr_storage *sa,
                       socklen_t *salen, char *errstr, size_t errstr_size)
{
        char host[256];
        const char *colon = strrchr(spec, ':'), *port;
        struct addrinfo hints, *ai = NULL;
        size_t hlen;
        char *end = NULL;
        long p;
        int e;

        if (!colon || colon == spec)
                goto bad;
        port  = colon + 1;
        errno = 0;
        p     = strtol(port, &end, 10);
        if (!*port || *end || errno || p < 0 || p > 65535)
                goto bad;
        hlen = (size_t)(colon - spec);
        if (spec[0] == '[' && hlen > 2 && spec[hlen - 1] == ']') {
                spec++;
                hlen -= 2;
        }
        if (hlen >= sizeof(host))
                goto bad;
        memcpy(host, spec, hlen);
        host[hlen] = '\0';
        memset(&hints, 0, sizeof(hints));
        hints.ai_family   = AF_UNSPEC;
        hints.ai_socktype = SOCK_STREAM;
        hints.ai_flags    = AI_NUMERICSERV | AI_PASSIVE;
        if ((e = getaddrinfo(host, port, &hints, &ai)) != 0 || !ai) {
                snprintf(errstr, errstr_size, "http.listen: %s: %s", host,
                         gai_strerror(e));
                errno = EINVAL;
                return -1;
        }
        memcpy(sa, ai->ai_addr, ai->ai_addrlen);
        *salen = ai->ai_addrlen;
        freeaddrinfo(ai);
        return 0;
bad:
        snprintf(errstr, errstr_size,
                 "http.listen: \"%s\" is not HOST:PORT (port 0..65535)", spec);
        errno = EINVAL;
        return -1;
}

/* Binds and listens (so that a busy port is a clear error here, not a
 * NULL from MHD); the socket goes to MHD, which closes it. */
static int bind_listen(struct http *h, char *errstr, size_t errstr_size)
{
        struct sockaddr_storage sa, got;
        socklen_t salen = 0, glen = sizeof(got);
        char host[64], serv[16];
        int fd, one = 1, why;

        if (listen_addr(h->o.listen, &sa, &salen, errstr, errstr_size) < 0)
                return -1;
        fd = socket(sa.ss_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
        if (fd < 0 ||
            setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one)) < 0 ||
            bind(fd, (struct sockaddr *)&sa, salen) < 0 ||
            listen(fd, 128) < 0 ||
            getsockname(fd, (struct sockaddr *)&got, &glen) < 0) {
                why = errno;
                snprintf(errstr, errstr_size,
                         "http.listen: cannot listen on %s: %s%s", h->o.listen,
                         strerror(why),
                         why == EADDRINUSE
                             ? " (another process listens there: give each "
                               "process on a host an http.listen of its "
                               "own, e.g. CHARGEONCE_HTTP_LISTEN in "
                               "/etc/chargeonce/<instance>.env)"
                             : "");
                if (fd >= 0)
                        close(fd);
                errno = why == EINVAL ? EADDRNOTAVAIL : why;
                return -1;
        }
        if (getnameinfo((struct sockaddr *)&got, glen, host, sizeof(host), serv,
                        sizeof(serv), NI_NUMERICHOST | NI_NUMERICSERV) != 0)
                snprintf(host, sizeof(host), "?");
        h->port = atoi(serv);
        snprintf(h->addr, sizeof(h->addr),
                 got.ss_family == AF_INET6 ? "[%s]:%d" : "%s:%d", host,
                 h->port);
        return fd;
}

/* Reads the file of webhook.secret_file into spec (trailing new lines
 * cut). 0, or -1 naming the key. */
static int read_secret_file(const char *path, char *spec, size_t specsz,
                            char *errstr, size_t errstr_size)
{
        char why[512];
        size_t n;
        char *buf = file_read_secret(path, specsz - 1, &n, why, sizeof(why));

        if (!buf) {
                snprintf(errstr, errstr_size, "webhook.secret_file: %s", why);
                return -1;
        }
        memcpy(spec, buf, n + 1);
        crypto_wipe(buf, n);
        free(buf);
        return 0;
}

/* webhook.secret / webhook.secret_file -> h->secrets, h->webhooks. */
static int load_secrets(struct http *h, char *errstr, size_t errstr_size)
{
        const struct http_opts *o = &h->o;
        bool has_s = *o->secret, has_f = *o->secret_file;
        const char *key = has_f ? "webhook.secret_file" : "webhook.secret";
        char spec[4096], sub[256];
        int rc = -1;

        if (o->webhooks == HTTP_WEBHOOKS_OFF)
                return 0;
        if (has_s && has_f) {
                snprintf(errstr, errstr_size,
                         "webhook.secret and webhook.secret_file are both "
                         "set: set one");
                return -1;
        }
        if (!has_s && !has_f) {
                if (o->webhooks == HTTP_WEBHOOKS_IF_CONFIGURED)
                        return 0;
                snprintf(errstr, errstr_size,
                         "webhook.secret: not set (or webhook.secret_file): "
                         "the gateway's webhooks cannot be verified");
                return -1;
        }
        if (has_f) {
                if (read_secret_file(o->secret_file, spec, sizeof(spec), errstr,
                                     errstr_size) < 0)
                        goto done;
        } else {
                snprintf(spec, sizeof(spec), "%s", o->secret);
        }
        if (gateway_webhook_secrets_parse(spec, &h->secrets, sub, sizeof(sub)) <
            0) {
                snprintf(errstr, errstr_size, "%s: %s", key, sub);
                goto done;
        }
        h->webhooks = true;
        rc          = 0;
done:
        crypto_wipe(spec, sizeof(spec));
        return rc;
}

/* A server not yet listening: options checked, secrets read. NULL
 * (errno EINVAL) with the reason naming the key. */
static struct http *http_new_checked(const struct http_opts *o, char *errstr,
                                     size_t errstr_size)
{
        struct http *h = xcalloc(1, sizeof(*h));

        h->o = *o;
        pthread_mutex_init(&h->ready_mu, NULL);
        if (!o->listen || !*o->listen) {
                snprintf(errstr, errstr_size,
                         "http.listen: empty, but this command serves HTTP");
                goto fail;
        }
        if (o->db_connections < 1 || o->db_connections > HTTP_POOL_MAX) {
                snprintf(errstr, errstr_size,
                         "webhook.db_connections: not in 1..%d", HTTP_POOL_MAX);
                goto fail;
        }
        {
                struct sockaddr_storage sa;
                socklen_t salen;

                /* the syntax first: a bad address is a configuration error */
                if (listen_addr(o->listen, &sa, &salen, errstr, errstr_size) <
                    0)
                        goto fail;
        }
        if (load_secrets(h, errstr, errstr_size) < 0 ||
            http_tls_load(&h->tls, o->tls_cert_file, o->tls_key_file, errstr,
                          errstr_size) < 0)
                goto fail;
        return h;
fail:
        http_destroy(h);
        errno = EINVAL;
        return NULL;
}

int http_opts_check(const struct http_opts *o, char *errstr, size_t errstr_size)
{
        struct http *h = http_new_checked(o, errstr, errstr_size);

        if (!h)
                return -1;
        http_destroy(h);
        return 0;
}

/* The daemon on the listening socket fd: HTTPS when h->tls holds a
 * certificate, else plain HTTP. NULL when it cannot start. */
static struct MHD_Daemon *start_daemon(struct http *h, int fd)
{
        unsigned int flags = MHD_USE_POLL_INTERNAL_THREAD |
                             MHD_USE_THREAD_PER_CONNECTION | MHD_USE_ERROR_LOG;
        struct MHD_OptionItem tls[] = {
                { MHD_OPTION_HTTPS_MEM_CERT, 0, h->tls.cert },
                { MHD_OPTION_HTTPS_MEM_KEY, 0, h->tls.key },
                { MHD_OPTION_HTTPS_PRIORITIES, 0,
                  (void *)(uintptr_t)HTTP_TLS_PRIORITIES },
                { MHD_OPTION_END, 0, NULL },
        };

        if (h->tls.cert)
                flags |= MHD_USE_TLS;
        else
                tls[0].option = MHD_OPTION_END;
        return MHD_start_daemon(
            flags, 0, NULL, NULL, on_request, h, MHD_OPTION_LISTEN_SOCKET, fd,
            MHD_OPTION_EXTERNAL_LOGGER, on_mhd_log, NULL,
            MHD_OPTION_NOTIFY_COMPLETED, on_completed, h,
            MHD_OPTION_CONNECTION_LIMIT, (unsigned int)HTTP_CONN_LIMIT,
            MHD_OPTION_CONNECTION_TIMEOUT, (unsigned int)HTTP_CONN_TIMEOUT,
            MHD_OPTION_ARRAY, tls, MHD_OPTION_END);
}

struct http *http_new(const struct http_opts *o, char *errstr,
                      size_t errstr_size)
{
        struct log_ctx lc = http_ctx();
        struct http *h;
        int fd, why;

        if (!(h = http_new_checked(o, errstr, errstr_size)))
                return NULL;
        /* no audit has completed: not a healthy 0 (docs/operations.md) */
        metrics_set(o->metrics, METRIC_INVARIANT_VIOLATIONS, NAN);
        metrics_set(o->metrics, METRIC_WEBHOOK_CONTRADICTIONS, NAN);
        if (http_pool_init(&h->pool, o->db_connections) < 0) {
                why = errno;
                snprintf(errstr, errstr_size, "http: %s", strerror(why));
                goto fail;
        }
        if ((fd = bind_listen(h, errstr, errstr_size)) < 0) {
                why = errno;
                goto fail;
        }
        h->mhd = start_daemon(h, fd);
        /* parsed into GnuTLS's credentials by now (http/tls.c) */
        http_tls_wipe_key(&h->tls);
        if (!h->mhd) {
                why = errno && errno != EINVAL ? errno : EIO;
                close(fd);
                snprintf(errstr, errstr_size,
                         "http: cannot start the server on %s", h->addr);
                goto fail;
        }
        log_info(&lc, "http: listening on %s (%s)", h->addr,
                 h->tls.cert ? "HTTPS only, TLS 1.2 and 1.3" : "plain HTTP");
        if (o->webhooks != HTTP_WEBHOOKS_OFF && !h->webhooks)
                log_info(&lc, "http: webhooks are off (no webhook.secret): "
                              "POST /webhooks/gateway answers 404");
        return h;
fail:
        http_destroy(h);
        errno = why;
        return NULL;
}

int http_port(const struct http *h)
{
        return h->port;
}

void http_destroy(struct http *h)
{
        if (!h)
                return;
        if (h->mhd)
                MHD_stop_daemon(h->mhd);
        http_pool_destroy(&h->pool);
        store_destroy(h->ready_st);
        pthread_mutex_destroy(&h->ready_mu);
        gateway_webhook_secrets_clear(&h->secrets);
        http_tls_free(&h->tls);
        free(h);
}
