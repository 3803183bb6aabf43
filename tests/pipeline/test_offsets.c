/* SPDX-License-Identifier: Apache-2.0 */
/*
 * test_offsets: the offset tracker stores an offset only when every
 * message up to it is done, ignores completions of a revoked assignment,
 * and survives gaps, growth and any completion order.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "pipeline/offsets.h"

#include <stdlib.h>

static void test_contiguous(void **state)
{
        struct offsets *ot = offsets_new();
        uint32_t g         = offsets_assign(ot, 0);
        (void)state;
        for (int64_t o = 10; o <= 12; o++)
                assert_int_equal(offsets_add(ot, 0, g, o), 0);
        assert_int_equal(offsets_take_committable(ot, 0), -1);
        offsets_done(ot, 0, g, 11);
        assert_int_equal(offsets_take_committable(ot, 0), -1); /* 10 open */
        offsets_done(ot, 0, g, 10);
        assert_int_equal(offsets_take_committable(ot, 0), 12);
        assert_int_equal(offsets_take_committable(ot, 0), -1); /* taken */
        offsets_done(ot, 0, g, 12);
        assert_int_equal(offsets_take_committable(ot, 0), 13);
        assert_int_equal(offsets_pending(ot), 0);
        offsets_destroy(ot);
}

static void test_gaps_and_refusals(void **state)
{
        struct offsets *ot = offsets_new();
        uint32_t g         = offsets_assign(ot, 3);
        (void)state;
        assert_int_equal(offsets_add(ot, 3, g, 5), 0);
        assert_int_equal(offsets_add(ot, 3, g, 9), 0); /* compacted gap */
        assert_int_equal(offsets_add(ot, 3, g, 20), 0);
        assert_int_equal(offsets_add(ot, 3, g, 20), -1); /* not increasing */
        assert_int_equal(offsets_add(ot, 3, g, 7), -1);
        assert_int_equal(offsets_add(ot, 3, g + 1, 21), -1); /* other gen */
        assert_int_equal(offsets_add(ot, 4, g, 1), -1);      /* not assigned */
        offsets_done(ot, 3, g, 9);
        offsets_done(ot, 3, g, 20);
        offsets_done(ot, 3, g, 6); /* never added: ignored */
        assert_int_equal(offsets_take_committable(ot, 3), -1);
        offsets_done(ot, 3, g, 5);
        assert_int_equal(offsets_take_committable(ot, 3), 21);
        offsets_destroy(ot);
}

static void test_revoked_generation(void **state)
{
        struct offsets *ot = offsets_new();
        uint32_t g1, g2;
        (void)state;
        g1 = offsets_assign(ot, 0);
        assert_int_equal(offsets_add(ot, 0, g1, 1), 0);
        assert_int_equal(offsets_add(ot, 0, g1, 2), 0);
        assert_int_equal(offsets_pending_in(ot, 0), 2);
        offsets_revoke(ot, 0);
        assert_int_equal(offsets_pending(ot), 0);
        offsets_done(ot, 0, g1, 1); /* late: the assignment is gone */
        assert_int_equal(offsets_take_committable(ot, 0), -1);
        g2 = offsets_assign(ot, 0); /* the same partition again */
        assert_int_not_equal(g1, g2);
        assert_int_equal(offsets_add(ot, 0, g2, 1), 0);
        offsets_done(ot, 0, g1, 1); /* old generation: ignored */
        assert_int_equal(offsets_take_committable(ot, 0), -1);
        offsets_done(ot, 0, g2, 1);
        assert_int_equal(offsets_take_committable(ot, 0), 2);
        offsets_destroy(ot);
}

/* Any completion order, ring growth, several partitions: after every
 * completion the committable offset is the lowest undone one. */
static void test_random_order_against_model(void **state)
{
        enum { N = 5000, P = 3 };
        struct offsets *ot = offsets_new();
        uint32_t g[P];
        static int order[P * N];
        static unsigned char done[P][N];
        int64_t last[P];
        unsigned seed = 7;
        (void)state;
        for (int p = 0; p < P; p++) {
                g[p]    = offsets_assign(ot, p);
                last[p] = -1;
                for (int i = 0; i < N; i++)
                        assert_int_equal(offsets_add(ot, p, g[p], 100 + i), 0);
        }
        assert_int_equal(offsets_pending(ot), P * N);
        for (int i = 0; i < P * N; i++)
                order[i] = i;
        for (int i = P * N - 1; i > 0; i--) {
                int j    = (int)(rand_r(&seed) % (unsigned)(i + 1));
                int t    = order[i];
                order[i] = order[j];
                order[j] = t;
        }
        for (int k = 0; k < P * N; k++) {
                int p = order[k] / N, i = order[k] % N;
                int low = 0;
                int64_t want, got;
                offsets_done(ot, p, g[p], 100 + i);
                done[p][i] = 1;
                while (low < N && done[p][low])
                        low++;
                want = low == 0 ? -1 : 100 + low;
                got  = offsets_take_committable(ot, p);
                if (want != last[p]) {
                        assert_int_equal(got, want);
                        last[p] = want;
                } else {
                        assert_int_equal(got, -1); /* nothing new */
                }
        }
        assert_int_equal(offsets_pending(ot), 0);
        offsets_destroy(ot);
}

int main(void)
{
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_contiguous),
                cmocka_unit_test(test_gaps_and_refusals),
                cmocka_unit_test(test_revoked_generation),
                cmocka_unit_test(test_random_order_against_model),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
