/* SPDX-License-Identifier: Apache-2.0 */
/*
 * decide: what the reconciler does with one taken-over payment, given what
 * the gateway answered and how old the payment is. Pure: no clock, no I/O,
 * no allocation; any thread. docs/reconciler.md has the table.
 *
 * It must never:
 *  - decide `failed` without a final refusal from the gateway (GW_FAILED:
 *    a 402 refusal or a listed failed charge with error.code);
 *  - decide to post again unless a *query* answered an empty list
 *    (GW_NOT_FOUND), the original call can no longer be in flight when that
 *    query was asked, and the gateway still keeps its keys until the
 *    re-post is over;
 *  - post again once the gateway may have forgotten the key, or past the
 *    review deadline: those end in `review`, never in a new charge.
 */
#ifndef CO_RECONCILE_DECIDE_H
#define CO_RECONCILE_DECIDE_H

#include "gateway/classify.h"
#include "util/compiler.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Which call produced the answer. */
enum reconcile_step {
        RECONCILE_STEP_QUERY = 0, /* GET /v1/charges?reference= */
        RECONCILE_STEP_CHARGE,    /* POST /v1/charges, same provider key */
};

enum reconcile_action {
        RECONCILE_SETTLE_SUCCEEDED = 0, /* the gateway charged it */
        RECONCILE_SETTLE_FAILED,        /* the gateway refused it, finally */
        RECONCILE_REPOST,               /* POST again, same provider key */
        RECONCILE_WAIT,                 /* no evidence yet: look again later */
        RECONCILE_REVIEW,               /* a person decides; never failed */
};

/* The timing parameters, all in milliseconds and > 0. */
struct reconcile_timing {
        /* reconcile.review_after: past this age an outcome that is not
         * settled by evidence goes to review. */
        int64_t review_after_ms;
        /* gateway.key_retention: how long the gateway keeps a key (and, we
         * assume, the charges listed by reference) after it was used. */
        int64_t key_retention_ms;
        /* How long after its creation the consumer's own call may still be
         * in flight: gateway.deadline + gateway.timeout. */
        int64_t in_flight_ms;
        /* How long one re-post may take, retries included:
         * gateway.deadline + gateway.timeout. */
        int64_t repost_ms;
};

/* What is known about the payment when its answer arrives. */
struct reconcile_facts {
        enum reconcile_step step;
        enum gw_outcome outcome; /* the call's final outcome */
        /* Age of the payment (since its creation, the database's clock)
         * when the answering call was started, and now. */
        int64_t asked_age_ms;
        int64_t age_ms;
};

struct reconcile_verdict {
        enum reconcile_action action;
        /* WAIT: wait at least this long before asking again (0: the
         * backoff alone decides). */
        int64_t not_before_ms;
        /* REVIEW: the result's error.code (for a defect the gateway's own
         * code wins when it gave one). Static; NULL otherwise. */
        const char *error_code;
        /* Static text for logs, evidence and the review message. */
        const char *reason;
};

/* error.code values of a review decided here. */
#define RECONCILE_CODE_UNKNOWN   "outcome_unknown"
#define RECONCILE_CODE_RETENTION "key_retention_passed"
#define RECONCILE_CODE_DEADLINE  "deadline_passed"
#define RECONCILE_CODE_DEFECT    "gateway_defect"

/* The decision. f and t must be valid (reconcile_timing_valid). */
void reconcile_decide(const struct reconcile_facts *f,
                      const struct reconcile_timing *t,
                      struct reconcile_verdict *out);

/*
 * False, with a reason in errstr, if a parameter is not positive. A
 * timing where no re-post is ever possible (in_flight_ms + repost_ms >=
 * key_retention_ms) is valid but every empty list then ends in review;
 * reconcile_timing_warning() says so.
 */
bool reconcile_timing_valid(const struct reconcile_timing *t, char *errstr,
                            size_t errstr_size) CO_MUST_CHECK;

/* A static warning about a legal but odd timing, or NULL. */
const char *reconcile_timing_warning(const struct reconcile_timing *t);

/*
 * The wait before looking again at a payment that is still unknown after
 * its `takeovers`-th takeover (>= 1): base * 2^(takeovers-1) capped at
 * cap, then "equal jitter" (a uniform value in [d/2, d]) from rnd, so
 * reconcilers spread out but never retry at once. Always >= 1.
 */
int64_t reconcile_backoff_ms(int64_t base_ms, int64_t cap_ms, int64_t takeovers,
                             uint64_t rnd);

/* "succeeded", "failed", "repost", "wait", "review". */
const char *reconcile_action_name(enum reconcile_action a);

#endif
