/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Unit tests of payment/retry: the decision table, full jitter bounds,
 * Retry-After as a floor, cap and deadline. Must never see a verdict other
 * than "give up as unknown" for a spent budget.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <limits.h>
#include <cmocka.h>

#include "payment/retry.h"

static uint64_t fixed_rand(void *opaque)
{
        return *(const uint64_t *)opaque;
}

static uint64_t splitmix(void *opaque)
{
        uint64_t *s = opaque, z;

        z = (*s += 0x9e3779b97f4a7c15ULL);
        z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
        z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
        return z ^ (z >> 31);
}

/* The policy these tests were written for (200 ms base, 30 s cap, 10
 * attempts, 120 s deadline): retry.c has no defaults of its own. */
static void policy(struct retry_policy *p)
{
        p->base_ms      = 200;
        p->cap_ms       = 30000;
        p->max_attempts = 10;
        p->deadline_ms  = 120000;
}

struct row {
        const char *name;
        enum retry_class cls;
        int attempts;
        int64_t elapsed_ms;
        int64_t retry_after_ms;
        uint64_t rand;
        enum retry_verdict want;
        int64_t want_delay_ms;
};

/* policy of the table: base 100, cap 1000, 10 attempts, 10 s deadline */
static const struct row rows[] = {
        { "final", RETRY_CLASS_FINAL, 1, 0, -1, 5, RETRY_FINAL, 0 },
        { "final past deadline", RETRY_CLASS_FINAL, 99, 99999, -1, 5,
          RETRY_FINAL, 0 },
        { "unknown 1, rand 0", RETRY_CLASS_UNKNOWN, 1, 0, -1, 0, RETRY_AGAIN,
          0 },
        { "unknown 1, top", RETRY_CLASS_UNKNOWN, 1, 0, -1, 100, RETRY_AGAIN,
          100 },
        { "unknown 1, wraps", RETRY_CLASS_UNKNOWN, 1, 0, -1, 101, RETRY_AGAIN,
          0 },
        { "unknown 2, top", RETRY_CLASS_UNKNOWN, 2, 0, -1, 200, RETRY_AGAIN,
          200 },
        { "unknown 3, top", RETRY_CLASS_UNKNOWN, 3, 0, -1, 400, RETRY_AGAIN,
          400 },
        { "unknown 3, middle", RETRY_CLASS_UNKNOWN, 3, 0, -1, 123, RETRY_AGAIN,
          123 },
        { "unknown 4, top", RETRY_CLASS_UNKNOWN, 4, 0, -1, 800, RETRY_AGAIN,
          800 },
        { "unknown 5, capped", RETRY_CLASS_UNKNOWN, 5, 0, -1, 1000, RETRY_AGAIN,
          1000 },
        { "unknown 5, capped wraps", RETRY_CLASS_UNKNOWN, 5, 0, -1, 1001,
          RETRY_AGAIN, 0 },
        { "unknown 9, capped", RETRY_CLASS_UNKNOWN, 9, 0, -1, 1000, RETRY_AGAIN,
          1000 },
        { "attempt cap", RETRY_CLASS_UNKNOWN, 10, 0, -1, 0,
          RETRY_GIVE_UP_UNKNOWN, 0 },
        { "over attempt cap", RETRY_CLASS_UNKNOWN, 11, 0, -1, 0,
          RETRY_GIVE_UP_UNKNOWN, 0 },
        { "busy", RETRY_CLASS_BUSY, 1, 0, -1, 50, RETRY_AGAIN, 50 },
        { "busy at cap", RETRY_CLASS_BUSY, 10, 0, -1, 50, RETRY_GIVE_UP_UNKNOWN,
          0 },
        { "throttled, Retry-After floor", RETRY_CLASS_THROTTLED, 1, 0, 5000, 0,
          RETRY_AGAIN, 5000 },
        { "throttled, backoff above floor", RETRY_CLASS_THROTTLED, 2, 0, 50,
          150, RETRY_AGAIN, 150 },
        { "throttled, no Retry-After", RETRY_CLASS_THROTTLED, 1, 0, -1, 7,
          RETRY_AGAIN, 7 },
        { "throttled, Retry-After 0", RETRY_CLASS_THROTTLED, 1, 0, 0, 7,
          RETRY_AGAIN, 7 },
        { "503 with Retry-After", RETRY_CLASS_UNKNOWN, 1, 0, 3000, 0,
          RETRY_AGAIN, 3000 },
        { "Retry-After past deadline", RETRY_CLASS_THROTTLED, 1, 0, 20000, 0,
          RETRY_GIVE_UP_UNKNOWN, 0 },
        { "Retry-After huge", RETRY_CLASS_THROTTLED, 1, 0, INT64_MAX, 0,
          RETRY_GIVE_UP_UNKNOWN, 0 },
        { "deadline reached", RETRY_CLASS_UNKNOWN, 2, 10000, -1, 0,
          RETRY_GIVE_UP_UNKNOWN, 0 },
        { "deadline passed", RETRY_CLASS_UNKNOWN, 2, 12000, -1, 0,
          RETRY_GIVE_UP_UNKNOWN, 0 },
        { "delay would pass deadline", RETRY_CLASS_UNKNOWN, 1, 9950, -1, 100,
          RETRY_GIVE_UP_UNKNOWN, 0 },
        { "delay ends on deadline", RETRY_CLASS_UNKNOWN, 1, 9900, -1, 100,
          RETRY_AGAIN, 100 },
        { "attempts 0 treated as 1", RETRY_CLASS_UNKNOWN, 0, 0, -1, 100,
          RETRY_AGAIN, 100 },
};

static void test_table(void **state)
{
        struct retry_policy p = { 100, 1000, 10, 10000 };

        (void)state;
        for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
                const struct row *r = &rows[i];
                uint64_t rv         = r->rand;
                struct retry_decision d =
                    payment_retry_decide(&p, r->cls, r->attempts, r->elapsed_ms,
                                         r->retry_after_ms, fixed_rand, &rv);

                if (d.verdict != r->want || d.delay_ms != r->want_delay_ms)
                        fail_msg("row \"%s\": %s %lld, want %s %lld", r->name,
                                 payment_retry_verdict_name(d.verdict),
                                 (long long)d.delay_ms,
                                 payment_retry_verdict_name(r->want),
                                 (long long)r->want_delay_ms);
                assert_non_null(d.reason);
        }
}

/* Full jitter: every delay in [0, ceiling], mean near ceiling / 2. */
static void test_full_jitter(void **state)
{
        struct retry_policy p = { 10, 5000, 100, INT64_MAX / 4 };
        uint64_t seed         = 42;

        (void)state;
        for (int attempt = 1; attempt <= 20; attempt++) {
                int64_t ceiling = 10LL << (attempt - 1);
                double sum      = 0;
                int64_t lo = INT64_MAX, hi = -1;

                if (ceiling > 5000)
                        ceiling = 5000;
                for (int i = 0; i < 4000; i++) {
                        int64_t d = payment_retry_backoff_ms(&p, attempt,
                                                             splitmix, &seed);
                        assert_true(d >= 0 && d <= ceiling);
                        lo = d < lo ? d : lo;
                        hi = d > hi ? d : hi;
                        sum += (double)d;
                }
                sum /= 4000;
                assert_true(sum > ceiling * 0.4 && sum < ceiling * 0.6);
                assert_true(lo <= ceiling / 20);
                assert_true(hi >= ceiling - ceiling / 20);
        }
}

/* Huge attempt numbers and caps never overflow. */
static void test_no_overflow(void **state)
{
        struct retry_policy p = { 1000, INT64_MAX, INT_MAX, INT64_MAX };
        uint64_t rv           = UINT64_MAX;

        (void)state;
        for (int a = 1; a < 200; a++)
                assert_true(payment_retry_backoff_ms(&p, a, fixed_rand, &rv) >=
                            0);
        assert_true(payment_retry_backoff_ms(&p, INT_MAX, fixed_rand, &rv) >=
                    0);
}

/* The same seed gives the same delays: a deterministic test source. */
static void test_deterministic(void **state)
{
        struct retry_policy p;
        uint64_t s1 = 7, s2 = 7;

        (void)state;
        policy(&p);
        for (int a = 1; a < p.max_attempts; a++) {
                struct retry_decision d1 = payment_retry_decide(
                    &p, RETRY_CLASS_UNKNOWN, a, 0, -1, splitmix, &s1);
                struct retry_decision d2 = payment_retry_decide(
                    &p, RETRY_CLASS_UNKNOWN, a, 0, -1, splitmix, &s2);
                assert_int_equal(d1.verdict, RETRY_AGAIN);
                assert_int_equal(d1.delay_ms, d2.delay_ms);
        }
}

/* A whole loop under the defaults ends in at most max_attempts attempts,
 * as "give up unknown", before the deadline. */
static void test_budget_loop(void **state)
{
        struct retry_policy p;
        uint64_t seed   = 1;
        int64_t elapsed = 0;
        int attempts    = 0;
        struct retry_decision d;

        (void)state;
        policy(&p);
        do {
                attempts++;
                elapsed += 10000; /* each attempt times out after 10 s */
                d = payment_retry_decide(&p, RETRY_CLASS_UNKNOWN, attempts,
                                         elapsed, -1, splitmix, &seed);
                elapsed += d.delay_ms;
        } while (d.verdict == RETRY_AGAIN && attempts < 1000);
        assert_int_equal(d.verdict, RETRY_GIVE_UP_UNKNOWN);
        assert_true(attempts <= p.max_attempts);
}

static void test_valid(void **state)
{
        struct retry_policy p;
        char err[128];

        (void)state;
        policy(&p);
        assert_true(payment_retry_policy_valid(&p, err, sizeof(err)));
        p.base_ms = 0;
        assert_false(payment_retry_policy_valid(&p, err, sizeof(err)));
        policy(&p);
        p.cap_ms = 10;
        assert_false(payment_retry_policy_valid(&p, err, sizeof(err)));
        policy(&p);
        p.max_attempts = 0;
        assert_false(payment_retry_policy_valid(&p, err, sizeof(err)));
        policy(&p);
        p.deadline_ms = 0;
        assert_false(payment_retry_policy_valid(&p, err, sizeof(err)));
        assert_string_equal(payment_retry_verdict_name(RETRY_AGAIN), "retry");
        assert_string_equal(payment_retry_class_name(RETRY_CLASS_BUSY), "busy");
}

int main(void)
{
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_table),
                cmocka_unit_test(test_full_jitter),
                cmocka_unit_test(test_no_overflow),
                cmocka_unit_test(test_deterministic),
                cmocka_unit_test(test_budget_loop),
                cmocka_unit_test(test_valid),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
