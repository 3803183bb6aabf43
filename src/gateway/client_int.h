/* SPDX-License-Identifier: Apache-2.0 */
/*
 * client_int: what the pieces of the gateway client share. Internal to
 * src/gateway/; nothing outside it includes this.
 *
 *   client.c            the client: options check, new / poll / destroy,
 *                       evidence rendering
 *   client_call.c       calls: lists, merging by provider key, the end of a
 *                       call, gateway_charge() / gateway_query()
 *   client_attempt.c    the state machine of one call: the check before a
 *                       POST, starting an attempt, deciding what follows it
 *   client_transport.c  libcurl: one transfer's options and headers, the
 *                       answer's body and headers, finished transfers
 *
 * The rules of client.h hold for every piece: a timeout, reset or 5xx is
 * never FAILED, a payment's key and body never change between attempts,
 * no re-POST to a gateway that ignores keys without an empty query list
 * first, never log the API key, a full provider key or the payment method.
 * Everything here runs on the thread that owns the struct gateway.
 */
#ifndef CO_GATEWAY_CLIENT_INT_H
#define CO_GATEWAY_CLIENT_INT_H

#include "gateway/client.h"
#include "util/buf.h"
#include "util/compiler.h"
#include "util/log.h"

#include <curl/curl.h>
#include <stdatomic.h>

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
        struct buf resp; /* the answer's body, up to its kind's maximum */
        char retry_after[32];
        bool have_retry_after;
        bool replayed;
        char curl_err[CURL_ERROR_SIZE];

        int64_t started_ms; /* gateway_charge / gateway_query */
        int64_t attempt_ms; /* current attempt's start */
        int64_t attempt_us; /* the same, for its duration metric */
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
        /* libcurl's event interface (curl_multi_socket_action): the
         * sockets it wants watched in an epoll set, its one timer as a
         * monotonic deadline (-1: none); client.c */
        int epfd;
        int64_t timer_due_ms;
        int wake_fd; /* gateway_wake_fd(), or -1 */
};

/* ---- client_call.c ---- */

/* The log context of c: payment id, tenant, masked provider key. */
struct log_ctx gateway_call_ctx(const struct gw_call *c);

void gateway_list_push(struct call_list *l, struct gw_call *c);
void gateway_list_del(struct call_list *l, struct gw_call *c);

/* Frees c and everything it owns (its transfer too). NULL is fine. */
void gateway_call_free(struct gw_call *c);

/* Moves c (and its followers) to the done list; callbacks run later. */
void gateway_call_finish(struct gw_call *c, enum gw_outcome outcome,
                         const char *reason);

/* Puts c on the waiting list, due delay_ms from now. */
void gateway_call_wait(struct gw_call *c, int64_t delay_ms);

/* ---- client_attempt.c ---- */

/* Starts the attempt c is waiting for (or ends c if its POST may not go
 * out). c is on gw->waiting. */
void gateway_attempt_start(struct gw_call *c);

/*
 * One attempt ended: classify it, keep the evidence, and either finish the
 * call or schedule the next attempt. Never starts a transfer itself.
 */
void gateway_attempt_done(struct gw_call *c, enum gw_transport transport,
                          int http_status);

/* ---- client_transport.c ---- */

/* Makes c->easy for c's next attempt (POST or GET). 0 or a negative
 * errno; on error c->easy is left NULL. */
int gateway_easy_setup(struct gw_call *c) CO_MUST_CHECK;

/* The headers of every POST of one payment (the API key among them).
 * Owned by the caller, freed with gateway_slist_wipe_free(); never NULL. */
struct curl_slist *gateway_post_headers_new(const char *auth_header,
                                            const char *provider_key);

/* Hands every finished transfer to gateway_attempt_done(). */
void gateway_collect_finished(struct gateway *gw);

/* Wipes a string (it may be a secret), frees it. NULL is fine. */
void gateway_wipe_free(char *s);

/* Wipes the strings of a header list (it may hold the API key), frees it. */
void gateway_slist_wipe_free(struct curl_slist *l);

#endif
