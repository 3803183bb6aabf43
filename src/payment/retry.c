/* SPDX-License-Identifier: Apache-2.0 */
/*
 * retry: backoff with full jitter, Retry-After as a floor, attempt cap and
 * deadline. Pure.
 *
 * Never answers "failed": an answer that is not final either earns another
 * attempt or ends as RETRY_GIVE_UP_UNKNOWN.
 */
#include "payment/retry.h"

#include <stdio.h>

bool payment_retry_policy_valid(const struct retry_policy *p, char *errstr,
                                size_t errstr_size)
{
        const char *why = NULL;

        if (p->base_ms <= 0)
                why = "retry base must be > 0 ms";
        else if (p->cap_ms < p->base_ms)
                why = "retry cap must be >= retry base";
        else if (p->max_attempts < 1)
                why = "retry max attempts must be >= 1";
        else if (p->deadline_ms <= 0)
                why = "retry deadline must be > 0 ms";
        if (why) {
                snprintf(errstr, errstr_size, "%s", why);
                return false;
        }
        return true;
}

int64_t payment_retry_backoff_ms(const struct retry_policy *p, int attempt,
                                 retry_rand_fn *rnd, void *rnd_opaque)
{
        int64_t ceiling = p->base_ms;
        uint64_t r;

        /* base * 2^(attempt-1), saturating at cap without overflowing */
        for (int i = 1; i < attempt && ceiling < p->cap_ms; i++) {
                if (ceiling > p->cap_ms / 2) {
                        ceiling = p->cap_ms;
                        break;
                }
                ceiling *= 2;
        }
        if (ceiling > p->cap_ms)
                ceiling = p->cap_ms;
        if (ceiling <= 0)
                return 0;
        r = rnd(rnd_opaque);
        return (int64_t)(r % ((uint64_t)ceiling + 1));
}

struct retry_decision payment_retry_decide(const struct retry_policy *p,
                                           enum retry_class cls, int attempts,
                                           int64_t elapsed_ms,
                                           int64_t retry_after_ms,
                                           retry_rand_fn *rnd, void *rnd_opaque)
{
        struct retry_decision d = { RETRY_GIVE_UP_UNKNOWN, 0, NULL };
        int64_t delay;

        if (cls == RETRY_CLASS_FINAL) {
                d.verdict = RETRY_FINAL;
                d.reason  = "final answer";
                return d;
        }
        if (attempts >= p->max_attempts) {
                d.reason = "attempt cap reached without evidence";
                return d;
        }
        if (elapsed_ms >= p->deadline_ms) {
                d.reason = "deadline passed without evidence";
                return d;
        }
        delay = payment_retry_backoff_ms(p, attempts < 1 ? 1 : attempts, rnd,
                                         rnd_opaque);
        if (retry_after_ms > RETRY_AFTER_MAX_MS)
                retry_after_ms = RETRY_AFTER_MAX_MS;
        if (retry_after_ms > delay)
                delay = retry_after_ms;
        if (delay > p->deadline_ms - elapsed_ms) {
                d.reason = retry_after_ms >= 0 && delay == retry_after_ms
                               ? "Retry-After reaches past the deadline"
                               : "next attempt would start past the "
                                 "deadline";
                return d;
        }
        d.verdict  = RETRY_AGAIN;
        d.delay_ms = delay;
        switch (cls) {
        case RETRY_CLASS_BUSY:
                d.reason = "same key in progress at the gateway";
                break;
        case RETRY_CLASS_THROTTLED:
                d.reason = "rate limited";
                break;
        default:
                d.reason = "no evidence yet";
                break;
        }
        return d;
}

const char *payment_retry_verdict_name(enum retry_verdict v)
{
        switch (v) {
        case RETRY_AGAIN:
                return "retry";
        case RETRY_GIVE_UP_UNKNOWN:
                return "give_up_unknown";
        case RETRY_FINAL:
                return "final";
        }
        return "?";
}

const char *payment_retry_class_name(enum retry_class c)
{
        switch (c) {
        case RETRY_CLASS_FINAL:
                return "final";
        case RETRY_CLASS_UNKNOWN:
                return "unknown";
        case RETRY_CLASS_BUSY:
                return "busy";
        case RETRY_CLASS_THROTTLED:
                return "throttled";
        }
        return "?";
}
