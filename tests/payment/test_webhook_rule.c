/* SPDX-License-Identifier: Apache-2.0 */
/*
 * test_webhook_rule: the full table of payment/webhook_rule, every status
 * (with and without a refund posted) against every event type, and every
 * fact that must agree (amount, currency, charge id) checked first.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "payment/webhook_rule.h"

enum {
        SUCC = GATEWAY_EVENT_CHARGE_SUCCEEDED,
        FAIL = GATEWAY_EVENT_CHARGE_FAILED,
        REFD = GATEWAY_EVENT_CHARGE_REFUNDED
};

static struct gateway_event event(int type)
{
        struct gateway_event ev;

        memset(&ev, 0, sizeof(ev));
        ev.type = (enum gateway_event_type)type;
        strcpy(ev.charge_id, "ch_1");
        strcpy(ev.reference, "5d6e7f80-9a1b-4c2d-8e3f-405162738495");
        ev.amount = 1250000;
        strcpy(ev.currency, "VND");
        return ev;
}

struct row {
        enum payment_status status;
        bool has_charge_id;
        bool refunded;
        int type;
        enum payment_webhook_action want;
        const char *reason; /* NULL: none */
};

#define FS PAYMENT_WEBHOOK_FINISH_SUCCEEDED
#define FF PAYMENT_WEBHOOK_FINISH_FAILED
#define RF PAYMENT_WEBHOOK_REFUND
#define FR PAYMENT_WEBHOOK_FINISH_AND_REFUND
#define IG PAYMENT_WEBHOOK_IGNORE
#define CO PAYMENT_WEBHOOK_CONTRADICTION
#define PR PAYMENT_STATUS_PROCESSING
#define SU PAYMENT_STATUS_SUCCEEDED
#define FA PAYMENT_STATUS_FAILED
#define RV PAYMENT_STATUS_REVIEW

static const struct row table[] = {
        /* unknown outcome: the webhook finishes it */
        { PR, false, false, SUCC, FS, NULL },
        { PR, false, false, FAIL, FF, NULL },
        { PR, false, false, REFD, FR, NULL },
        { RV, false, false, SUCC, FS, NULL },
        { RV, false, false, FAIL, FF, NULL },
        { RV, false, false, REFD, FR, NULL },
        /* a known matching charge id changes nothing */
        { PR, true, false, SUCC, FS, NULL },
        { RV, true, false, FAIL, FF, NULL },
        { RV, true, false, REFD, FR, NULL },
        /* final, same outcome: nothing */
        { SU, true, false, SUCC, IG, "already succeeded" },
        { SU, true, true, SUCC, IG, "already succeeded (refunded since)" },
        { FA, false, false, FAIL, IG, "already failed" },
        { FA, true, false, FAIL, IG, "already failed" },
        /* refunds */
        { SU, true, false, REFD, RF, NULL },
        { SU, true, true, REFD, IG, "refund already posted" },
        /* never backwards */
        { SU, true, false, FAIL, CO,
          "status succeeded, webhook charge.failed" },
        { SU, true, true, FAIL, CO, "status succeeded, webhook charge.failed" },
        { FA, false, false, SUCC, CO,
          "status failed, webhook charge.succeeded" },
        { FA, false, false, REFD, CO, "refund of a failed payment" },
        { FA, true, false, REFD, CO, "refund of a failed payment" },
        /* a refund stored on a payment that is not succeeded is a defect */
        { PR, false, true, SUCC, CO,
          "refund recorded on a payment not succeeded" },
        { FA, false, true, FAIL, CO,
          "refund recorded on a payment not succeeded" },
};

static void full_table(void **state)
{
        (void)state;
        for (size_t i = 0; i < sizeof(table) / sizeof(table[0]); i++) {
                const struct row *r            = &table[i];
                struct gateway_event ev        = event(r->type);
                struct payment_webhook_state p = {
                        .status             = r->status,
                        .amount             = 1250000,
                        .currency           = "VND",
                        .provider_charge_id = r->has_charge_id ? "ch_1" : NULL,
                        .refunded           = r->refunded,
                };
                const char *why = "unset";
                enum payment_webhook_action a =
                    payment_webhook_rule(&p, &ev, &why);

                if (a != r->want)
                        fail_msg("row %zu: %s, want %s", i,
                                 payment_webhook_action_name(a),
                                 payment_webhook_action_name(r->want));
                if (r->reason == NULL)
                        assert_null(why);
                else if (why == NULL || strcmp(why, r->reason) != 0)
                        fail_msg("row %zu: reason %s, want %s", i,
                                 why ? why : "(null)", r->reason);
                /* reason may be NULL */
                assert_int_equal(payment_webhook_rule(&p, &ev, NULL), a);
        }
}

/* Amount, currency and charge id disagree: a contradiction in every
 * status and for every type, even where the status alone would apply. */
static void facts_first(void **state)
{
        static const enum payment_status st[] = { PR, SU, FA, RV };

        (void)state;
        for (size_t s = 0; s < 4; s++) {
                for (int t = SUCC; t <= REFD; t++) {
                        struct gateway_event ev        = event(t);
                        struct payment_webhook_state p = {
                                .status             = st[s],
                                .amount             = 1250001,
                                .currency           = "VND",
                                .provider_charge_id = "ch_1",
                        };
                        const char *why = NULL;

                        assert_int_equal(payment_webhook_rule(&p, &ev, &why),
                                         CO);
                        assert_string_equal(why, "amount differs");
                        p.amount   = 1250000;
                        p.currency = "USD";
                        assert_int_equal(payment_webhook_rule(&p, &ev, &why),
                                         CO);
                        assert_string_equal(why, "currency differs");
                        p.currency           = "VND";
                        p.provider_charge_id = "ch_2";
                        assert_int_equal(payment_webhook_rule(&p, &ev, &why),
                                         CO);
                        assert_string_equal(why, "charge id differs");
                        /* a prefix is not the same id */
                        p.provider_charge_id = "ch_";
                        assert_int_equal(payment_webhook_rule(&p, &ev, &why),
                                         CO);
                        /* all facts agree: only the status decides */
                        p.provider_charge_id = "ch_1";
                        why                  = NULL;
                        (void)payment_webhook_rule(&p, &ev, &why);
                        assert_true(why == NULL ||
                                    strstr(why, "differs") == NULL);
                }
        }
}

static void odd_input(void **state)
{
        struct gateway_event ev        = event(SUCC);
        struct payment_webhook_state p = {
                .status   = PAYMENT_STATUS_CONFLICT,
                .amount   = 1250000,
                .currency = "VND",
        };
        const char *why = NULL;

        (void)state;
        assert_int_equal(payment_webhook_rule(&p, &ev, &why), CO);
        assert_string_equal(why, "payment status unknown");
        p.status   = PR;
        p.currency = NULL;
        assert_int_equal(payment_webhook_rule(&p, &ev, &why), CO);
        p.currency = "VND";
        ev.type    = (enum gateway_event_type)99;
        assert_int_equal(payment_webhook_rule(&p, &ev, &why), CO);
        assert_string_equal(why, "unknown event type");
        assert_string_equal(payment_webhook_action_name(FR),
                            "finish_and_refund");
}

int main(void)
{
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(full_table),
                cmocka_unit_test(facts_first),
                cmocka_unit_test(odd_input),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
