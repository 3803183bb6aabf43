/* SPDX-License-Identifier: Apache-2.0 */
/*
 * test_status: payment_status_may_move, the state machine as one table
 * (every pair of statuses, and values outside the enum), and the pure
 * rules that decide a move never proposing one the table refuses: every
 * finish of payment_webhook_rule, over every status, refund flag, event
 * type and charge id, and the moves a settle and an operator's
 * resolution make.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "payment/status.h"
#include "payment/webhook_rule.h"

#define PR PAYMENT_STATUS_PROCESSING
#define SU PAYMENT_STATUS_SUCCEEDED
#define FA PAYMENT_STATUS_FAILED
#define RV PAYMENT_STATUS_REVIEW
#define CF PAYMENT_STATUS_CONFLICT
#define RJ PAYMENT_STATUS_REJECTED

/* The moves of docs/architecture.md, written out once more by hand. */
static bool want_move(enum payment_status from, enum payment_status to)
{
        if (from == PR)
                return to == SU || to == FA || to == RV;
        if (from == RV)
                return to == SU || to == FA;
        return false;
}

static void test_table(void **state)
{
        int allowed = 0;

        (void)state;
        for (int f = 0; f < PAYMENT_STATUS_COUNT; f++)
                for (int t = 0; t < PAYMENT_STATUS_COUNT; t++) {
                        bool got = payment_status_may_move(
                            (enum payment_status)f, (enum payment_status)t);

                        assert_int_equal(got,
                                         want_move((enum payment_status)f,
                                                   (enum payment_status)t));
                        allowed += got;
                }
        assert_int_equal(allowed, 5);
        /* never backwards, never to itself, finals never move */
        assert_false(payment_status_may_move(SU, PR));
        assert_false(payment_status_may_move(RV, PR));
        assert_false(payment_status_may_move(SU, FA));
        assert_false(payment_status_may_move(FA, SU));
        assert_false(payment_status_may_move(SU, RV));
        assert_false(payment_status_may_move(PR, PR));
        assert_false(payment_status_may_move(RV, RV));
        /* conflict and rejected are no payment's state */
        assert_false(payment_status_may_move(PR, CF));
        assert_false(payment_status_may_move(PR, RJ));
        assert_false(payment_status_may_move(CF, SU));
}

static void test_outside_the_enum(void **state)
{
        (void)state;
        assert_false(payment_status_may_move((enum payment_status) - 1, SU));
        assert_false(payment_status_may_move(PR, (enum payment_status) - 1));
        assert_false(payment_status_may_move(
            PR, (enum payment_status)PAYMENT_STATUS_COUNT));
        assert_false(payment_status_may_move(
            (enum payment_status)PAYMENT_STATUS_COUNT, SU));
        assert_false(payment_status_may_move((enum payment_status)1000, FA));
}

/* The status a webhook action moves the payment to, or -1 for none. */
static int webhook_target(enum payment_webhook_action a)
{
        switch (a) {
        case PAYMENT_WEBHOOK_FINISH_SUCCEEDED:
        case PAYMENT_WEBHOOK_FINISH_AND_REFUND:
                return SU;
        case PAYMENT_WEBHOOK_FINISH_FAILED:
                return FA;
        case PAYMENT_WEBHOOK_REFUND:
        case PAYMENT_WEBHOOK_IGNORE:
        case PAYMENT_WEBHOOK_CONTRADICTION:
                return -1;
        }
        return -2;
}

static void test_webhook_rule_moves(void **state)
{
        static const enum payment_status st[] = { PR, SU, FA, RV };
        static const int types[]              = {
                             GATEWAY_EVENT_CHARGE_SUCCEEDED,
                             GATEWAY_EVENT_CHARGE_FAILED,
                             GATEWAY_EVENT_CHARGE_REFUNDED,
        };
        int finishes = 0;

        (void)state;
        for (size_t s = 0; s < sizeof(st) / sizeof(*st); s++)
                for (int refunded = 0; refunded < 2; refunded++)
                        for (int stored = 0; stored < 2; stored++)
                                for (size_t t = 0;
                                     t < sizeof(types) / sizeof(*types); t++) {
                                        struct payment_webhook_state p;
                                        struct gateway_event ev;
                                        enum payment_webhook_action a;
                                        int to;

                                        memset(&ev, 0, sizeof(ev));
                                        ev.type =
                                            (enum gateway_event_type)types[t];
                                        strcpy(ev.charge_id, "ch_1");
                                        ev.amount = 100;
                                        strcpy(ev.currency, "VND");
                                        memset(&p, 0, sizeof(p));
                                        p.status   = st[s];
                                        p.amount   = 100;
                                        p.currency = "VND";
                                        p.provider_charge_id =
                                            stored ? "ch_1" : NULL;
                                        p.refunded = refunded;
                                        a = payment_webhook_rule(&p, &ev, NULL);
                                        to = webhook_target(a);
                                        assert_true(to >= -1);
                                        if (to < 0)
                                                continue;
                                        finishes++;
                                        assert_true(payment_status_may_move(
                                            st[s], (enum payment_status)to));
                                }
        /* processing and review, each with three event types, both
         * charge id cases, not refunded */
        assert_int_equal(finishes, 12);
}

static void test_settle_and_resolution_moves(void **state)
{
        (void)state;
        /* store_settle_batch: processing to the gateway's outcome, or
         * review (defect, unknown past the bounds) */
        assert_true(payment_status_may_move(PR, SU));
        assert_true(payment_status_may_move(PR, FA));
        assert_true(payment_status_may_move(PR, RV));
        /* store_review_resolve: review to the operator's decision */
        assert_true(payment_status_may_move(RV, SU));
        assert_true(payment_status_may_move(RV, FA));
}

int main(void)
{
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_table),
                cmocka_unit_test(test_outside_the_enum),
                cmocka_unit_test(test_webhook_rule_moves),
                cmocka_unit_test(test_settle_and_resolution_moves),
        };

        return cmocka_run_group_tests(tests, NULL, NULL);
}
