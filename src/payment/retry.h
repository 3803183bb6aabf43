/* SPDX-License-Identifier: Apache-2.0 */
/*
 * retry: the pure retry policy of a gateway call. Exponential backoff with
 * full jitter, Retry-After honoured as a minimum, an attempt cap and an
 * overall deadline.
 *
 * It decides only *when* to try again and *when to stop*. It must never
 * turn "no evidence" into a failure: when the budget is spent on an answer
 * that is not final, the verdict is RETRY_GIVE_UP_UNKNOWN (the reconciler
 * takes over), never a refusal.
 *
 * Pure: no clock, no I/O; randomness comes from the caller. Any thread.
 */
#ifndef CO_PAYMENT_RETRY_H
#define CO_PAYMENT_RETRY_H

#include "util/compiler.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/*
 * What one attempt told us, as far as retrying goes. The gateway module
 * maps its answer classes onto these (payment/ sits below gateway/).
 */
enum retry_class {
        RETRY_CLASS_FINAL = 0, /* settles the call: charged, refused, defect */
        RETRY_CLASS_UNKNOWN,   /* no evidence: 5xx, timeout, reset, ... */
        RETRY_CLASS_BUSY,      /* the same key is being processed (409) */
        RETRY_CLASS_THROTTLED, /* rate limited (429) */
};

/* No defaults here: the daemon's configuration (gateway.backoff_base,
 * gateway.backoff_max, gateway.max_attempts, gateway.deadline) holds them. */
struct retry_policy {
        int64_t base_ms;     /* backoff base; first retry waits <= base */
        int64_t cap_ms;      /* ceiling of one backoff before jitter */
        int max_attempts;    /* attempts in all, the first included */
        int64_t deadline_ms; /* budget from the first attempt's start */
};

/* A Retry-After larger than this (ms) is taken as this. */
#define RETRY_AFTER_MAX_MS (24LL * 3600 * 1000)

enum retry_verdict {
        RETRY_AGAIN = 0,       /* try again after delay_ms, same key */
        RETRY_GIVE_UP_UNKNOWN, /* budget spent without evidence */
        RETRY_FINAL,           /* the attempt settled the call */
};

struct retry_decision {
        enum retry_verdict verdict;
        int64_t delay_ms;   /* RETRY_AGAIN only, else 0 */
        const char *reason; /* static text, for evidence and logs */
};

/*
 * 64 uniformly random bits. Injected so tests are deterministic; production
 * passes a PRNG seeded from crypto_random(). Never called for RETRY_FINAL.
 */
typedef uint64_t(retry_rand_fn)(void *opaque);

/*
 * Returns false, with a reason in errstr, if p cannot work (a non-positive
 * base, cap below base, attempts < 1, deadline <= 0).
 */
bool payment_retry_policy_valid(const struct retry_policy *p, char *errstr,
                                size_t errstr_size) CO_MUST_CHECK;

/*
 * The backoff before retry number `attempt` (attempt >= 1 attempts made):
 * a uniform value in [0, min(cap, base * 2^(attempt-1))] ("full jitter").
 */
int64_t payment_retry_backoff_ms(const struct retry_policy *p, int attempt,
                                 retry_rand_fn *rnd, void *rnd_opaque);

/*
 * The decision after an attempt.
 *   cls            what the attempt told us
 *   attempts       attempts made so far, this one included (>= 1)
 *   elapsed_ms     time since the first attempt started
 *   retry_after_ms the gateway's Retry-After in ms, or -1 for none; it is a
 *                  minimum for the delay (also on 5xx / 409 answers)
 * Gives up as unknown when the attempt cap is reached or when waiting the
 * delay would end past the deadline.
 */
struct retry_decision
payment_retry_decide(const struct retry_policy *p, enum retry_class cls,
                     int attempts, int64_t elapsed_ms, int64_t retry_after_ms,
                     retry_rand_fn *rnd, void *rnd_opaque);

const char *payment_retry_verdict_name(enum retry_verdict v);
const char *payment_retry_class_name(enum retry_class c);

#endif
