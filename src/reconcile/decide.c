/* SPDX-License-Identifier: Apache-2.0 */
/*
 * decide: the reconciler's decision table (see decide.h and
 * docs/reconciler.md). Pure.
 *
 * Must never return RECONCILE_SETTLE_FAILED for anything but GW_FAILED,
 * nor RECONCILE_REPOST for anything but an empty list answered to a query
 * while the gateway keeps its keys and no earlier call can be in flight.
 */
#include "reconcile/decide.h"

#include <stdio.h>

static void verdict(struct reconcile_verdict *out, enum reconcile_action a,
                    const char *code, const char *reason)
{
        out->action        = a;
        out->not_before_ms = 0;
        out->error_code    = code;
        out->reason        = reason;
}

/* An answer that is no evidence either way. */
static void decide_unknown(const struct reconcile_facts *f,
                           const struct reconcile_timing *t,
                           struct reconcile_verdict *out)
{
        if (f->age_ms >= t->key_retention_ms) {
                verdict(out, RECONCILE_REVIEW, RECONCILE_CODE_RETENTION,
                        "no evidence and the gateway may have forgotten the "
                        "key: nothing more may be sent");
                return;
        }
        if (f->age_ms >= t->review_after_ms) {
                verdict(out, RECONCILE_REVIEW, RECONCILE_CODE_UNKNOWN,
                        "no evidence either way past reconcile.review_after");
                return;
        }
        verdict(out, RECONCILE_WAIT, NULL,
                "no evidence either way: ask again later");
}

/* An empty list answered to GET /v1/charges?reference=. */
static void decide_not_found(const struct reconcile_facts *f,
                             const struct reconcile_timing *t,
                             struct reconcile_verdict *out)
{
        /* The re-post, retries included, must be over before the gateway
         * may forget the key; past that, an empty list is no evidence
         * either (the gateway may have dropped what it listed). */
        if (f->age_ms >= t->key_retention_ms ||
            t->repost_ms >= t->key_retention_ms - f->age_ms) {
                verdict(out, RECONCILE_REVIEW, RECONCILE_CODE_RETENTION,
                        "empty list too close to the gateway's key "
                        "retention: not posted again");
                return;
        }
        if (f->age_ms >= t->review_after_ms) {
                verdict(out, RECONCILE_REVIEW, RECONCILE_CODE_DEADLINE,
                        "no charge at the gateway, but past "
                        "reconcile.review_after: not posted again");
                return;
        }
        /* The list is only evidence of what the gateway had seen when it
         * answered: the consumer's call may still be on its way. */
        if (f->asked_age_ms < t->in_flight_ms) {
                verdict(out, RECONCILE_WAIT, NULL,
                        "empty list, but the original call may still be in "
                        "flight: ask again later");
                out->not_before_ms = t->in_flight_ms - f->asked_age_ms;
                return;
        }
        verdict(out, RECONCILE_REPOST, NULL,
                "empty list from a gateway that keeps its keys, original "
                "call over: post again with the same provider key");
}

void reconcile_decide(const struct reconcile_facts *f,
                      const struct reconcile_timing *t,
                      struct reconcile_verdict *out)
{
        switch (f->outcome) {
        case GW_SUCCEEDED:
                verdict(out, RECONCILE_SETTLE_SUCCEEDED, NULL,
                        f->step == RECONCILE_STEP_QUERY
                            ? "the gateway lists a succeeded charge"
                            : "the re-post was charged");
                return;
        case GW_FAILED:
                verdict(out, RECONCILE_SETTLE_FAILED, NULL,
                        f->step == RECONCILE_STEP_QUERY
                            ? "the gateway lists a refused charge"
                            : "the gateway refused the re-post");
                return;
        case GW_DEFECT:
                verdict(out, RECONCILE_REVIEW, RECONCILE_CODE_DEFECT,
                        "the gateway's answer is a defect: never charge "
                        "again, a person decides");
                return;
        case GW_NOT_FOUND:
                if (f->step == RECONCILE_STEP_QUERY) {
                        decide_not_found(f, t, out);
                        return;
                }
                /* a POST never answers "not found": no evidence */
                break;
        case GW_IN_PROGRESS:
        case GW_RETRY_AFTER:
        case GW_UNKNOWN:
                break;
        }
        decide_unknown(f, t, out);
}

bool reconcile_timing_valid(const struct reconcile_timing *t, char *errstr,
                            size_t errstr_size)
{
        if (t->review_after_ms <= 0 || t->key_retention_ms <= 0 ||
            t->in_flight_ms <= 0 || t->repost_ms <= 0) {
                snprintf(errstr, errstr_size,
                         "reconcile timing: every duration must be > 0");
                return false;
        }
        return true;
}

const char *reconcile_timing_warning(const struct reconcile_timing *t)
{
        if (t->in_flight_ms >= t->key_retention_ms ||
            t->repost_ms >= t->key_retention_ms - t->in_flight_ms)
                return "gateway.deadline + gateway.timeout is too long for "
                       "gateway.key_retention: an orphan is never posted "
                       "again, every empty list ends in review";
        if (t->review_after_ms <= t->in_flight_ms)
                return "reconcile.review_after is not longer than "
                       "gateway.deadline + gateway.timeout: an orphan never "
                       "sent ends in review instead of being posted again";
        if (t->review_after_ms > t->key_retention_ms)
                return "reconcile.review_after is longer than "
                       "gateway.key_retention: unknown outcomes reach review "
                       "at the key retention instead";
        return NULL;
}

int64_t reconcile_backoff_ms(int64_t base_ms, int64_t cap_ms, int64_t takeovers,
                             uint64_t rnd)
{
        int64_t d = base_ms > 0 ? base_ms : 1;

        if (cap_ms < d)
                cap_ms = d;
        /* bounded: at most 62 doublings, and it stops at the cap */
        for (int64_t i = 1; i < takeovers && i < 63 && d < cap_ms; i++)
                d = d > cap_ms / 2 ? cap_ms : d * 2;
        if (d > cap_ms)
                d = cap_ms;
        d = d - (int64_t)(rnd % (uint64_t)(d / 2 + 1));
        return d > 0 ? d : 1;
}

const char *reconcile_action_name(enum reconcile_action a)
{
        switch (a) {
        case RECONCILE_SETTLE_SUCCEEDED:
                return "succeeded";
        case RECONCILE_SETTLE_FAILED:
                return "failed";
        case RECONCILE_REPOST:
                return "repost";
        case RECONCILE_WAIT:
                return "wait";
        case RECONCILE_REVIEW:
                return "review";
        }
        return "?";
}
