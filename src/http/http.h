/* SPDX-License-Identifier: Apache-2.0 */
/*
 * http: chargeonce's HTTP server (libmicrohttpd), one engine with the
 * same lifecycle as the others (cmd/engine.h). Routes, and nothing else:
 *
 *   POST /webhooks/gateway  the gateway's signed webhooks (docs/contract.md
 *                           §5): verified (gateway/webhook.h), decoded
 *                           (gateway/webhook_event.h), applied in one
 *                           transaction (store/webhook.h); 200 for every
 *                           verdict of the store, 400 bad (413 too large),
 *                           503 on a database error (the gateway retries)
 *   GET  /metrics           Prometheus text format 0.0.4 (util/metrics.h)
 *   GET  /healthz           200 while every loop of the process beats
 *   GET  /readyz            200 while the database answers (and, in a
 *                           consuming process, the consumer has joined)
 *
 * With http.tls_cert_file and http.tls_key_file the server speaks HTTPS
 * only (TLS 1.2 and 1.3, http/tls.c); without, plain HTTP.
 *
 * Another path is 404, another method 405. A body over 64 KiB is 413,
 * refused unread when its Content-Length says so, cut off as soon as a
 * chunked one grows past it.
 *
 * http_run() also refreshes the database gauges (store/gauges.h) and,
 * less often, the audit gauges, and stops on *stop.
 *
 * Must never: log a signature, a secret or a webhook body; write anything
 * for a request that failed verification or decoding; answer an error to
 * a webhook the store judged (a PSP retries errors forever); block a
 * readiness probe for more than about two seconds.
 */
#ifndef CO_HTTP_H
#define CO_HTTP_H

#include "util/compiler.h"

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct http;
struct metrics;

/* Whether the process answers POST /webhooks/gateway. */
enum http_webhooks {
        /* never: the route is 404 (relay, reconcile) */
        HTTP_WEBHOOKS_OFF = 0,
        /* when a secret is configured; else 404, logged once (consume) */
        HTTP_WEBHOOKS_IF_CONFIGURED,
        /* a secret must be configured: else a configuration error
         * (`chargeonce webhook`) */
        HTTP_WEBHOOKS_REQUIRED,
};

/* The options, filled by cmd/ (http.*, webhook.*, metrics.*). Strings and
 * metrics are borrowed for the server's life. */
struct http_opts {
        const char *listen; /* "host:port", port 0: any free one */
        /* http.tls_cert_file, http.tls_key_file: both "": plain HTTP */
        const char *tls_cert_file, *tls_key_file;
        const char *conninfo;    /* db.conninfo */
        const char *secret;      /* webhook.secret ("" none) */
        const char *secret_file; /* webhook.secret_file ("" none) */
        enum http_webhooks webhooks;
        /* /readyz also needs METRIC_CONSUMER_JOINED == 1 */
        bool ready_needs_consumer;
        int db_connections; /* webhook.db_connections */
        int64_t tolerance_ms, alive_timeout_ms;
        int64_t refresh_ms, audit_ms; /* metrics.*_interval */
        int64_t audit_timeout_ms;     /* metrics.audit_timeout */
        const char *actor; /* who applies webhooks (evidence): worker id */
        /* security.mode = production: a replication that may lose
         * commits is logged as a warning (docs/deployment.md) */
        bool production;
        struct metrics *metrics;
};

/*
 * Checks o as http_new would (http.listen's syntax, the secrets, reading
 * webhook.secret_file, the TLS certificate and key) without binding
 * anything: 0, or -1 with the
 * reason naming the key. So a command judges its whole configuration
 * before it starts anything. Any thread.
 */
int http_opts_check(const struct http_opts *o, char *errstr,
                    size_t errstr_size) CO_MUST_CHECK;

/*
 * Checks o, reads the secrets and starts listening (the server answers
 * from now on, on threads of its own). Returns the server (owned by the
 * caller: http_destroy) or NULL with the reason in errstr and errno
 * EINVAL for a configuration error (naming the key), another errno when
 * the address cannot be bound. o is borrowed for the server's life.
 */
struct http *http_new(const struct http_opts *o, char *errstr,
                      size_t errstr_size) CO_MUST_CHECK;

/*
 * Refreshes the gauges on the calling thread until *stop (flow/flow.h)
 * asks; the server answers meanwhile and afterwards, until
 * http_destroy. 0 when stopped, FLOW_EXIT_NOW on FLOW_EXIT, 1 fatal.
 */
int http_run(struct http *h, const atomic_int *stop) CO_MUST_CHECK;

/* The port bound (the actual one when http.listen asked for 0). */
int http_port(const struct http *h);

/* Stops the server (answers in progress finish) and frees h. NULL is
 * ignored. Not while http_run() runs. */
void http_destroy(struct http *h);

#endif
