/* SPDX-License-Identifier: Apache-2.0 */
/* test_flow: the engines' shared loop pieces, with times passed in. */
#include "flow/flow.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

static void test_drain(void **state)
{
        struct flow_drain d = { 0 };
        (void)state;

        assert_int_equal(flow_drain_step(&d, FLOW_RUN, 100, 50, 3),
                         FLOW_STEP_RUN);
        assert_int_equal(flow_drain_step(&d, FLOW_DRAIN, 100, 50, 3),
                         FLOW_STEP_BEGIN);
        /* BEGIN only once; work left and time left: go on */
        assert_int_equal(flow_drain_step(&d, FLOW_DRAIN, 120, 50, 3),
                         FLOW_STEP_RUN);
        /* the level going back to 0 does not undo a drain */
        assert_int_equal(flow_drain_step(&d, FLOW_RUN, 130, 50, 3),
                         FLOW_STEP_RUN);
        assert_int_equal(flow_drain_step(&d, FLOW_DRAIN, 150, 50, 3),
                         FLOW_STEP_RUN);
        assert_int_equal(flow_drain_step(&d, FLOW_DRAIN, 151, 50, 3),
                         FLOW_STEP_DONE);
        assert_int_equal(flow_drain_step(&d, FLOW_EXIT, 152, 50, 3),
                         FLOW_STEP_EXIT);

        /* a stop with nothing in hand is drained on its first turn */
        d = (struct flow_drain){ 0 };
        assert_int_equal(flow_drain_step(&d, FLOW_DRAIN, 0, 50, 0),
                         FLOW_STEP_DONE);
        assert_true(d.draining);
        assert_int_equal(flow_drain_step(&d, FLOW_DRAIN, 1, 50, 0),
                         FLOW_STEP_DONE);
        /* a second signal before any drain */
        d = (struct flow_drain){ 0 };
        assert_int_equal(flow_drain_step(&d, FLOW_EXIT, 0, 50, 9),
                         FLOW_STEP_EXIT);
}

static void test_tick(void **state)
{
        struct flow_tick t = { .every_ms = 10 };
        (void)state;

        assert_true(flow_tick_due(&t, 1000)); /* due at the first check */
        assert_false(flow_tick_due(&t, 1009));
        assert_int_equal(flow_tick_wait(&t, 1004, 100), 6);
        assert_int_equal(flow_tick_wait(&t, 1004, 3), 3);
        assert_true(flow_tick_due(&t, 1010));
        assert_int_equal(flow_tick_wait(&t, 1030, 100), 0);
}

static void test_stats(void **state)
{
        struct flow_tick t = { .every_ms = 10 };
        uint64_t cur[2] = { 0, 0 }, last[2] = { 0, 0 };
        (void)state;

        /* due, but nothing changed */
        assert_false(flow_stats_due(&t, 100, false, cur, last, sizeof(cur)));
        cur[1] = 5;
        /* changed but not due */
        assert_false(flow_stats_due(&t, 105, false, cur, last, sizeof(cur)));
        assert_true(flow_stats_due(&t, 110, false, cur, last, sizeof(cur)));
        assert_int_equal(last[1], 5);
        /* force reports even unchanged */
        assert_true(flow_stats_due(&t, 111, true, cur, last, sizeof(cur)));
        assert_false(flow_stats_due(&t, 121, false, cur, last, sizeof(cur)));
}

struct thing {
        int v;
        struct flow_link link;
};

static void test_list(void **state)
{
        struct flow_list l = { 0 };
        struct thing a = { 1, { 0 } }, b = { 2, { 0 } }, c = { 3, { 0 } };
        int sum = 0;
        (void)state;

        flow_list_add(&l, &a.link);
        flow_list_add(&l, &b.link);
        flow_list_add(&l, &c.link);
        assert_int_equal(l.n, 3);
        flow_list_remove(&l, &b.link); /* middle */
        flow_list_remove(&l, &c.link); /* head */
        for (struct flow_link *k = l.head; k; k = k->next)
                sum += FLOW_ENTRY(k, struct thing, link)->v;
        assert_int_equal(sum, 1);
        assert_int_equal(l.n, 1);
        flow_list_remove(&l, &a.link);
        assert_null(l.head);
        assert_int_equal(l.n, 0);
}

static void test_queue(void **state)
{
        struct flow_queue q = { 0 };
        struct flow_qnode x[3];
        (void)state;

        assert_false(flow_queue_ready(&q, 1, 0, 0, true, true));
        assert_null(flow_queue_pop(&q));
        flow_queue_push(&q, &x[0], 1000);
        flow_queue_push(&q, &x[1], 1500);
        /* neither full nor old, others running */
        assert_false(flow_queue_ready(&q, 3, 2000, 2999, false, false));
        assert_true(flow_queue_ready(&q, 3, 2000, 3000, false, false));
        assert_true(flow_queue_ready(&q, 3, 2000, 1500, true, false));
        assert_true(flow_queue_ready(&q, 3, 2000, 1500, false, true));
        flow_queue_push(&q, &x[2], 1600);
        assert_true(flow_queue_ready(&q, 3, 2000, 1600, false, false));
        assert_ptr_equal(flow_queue_pop(&q), &x[0]);
        assert_ptr_equal(flow_queue_pop(&q), &x[1]);
        assert_int_equal(q.n, 1);
        assert_ptr_equal(flow_queue_pop(&q), &x[2]);
        assert_null(q.head);
        assert_null(q.tail);
        /* the tail is reset: a push after emptying is the head again */
        flow_queue_push(&q, &x[1], 5000);
        assert_ptr_equal(q.head, &x[1]);
        assert_int_equal(x[1].since_us, 5000);
}

static void test_renew(void **state)
{
        struct flow_renew r;
        (void)state;

        flow_renew_init(&r, 60000); /* every 20 s, look each second */
        assert_int_equal(r.every_ms, 20000);
        assert_int_equal(r.check_ms, 1000);
        assert_true(flow_renew_round(&r, 50000));
        assert_false(flow_renew_round(&r, 50999));
        assert_true(flow_renew_round(&r, 51000));
        assert_false(flow_renew_due(&r, 40000, 59999));
        assert_true(flow_renew_due(&r, 40000, 60000));

        flow_renew_init(&r, 3000); /* short leases: half the period */
        assert_int_equal(r.every_ms, 1000);
        assert_int_equal(r.check_ms, 500);
}

int main(void)
{
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_drain), cmocka_unit_test(test_tick),
                cmocka_unit_test(test_stats), cmocka_unit_test(test_list),
                cmocka_unit_test(test_queue), cmocka_unit_test(test_renew),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
