/* SPDX-License-Identifier: Apache-2.0 */
/*
 * reconcile_int: what the reconciler's files share. Not for use outside
 * src/reconcile/.
 *
 *   reconcile.c  the lifecycle and the loop: takeovers, lease renewals,
 *                the drain, the stats line
 *   ask.c        the gateway calls and their answers, the decision on
 *                each answer (decide.c) with its evidence text and result
 *   act.c        acting on the answered items in batches: evidence first,
 *                then settle, hold (wait) or post again
 *
 * Threads: everything runs on the thread inside reconcile_run() (gateway
 * callbacks come from gateway_poll() on it), except stats_pub (under mu)
 * and lease_until_ms, which the gateway client reads (an atomic).
 */
#ifndef CO_RECONCILE_INT_H
#define CO_RECONCILE_INT_H

#include "flow/flow.h"
#include "gateway/client.h"
#include "payment/status.h"
#include "reconcile/decide.h"
#include "reconcile/reconcile.h"
#include "util/compiler.h"
#include "util/log.h"
#include "util/metrics.h"
#include "util/uuid.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define RECONCILE_EXCERPT_MAX 4096

struct store;
struct store_payment;

/* The rows of one takeover; freed when its last item is. */
struct reconcile_batch {
        struct store_payment *p; /* owned: store_payments_free */
        size_t n;
        size_t live;
};

/* One payment taken over, from its takeover until it is settled, held
 * or dropped (left to lease expiry). */
struct reconcile_item {
        struct flow_link link;   /* r->live */
        struct flow_qnode qnode; /* r->answered */
        struct reconciler *r;
        struct reconcile_batch *batch;
        struct store_payment *p; /* borrowed from batch */
        char key_masked[LOG_MASKED_KEY_SIZE];
        char pkey_masked[LOG_MASKED_KEY_SIZE];
        int64_t taken_db_ms;   /* database clock at the takeover */
        int64_t taken_mono_ms; /* our clock at the same moment */
        int64_t asked_mono_ms; /* start of the current gateway call */
        int64_t renewed_mono_ms;
        /* Until when our lease surely holds, on our clock: the moment the
         * statement that set it was sent, plus its length. The gateway
         * client reads it before every POST (presend.h); a lease found
         * lost is GATEWAY_LEASE_LOST. */
        _Atomic int64_t lease_until_ms;
        enum reconcile_step step;
        bool at_gateway;
        bool lost; /* our lease was not renewed: act on nothing */
        int attempts;

        /* the last answer */
        enum gw_outcome outcome;
        int http_status;
        const char *transport; /* static, or NULL: an answer arrived */
        const char *gw_reason; /* static */
        char charge_id[GW_CHARGE_ID_SIZE];
        char error_code[GW_ERROR_CODE_SIZE];
        char error_message[GW_ERROR_MESSAGE_SIZE];
        char attempts_json[RECONCILE_EXCERPT_MAX];

        /* the decision */
        struct reconcile_verdict v;
        char excerpt[RECONCILE_EXCERPT_MAX + 4096];
        char summary[160];
        enum payment_status status;
        const char *res_code; /* the result's error.code, or NULL */
        char res_message[GW_ERROR_MESSAGE_SIZE + 64];
        char result_event_id[UUID_STR_LEN];
        char *result_json;   /* owned */
        char *result_detail; /* owned: its compact form */
};

struct reconciler {
        struct reconcile_opts o; /* strings and gateway borrowed */
        struct store *db;        /* owned */
        struct gateway *gw;      /* owned */
        int64_t drain_ms;
        struct reconcile_timing timing;
        uint64_t rnd;

        struct flow_list live;      /* every item in hand */
        size_t at_gateway;          /* of them, with a call in flight */
        struct flow_queue answered; /* answered, not acted on yet */

        struct flow_renew renew;
        struct flow_drain drain;
        struct flow_tick stats_tick;
        int64_t next_scan_ms;
        struct reconcile_stats st, st_logged; /* the loop's own */
        int loop_id;                          /* metrics_loop_register */
        /* a statement did not fit the database's schema: stop (1) */
        bool fatal;

        pthread_mutex_t mu;               /* guards stats_pub */
        struct reconcile_stats stats_pub; /* a snapshot of st, any thread */
};

/* ---- reconcile.c ---- */

/* Unlinks and frees it (and its batch with its last item). */
void reconcile_item_free(struct reconciler *r, struct reconcile_item *it);
/* The log context of it's payment (masked key). */
void reconcile_item_ctx(const struct reconcile_item *it, struct log_ctx *lc);
/* The payment's age at mono_ms (our clock), on the database's clock. */
int64_t reconcile_item_age(const struct reconcile_item *it, int64_t mono_ms);

/* ---- ask.c ---- */

/* GET ?reference=: its answer queues it on r->answered. */
void reconcile_ask_query(struct reconciler *r, struct reconcile_item *it);
/* POST again with the same provider key (only with our lease renewed a
 * moment before); its answer queues it on r->answered. */
void reconcile_ask_repost(struct reconciler *r, struct reconcile_item *it);
/* Decides on it's answer (decide.c) and writes the evidence text. */
void reconcile_judge(struct reconciler *r, struct reconcile_item *it);
/* Builds it->result_json (and its detail) for a settle: 0, or -1
 * (logged). */
int reconcile_build_result(struct reconcile_item *it) CO_MUST_CHECK;

/* ---- act.c ---- */

/* Decides on every answered item and acts on them, in batches. */
void reconcile_act_answered(struct reconciler *r);
/* Renews the leases of v[0..n) to lease_ms; marks the ones lost.
 * 0, or -1 when the statement failed (logged, counted). */
int reconcile_lease_renew(struct reconciler *r, struct reconcile_item **v,
                          size_t n, int64_t lease_ms) CO_MUST_CHECK;

#endif
