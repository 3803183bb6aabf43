/* SPDX-License-Identifier: Apache-2.0 */
/*
 * gateway client: charges and queries against the PSP (docs/contract.md
 * §4) over libcurl multi. Many calls in flight on one thread, connections
 * kept alive and shared, retries and backoff driven by timers inside the
 * client (it never sleeps).
 *
 * Must never:
 *  - report a timeout, reset, refused connection or 5xx as FAILED; after
 *    the retry budget such a call ends UNKNOWN and the reconciler takes it;
 *  - send one payment with another key or other parameters on a retry;
 *  - POST again to a gateway that ignores keys without first seeing an
 *    empty list from GET /v1/charges?reference=, or take a 402 to such a
 *    re-POST as final before a query shows no succeeded charge;
 *  - send a POST past the call's deadline or while the caller's lease is
 *    lost or ends within gateway.lease_margin (a process that was stopped
 *    and wakes up late never sends its queued request);
 *  - log the API key, a full provider key or the payment method;
 *  - turn TLS verification off unless asked, and then not silently.
 *
 * Threads: a struct gateway belongs to one thread; every function but
 * gateway_evidence_json() must be called from it. Callbacks run from
 * gateway_poll() (and gateway_destroy()) on that thread.
 */
#ifndef CO_GATEWAY_CLIENT_H
#define CO_GATEWAY_CLIENT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "gateway/classify.h"
#include "gateway/presend.h"
#include "gateway/request.h"
#include "payment/retry.h"
#include "util/compiler.h"

struct gateway; /* opaque */
struct metrics;

/* What query_settle_ms is set to: no configuration key (docs/gateway.md). */
#define GATEWAY_QUERY_SETTLE_MS 2000

/*
 * The client's options. There are no library defaults: the daemon's
 * configuration (gateway.* keys) holds them, cmd/opts.c fills every
 * field; gateway_new() refuses a required field left unset
 * (0 or NULL).
 */
/* TCP keepalive of the gateway's connections: idle and interval, s. */
#define GATEWAY_KEEPALIVE_IDLE_S     3
#define GATEWAY_KEEPALIVE_INTERVAL_S 1

struct gateway_opts {
        const char *base_url;       /* required, e.g. "https://psp.example";
                                       copied */
        const char *api_key;        /* required; Authorization: Bearer;
                                       copied, never logged, wiped on
                                       destroy */
        const char *ca_file;        /* CA bundle; NULL: the system store */
        bool tls_verify;            /* false is logged loudly */
        bool idempotency_keys;      /* the gateway honours Idempotency-Key;
                                       false: query before every re-POST */
        int64_t connect_timeout_ms; /* required, > 0 */
        int64_t timeout_ms;         /* one attempt; required, > 0 */
        /* TCP_USER_TIMEOUT of every connection: data sent and left
         * unacknowledged this long breaks it (a blackholed gateway), so a
         * pooled connection that died is not reused for a whole timeout;
         * 0: the kernel's (~15 min). Keepalives probe idle connections
         * every GATEWAY_KEEPALIVE_S. */
        int64_t tcp_user_timeout_ms;
        int max_connections; /* per host and in all; required, > 0 */
        /* Gateway that ignores keys: after a POST without a final answer,
         * wait at least this long before asking whether it charged, so a
         * request still being worked on can show up. Required, > 0. */
        int64_t query_settle_ms;
        /* A POST goes out only while the caller's lease (if it gave one)
         * has more than this left. >= 0. */
        int64_t lease_margin_ms;
        struct retry_policy retry; /* every field required, > 0 */
        uint64_t jitter_seed;      /* 0: seeded from crypto_random() */
        struct metrics *metrics;   /* every attempt counted; may be NULL */
};

/* Every attempt of a call, kept for the reconciler and for review. */
struct gateway_attempt {
        bool post; /* POST /v1/charges, else GET ?reference= */
        enum gw_transport transport;
        int http_status; /* 0 when no answer */
        enum gw_outcome outcome;
        bool replayed; /* Idempotent-Replayed: true */
        int64_t at_ms; /* start, since the call began */
        int64_t duration_ms;
};

/* First GATEWAY_EVIDENCE_MAX - 1 attempts and always the last one. */
#define GATEWAY_EVIDENCE_MAX 16

struct gateway_result {
        /* gateway_charge: GW_SUCCEEDED, GW_FAILED, GW_DEFECT or GW_UNKNOWN.
         * gateway_query: those or GW_NOT_FOUND. */
        enum gw_outcome outcome;
        int http_status; /* of the last attempt, 0 if none answered */
        char charge_id[GW_CHARGE_ID_SIZE];
        char error_code[GW_ERROR_CODE_SIZE];
        char error_message[GW_ERROR_MESSAGE_SIZE];
        int64_t retry_after_ms; /* last Retry-After seen, -1 none */
        const char *reason;     /* static text: why this outcome */
        int attempts;           /* HTTP attempts made, POSTs and GETs */
        int posts;              /* POSTs among them */
        int64_t elapsed_ms;
        bool coalesced; /* shared the attempts of a call in flight for the
                           same provider key */
        /* The call ended GW_UNKNOWN because a POST that was due was not
         * sent (deadline passed, lease lost or too short; presend.h);
         * posts counts the ones that were. */
        bool not_sent;
        int n_evidence;
        int evidence_dropped; /* attempts not kept in evidence[] */
        struct gateway_attempt evidence[GATEWAY_EVIDENCE_MAX];
};

/*
 * Called exactly once per accepted call, from gateway_poll() (or with
 * GW_UNKNOWN from gateway_destroy()). res is valid during the call only.
 * The callback may start new calls; it must not call gateway_poll() or
 * gateway_destroy().
 */
typedef void(gateway_done_cb)(void *opaque, const struct gateway_result *res);

/*
 * A new client. Copies everything it needs from o. Returns NULL with a
 * reason in errstr (which never repeats the API key; a required option
 * left unset is named, e.g. "gateway_opts.timeout_ms is unset"). The
 * caller owns the result and frees it with gateway_destroy().
 */
struct gateway *gateway_new(const struct gateway_opts *o, char *errstr,
                            size_t errstr_size) CO_MUST_CHECK;

/*
 * Starts charging req: POST /v1/charges with Idempotency-Key =
 * req->provider_key, retried under the policy (same key, same bytes), or,
 * with a gateway that ignores keys, GET ?reference= before every re-POST.
 * cb gets the final outcome once. Copies what it needs from req.
 *
 * A call for a provider key that is already in flight on this client
 * shares that call's attempts (one network sequence, one result for all);
 * with other parameters it ends GW_DEFECT ("parameters_mismatch") and
 * nothing is sent.
 *
 * Returns 0, or a negative errno with a reason (never the payment method
 * or the key) if req is unusable; then cb is never called.
 */
int gateway_charge(struct gateway *gw, const struct gateway_charge_req *req,
                   gateway_done_cb *cb, void *opaque, char *errstr,
                   size_t errstr_size) CO_MUST_CHECK;

/*
 * GET /v1/charges?reference=<reference>, retried under the policy while
 * the answer is no evidence. cb gets GW_SUCCEEDED (charge_id), GW_FAILED
 * (error_code), GW_NOT_FOUND (empty list), GW_DEFECT or GW_UNKNOWN.
 * amount (> 0) / currency: what the charge must be; both are required (a
 * listed charge is evidence only when it carries them).
 */
int gateway_query(struct gateway *gw, const char *reference, int64_t amount,
                  const char *currency, gateway_done_cb *cb, void *opaque,
                  char *errstr, size_t errstr_size) CO_MUST_CHECK;

/*
 * Drives transfers and retry timers for up to timeout_ms (0: do what is
 * ready and return). Callbacks run from here. Returns the number of
 * callbacks run, or a negative errno.
 */
int gateway_poll(struct gateway *gw, int timeout_ms) CO_MUST_CHECK;

/*
 * gateway_poll() also returns as soon as fd is readable (an eventfd the
 * owner's other event sources write to: finished database jobs, Kafka
 * messages), after reading it empty. One fd per client; 0 or -errno.
 */
int gateway_wake_fd(struct gateway *gw, int fd) CO_MUST_CHECK;

/* Calls accepted whose callback has not run yet. */
int gateway_in_flight(const struct gateway *gw);

/*
 * Stops every transfer; calls still in flight get their callback with
 * GW_UNKNOWN ("client destroyed"): a charge may have been made. NULL is
 * fine.
 */
void gateway_destroy(struct gateway *gw);

/*
 * The attempts of res as a JSON array, for the reconciler to store:
 * [{"method":"POST","status":503,"transport":"ok","outcome":"unknown",
 *   "replayed":false,"at_ms":0,"duration_ms":12},...]
 * Returns the length written, or -1 if it does not fit in outsz.
 */
int gateway_evidence_json(const struct gateway_result *res, char *out,
                          size_t outsz) CO_MUST_CHECK;

#endif
