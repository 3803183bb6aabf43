/* SPDX-License-Identifier: Apache-2.0 */
/*
 * http_int: what the files of src/http share (not for other modules).
 * http.c: the server and the small routes; hook.c: the webhook route and
 * its pool of database connections; run.c: the gauge loop; tls.c: the
 * certificate and key of HTTPS.
 */
#ifndef CO_HTTP_INT_H
#define CO_HTTP_INT_H

#include "gateway/webhook.h"
#include "http/http.h"
#include "util/buf.h"

#include <microhttpd.h>
#include <pthread.h>

/* Webhook connections held at most (webhook.db_connections' maximum). */
#define HTTP_POOL_MAX 64
/* libpq connect_timeout (s) and statement_timeout (ms) of every check. */
#define HTTP_DB_CONNECT_S    2
#define HTTP_DB_STATEMENT_MS 1500

/* The TLS versions and ciphers served (GnuTLS priority string): GnuTLS's
 * NORMAL set (no RC4, 3DES, export or anonymous ciphers) with the
 * protocol versions cut to TLS 1.3 and 1.2. */
#define HTTP_TLS_PRIORITIES "NORMAL:-VERS-ALL:+VERS-TLS1.3:+VERS-TLS1.2"

struct store;

/* HTTPS's certificate chain and key, as read (PEM, NUL-terminated), or
 * both NULL: plain HTTP. */
struct http_tls {
        char *cert, *key;
        size_t cert_len, key_len;
};

/* The webhook route's database connections, one per request at a time. */
struct http_pool {
        pthread_mutex_t mu;
        pthread_cond_t cv;
        int n;
        struct store *st[HTTP_POOL_MAX];
        bool busy[HTTP_POOL_MAX];
};

struct http {
        struct http_opts o;
        struct MHD_Daemon *mhd;
        int port;
        char addr[80]; /* "host:port" as bound, for the log */
        bool webhooks; /* the route is served */
        struct http_tls tls;
        struct gateway_webhook_secrets secrets;
        struct http_pool pool;
        /* /readyz: one probe at a time on a connection of its own */
        pthread_mutex_t ready_mu;
        struct store *ready_st;
};

/* One request in progress (MHD's con_cls). */
struct http_req {
        int route;
        struct buf body; /* the webhook's raw bytes, <= 64 KiB */
        bool too_large;
        size_t discarded;
};

/* Queues status with a text/plain body (copied). */
enum MHD_Result http_answer(struct MHD_Connection *c, unsigned status,
                            const char *text);

/* tls.c */
/*
 * Reads and judges http.tls_cert_file and http.tls_key_file (both set, or
 * neither: t stays empty, 0). -1 with the reason naming the key: one set
 * without the other, a file unreadable, empty or over 1 MiB, not PEM, an
 * encrypted key, a key that is not the certificate's. On success t owns
 * the contents (http_tls_free). Any thread.
 */
int http_tls_load(struct http_tls *t, const char *cert_file,
                  const char *key_file, char *errstr,
                  size_t errstr_size) CO_MUST_CHECK;
/* Zeroes the key's bytes (once libmicrohttpd has parsed them). */
void http_tls_wipe_key(struct http_tls *t);
/* Wipes the key and frees both. */
void http_tls_free(struct http_tls *t);

/* hook.c */
int http_pool_init(struct http_pool *p, int n);
void http_pool_destroy(struct http_pool *p);
/* The final call of POST /webhooks/gateway: the whole body is in r. */
enum MHD_Result http_webhook(struct http *h, struct MHD_Connection *c,
                             struct http_req *r);
/* Counts a refused webhook (413 before reading). */
void http_webhook_rejected(struct http *h, const char *why);

#endif
