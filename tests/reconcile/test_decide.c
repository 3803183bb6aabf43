/* SPDX-License-Identifier: Apache-2.0 */
/*
 * test_decide: the reconciler's decision table (src/reconcile/decide.c),
 * table-driven. Every row is one (step, outcome, ages) and the action,
 * error code and wait it must give. The properties that matter most are
 * also checked over a grid: never failed without GW_FAILED, never a
 * re-post without an empty list to a query inside every bound.
 */
#include "reconcile/decide.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#define S  1000LL
#define M  (60 * S)
#define H  (60 * M)
#define Q  RECONCILE_STEP_QUERY
#define C  RECONCILE_STEP_CHARGE
#define OK RECONCILE_SETTLE_SUCCEEDED
#define NO RECONCILE_SETTLE_FAILED
#define RP RECONCILE_REPOST
#define WT RECONCILE_WAIT
#define RV RECONCILE_REVIEW

/* review after 1 h, keys kept 24 h, consumer budget 40 s, re-post 40 s */
static const struct reconcile_timing T = { 1 * H, 24 * H, 40 * S, 40 * S };

struct row {
        const char *what;
        enum reconcile_step step;
        enum gw_outcome outcome;
        int64_t asked_age, age;
        enum reconcile_action want;
        const char *code;   /* REVIEW: expected error code */
        int64_t not_before; /* WAIT: expected not_before_ms */
};

static const struct row rows[] = {
        /* evidence settles, whatever the age */
        { "query lists succeeded", Q, GW_SUCCEEDED, 2 * M, 2 * M, OK, NULL, 0 },
        { "query lists succeeded, old", Q, GW_SUCCEEDED, 30 * H, 30 * H, OK,
          NULL, 0 },
        { "query lists succeeded, young", Q, GW_SUCCEEDED, 1 * S, 1 * S, OK,
          NULL, 0 },
        { "query lists refused", Q, GW_FAILED, 2 * M, 2 * M, NO, NULL, 0 },
        { "query lists refused, past review", Q, GW_FAILED, 2 * H, 2 * H, NO,
          NULL, 0 },
        { "re-post charged", C, GW_SUCCEEDED, 2 * M, 2 * M, OK, NULL, 0 },
        { "re-post refused (402)", C, GW_FAILED, 2 * M, 2 * M, NO, NULL, 0 },
        /* defects: review, never charge again */
        { "query defect", Q, GW_DEFECT, 2 * M, 2 * M, RV, RECONCILE_CODE_DEFECT,
          0 },
        { "re-post defect (422)", C, GW_DEFECT, 2 * M, 2 * M, RV,
          RECONCILE_CODE_DEFECT, 0 },
        /* empty list */
        { "empty list, call over", Q, GW_NOT_FOUND, 2 * M, 2 * M, RP, NULL, 0 },
        { "empty list, exactly at the in-flight bound", Q, GW_NOT_FOUND, 40 * S,
          41 * S, RP, NULL, 0 },
        { "empty list, call may be in flight", Q, GW_NOT_FOUND, 10 * S, 12 * S,
          WT, NULL, 30 * S },
        { "empty list, asked just before the bound", Q, GW_NOT_FOUND,
          40 * S - 1, 50 * S, WT, NULL, 1 },
        { "empty list past review_after", Q, GW_NOT_FOUND, 1 * H, 1 * H, RV,
          RECONCILE_CODE_DEADLINE, 0 },
        { "empty list, re-post would overrun retention", Q, GW_NOT_FOUND,
          24 * H - 40 * S, 24 * H - 40 * S, RV, RECONCILE_CODE_RETENTION, 0 },
        { "empty list, re-post just fits retention", Q, GW_NOT_FOUND,
          24 * H - 41 * S, 24 * H - 41 * S, RV, RECONCILE_CODE_DEADLINE, 0 },
        { "empty list past retention", Q, GW_NOT_FOUND, 25 * H, 25 * H, RV,
          RECONCILE_CODE_RETENTION, 0 },
        /* a POST never says "not found": no evidence */
        { "not_found from a charge", C, GW_NOT_FOUND, 2 * M, 2 * M, WT, NULL,
          0 },
        /* no evidence */
        { "query unknown", Q, GW_UNKNOWN, 2 * M, 2 * M, WT, NULL, 0 },
        { "re-post unknown", C, GW_UNKNOWN, 2 * M, 2 * M, WT, NULL, 0 },
        { "query in progress", Q, GW_IN_PROGRESS, 2 * M, 2 * M, WT, NULL, 0 },
        { "query throttled", Q, GW_RETRY_AFTER, 2 * M, 2 * M, WT, NULL, 0 },
        { "unknown just before review", Q, GW_UNKNOWN, 1 * H - 1, 1 * H - 1, WT,
          NULL, 0 },
        { "unknown at review_after", Q, GW_UNKNOWN, 1 * H, 1 * H, RV,
          RECONCILE_CODE_UNKNOWN, 0 },
        { "unknown past review_after", C, GW_UNKNOWN, 2 * H, 2 * H, RV,
          RECONCILE_CODE_UNKNOWN, 0 },
        { "unknown past retention", Q, GW_UNKNOWN, 24 * H, 24 * H, RV,
          RECONCILE_CODE_RETENTION, 0 },
};

static void test_table(void **state)
{
        (void)state;
        for (size_t i = 0; i < sizeof(rows) / sizeof(*rows); i++) {
                const struct row *r      = &rows[i];
                struct reconcile_facts f = { r->step, r->outcome, r->asked_age,
                                             r->age };
                struct reconcile_verdict v;

                memset(&v, 0xa5, sizeof(v));
                reconcile_decide(&f, &T, &v);
                if (v.action != r->want)
                        fail_msg("%s: %s, want %s", r->what,
                                 reconcile_action_name(v.action),
                                 reconcile_action_name(r->want));
                assert_non_null(v.reason);
                if (r->want == RV) {
                        assert_non_null(v.error_code);
                        if (strcmp(v.error_code, r->code) != 0)
                                fail_msg("%s: code %s, want %s", r->what,
                                         v.error_code, r->code);
                } else {
                        assert_null(v.error_code);
                }
                if (v.not_before_ms != (r->want == WT ? r->not_before : 0))
                        fail_msg("%s: not_before %lld, want %lld", r->what,
                                 (long long)v.not_before_ms,
                                 (long long)r->not_before);
        }
}

/* A short review_after (the integration tests' timing). */
static void test_short_timing(void **state)
{
        const struct reconcile_timing t = { 8 * S, 60 * S, 3 * S, 3 * S };
        struct reconcile_facts f        = { Q, GW_NOT_FOUND, 4 * S, 4 * S };
        struct reconcile_verdict v;

        (void)state;
        reconcile_decide(&f, &t, &v);
        assert_int_equal(v.action, RP);
        f.asked_age_ms = f.age_ms = 9 * S;
        reconcile_decide(&f, &t, &v);
        assert_int_equal(v.action, RV);
        /* retention shorter than the age: review, never a re-post */
        f.asked_age_ms = f.age_ms = 58 * S;
        reconcile_decide(&f, &t, &v);
        assert_int_equal(v.action, RV);
        assert_string_equal(v.error_code, RECONCILE_CODE_RETENTION);
}

/* Over a grid of every step, outcome and age: the two safety rules. */
static void test_never(void **state)
{
        static const enum gw_outcome outs[] = {
                GW_SUCCEEDED, GW_FAILED, GW_IN_PROGRESS, GW_RETRY_AFTER,
                GW_UNKNOWN,   GW_DEFECT, GW_NOT_FOUND,
        };
        static const int64_t ages[] = { 0,      1,      39 * S, 40 * S,
                                        41 * S, 59 * M, 1 * H,  2 * H,
                                        23 * H, 24 * H, 48 * H };
        (void)state;
        for (int s = 0; s < 2; s++)
                for (size_t o = 0; o < sizeof(outs) / sizeof(*outs); o++)
                        for (size_t a = 0; a < sizeof(ages) / sizeof(*ages);
                             a++)
                                for (size_t b = 0; b <= a; b++) {
                                        struct reconcile_facts f = {
                                                (enum reconcile_step)s, outs[o],
                                                ages[b], ages[a]
                                        };
                                        struct reconcile_verdict v;

                                        reconcile_decide(&f, &T, &v);
                                        if (v.action == NO)
                                                assert_int_equal(outs[o],
                                                                 GW_FAILED);
                                        if (v.action != RP)
                                                continue;
                                        assert_int_equal(s, Q);
                                        assert_int_equal(outs[o], GW_NOT_FOUND);
                                        assert_true(ages[b] >= T.in_flight_ms);
                                        assert_true(ages[a] + T.repost_ms <
                                                    T.key_retention_ms);
                                        assert_true(ages[a] <
                                                    T.review_after_ms);
                                }
}

static void test_timing(void **state)
{
        struct reconcile_timing t = T;
        char err[128];

        (void)state;
        assert_true(reconcile_timing_valid(&t, err, sizeof(err)));
        assert_null(reconcile_timing_warning(&t));
        t.repost_ms = 0;
        assert_false(reconcile_timing_valid(&t, err, sizeof(err)));
        t                  = T;
        t.key_retention_ms = 60 * S; /* 40 s + 40 s > 60 s */
        assert_non_null(reconcile_timing_warning(&t));
        t                 = T;
        t.review_after_ms = 30 * S;
        assert_non_null(reconcile_timing_warning(&t));
}

static void test_backoff(void **state)
{
        (void)state;
        /* no jitter drawn (rnd 0): base, doubling, capped */
        assert_int_equal(reconcile_backoff_ms(1000, 60000, 1, 0), 1000);
        assert_int_equal(reconcile_backoff_ms(1000, 60000, 2, 0), 2000);
        assert_int_equal(reconcile_backoff_ms(1000, 60000, 3, 0), 4000);
        assert_int_equal(reconcile_backoff_ms(1000, 60000, 7, 0), 60000);
        assert_int_equal(reconcile_backoff_ms(1000, 60000, 1000000, 0), 60000);
        assert_int_equal(reconcile_backoff_ms(1000, 60000, INT64_MAX, 0),
                         60000);
        /* jitter stays in [d/2, d] */
        for (uint64_t r = 0; r < 5000; r += 7) {
                int64_t d =
                    reconcile_backoff_ms(1000, 60000, 3, r * 2654435761u);
                assert_true(d >= 2000 && d <= 4000);
        }
        /* degenerate inputs still give >= 1 */
        assert_true(reconcile_backoff_ms(0, 0, 0, 12345) >= 1);
        assert_true(reconcile_backoff_ms(1, 1, 5, 1) >= 1);
        assert_string_equal(reconcile_action_name(RV), "review");
}

int main(void)
{
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_table),
                cmocka_unit_test(test_short_timing),
                cmocka_unit_test(test_never),
                cmocka_unit_test(test_timing),
                cmocka_unit_test(test_backoff),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
