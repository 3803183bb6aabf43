/* SPDX-License-Identifier: Apache-2.0 */
/*
 * test_review_rule: the whole table of payment/review_rule: each decision
 * (--as succeeded | failed) against each answer of the gateway, with and
 * without --provider-charge-id, before and past gateway.key_retention,
 * with and without --without-gateway.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "payment/review_rule.h"

enum {
        SUCC = PAYMENT_REVIEW_LISTS_SUCCEEDED,
        FAIL = PAYMENT_REVIEW_LISTS_FAILED,
        NONE = PAYMENT_REVIEW_LISTS_NONE,
        NOAN = PAYMENT_REVIEW_NO_ANSWER,
};

struct row {
        bool as_succeeded;
        int answer;
        const char *gw_id;
        const char *flag_id;
        bool past;
        bool without;
        bool allowed;
        const char *charge_id; /* the id stored, or NULL */
        const char *reason_has;
};

static const struct row table[] = {
        /* --as succeeded */
        { true, SUCC, "ch_1", NULL, false, false, true, "ch_1", "lists a" },
        { true, SUCC, "ch_1", "ch_1", false, false, true, "ch_1", "lists a" },
        { true, SUCC, "ch_1", "ch_2", false, false, false, NULL, "differs" },
        { true, SUCC, "ch_1", "ch_2", true, true, false, NULL, "differs" },
        { true, SUCC, "", NULL, false, false, false, NULL, "without an id" },
        { true, SUCC, NULL, "ch_1", false, false, false, NULL, "without an" },
        { true, FAIL, NULL, NULL, false, false, false, NULL, "only failed" },
        { true, FAIL, NULL, "ch_1", true, true, false, NULL, "only failed" },
        { true, NONE, NULL, NULL, false, false, false, NULL, "still keeps" },
        { true, NONE, NULL, "ch_1", false, false, false, NULL, "still keeps" },
        { true, NONE, NULL, "ch_1", false, true, false, NULL, "still keeps" },
        { true, NONE, NULL, NULL, true, false, false, NULL,
          "--provider-charge-id" },
        { true, NONE, NULL, "", true, false, false, NULL,
          "--provider-charge-id" },
        { true, NONE, NULL, "ch_9", true, false, true, "ch_9", "operator" },
        { true, NOAN, NULL, "ch_9", false, false, false, NULL,
          "--without-gateway" },
        { true, NOAN, NULL, NULL, false, true, false, NULL,
          "needs --provider-charge-id" },
        { true, NOAN, NULL, "ch_9", true, true, true, "ch_9", "without" },
        /* --as failed */
        { false, SUCC, "ch_1", NULL, false, false, false, NULL, "charged" },
        { false, SUCC, "ch_1", NULL, true, true, false, NULL, "charged" },
        { false, FAIL, NULL, NULL, false, false, true, NULL, "only failed" },
        { false, NONE, NULL, NULL, false, false, true, NULL, "no charge" },
        { false, NONE, NULL, NULL, true, false, true, NULL, "key_retention" },
        { false, NOAN, NULL, NULL, false, false, false, NULL,
          "--without-gateway" },
        { false, NOAN, NULL, NULL, false, true, true, NULL, "without" },
};

static void full_table(void **state)
{
        (void)state;
        for (size_t i = 0; i < sizeof(table) / sizeof(table[0]); i++) {
                const struct row *r         = &table[i];
                struct payment_review_ask a = {
                        .as_succeeded = r->as_succeeded,
                        .answer       = (enum payment_review_answer)r->answer,
                        .gateway_charge_id  = r->gw_id,
                        .flag_charge_id     = r->flag_id,
                        .past_key_retention = r->past,
                        .without_gateway    = r->without,
                };
                struct payment_review_verdict v;

                payment_review_decide(&a, &v);
                if (v.allowed != r->allowed ||
                    (r->charge_id == NULL) != (v.charge_id == NULL) ||
                    (r->charge_id && strcmp(r->charge_id, v.charge_id)) ||
                    !v.reason || !strstr(v.reason, r->reason_has))
                        fail_msg("row %zu: allowed %d charge %s reason %s", i,
                                 v.allowed, v.charge_id ? v.charge_id : "-",
                                 v.reason ? v.reason : "-");
        }
}

/* Never a failed decision against a listed success, whatever else. */
static void never_failed_against_success(void **state)
{
        (void)state;
        for (int bits = 0; bits < 8; bits++) {
                struct payment_review_ask a = {
                        .as_succeeded       = false,
                        .answer             = PAYMENT_REVIEW_LISTS_SUCCEEDED,
                        .gateway_charge_id  = "ch_1",
                        .flag_charge_id     = (bits & 1) ? "ch_1" : NULL,
                        .past_key_retention = (bits & 2) != 0,
                        .without_gateway    = (bits & 4) != 0,
                };
                struct payment_review_verdict v;

                payment_review_decide(&a, &v);
                assert_false(v.allowed);
                assert_null(v.charge_id);
        }
}

/* An unknown answer value is no evidence. */
static void odd_answer(void **state)
{
        struct payment_review_ask a = { .as_succeeded = true,
                                        .answer = (enum payment_review_answer)0,
                                        .flag_charge_id = "ch_1" };
        struct payment_review_verdict v;

        (void)state;
        payment_review_decide(&a, &v);
        assert_false(v.allowed);
        a.without_gateway = true;
        payment_review_decide(&a, &v);
        assert_true(v.allowed);
        assert_string_equal(v.charge_id, "ch_1");
}

int main(void)
{
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(full_table),
                cmocka_unit_test(never_failed_against_success),
                cmocka_unit_test(odd_answer),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
