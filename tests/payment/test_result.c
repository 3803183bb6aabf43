/* SPDX-License-Identifier: Apache-2.0 */
/*
 * test_payment_result: the exact bytes of results, the refusals of results
 * that break the contract, the message key, and the status names.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "payment/result.h"
#include "payment/status.h"

#define RESULT_ID  "0b1c2d3e-4f50-4612-8a7b-9c0d1e2f3a4b"
#define INTENT_ID  "6f1c2a8e-3b4d-4e5f-9a0b-1c2d3e4f5a6b"
#define PAYMENT_ID "5d6e7f80-9a1b-4c2d-8e3f-405162738495"
#define WHEN       "2026-11-29T10:47:04.001Z"

static struct payment_result succeeded(void)
{
        struct payment_result r = {
                .event_id           = RESULT_ID,
                .intent_event_id    = INTENT_ID,
                .tenant_id          = "shop-1",
                .idempotency_key    = "ord-10063-pay-1",
                .order_id           = "10063",
                .payment_id         = PAYMENT_ID,
                .status             = PAYMENT_STATUS_SUCCEEDED,
                .has_amount         = true,
                .amount             = 1250000,
                .currency           = "VND",
                .provider_charge_id = "ch_1",
                .occurred_at        = WHEN,
        };
        return r;
}

static void builds(const struct payment_result *r, const char *want)
{
        char errstr[128] = "", *out = NULL;
        size_t len = 0;

        assert_int_equal(
            payment_result_build(r, &out, &len, errstr, sizeof(errstr)), 0);
        assert_string_equal(out, want);
        assert_int_equal(len, strlen(want));
        free(out);
}

static void refuses(const struct payment_result *r)
{
        char errstr[128] = "", *out = (char *)"x";
        size_t len = 9;

        assert_int_equal(
            payment_result_build(r, &out, &len, errstr, sizeof(errstr)), -1);
        assert_null(out);
        assert_int_equal(len, 0);
        assert_true(strncmp(errstr, "result: ", 8) == 0);
}

static void test_succeeded_bytes(void **state)
{
        struct payment_result r = succeeded();

        (void)state;
        builds(&r, "{\"schema_version\":1,\"event_id\":\"" RESULT_ID
                   "\",\"intent_event_id\":\"" INTENT_ID
                   "\",\"tenant_id\":\"shop-1\",\"idempotency_key\":"
                   "\"ord-10063-pay-1\",\"order_id\":\"10063\","
                   "\"payment_id\":\"" PAYMENT_ID
                   "\",\"status\":\"succeeded\",\"amount\":1250000,"
                   "\"currency\":\"VND\",\"provider_charge_id\":\"ch_1\","
                   "\"error\":null,\"replayed\":false,\"occurred_at\":\"" WHEN
                   "\"}");
        /* resolving a review: one more member, after occurred_at */
        r.resolves_review = true;
        builds(&r, "{\"schema_version\":1,\"event_id\":\"" RESULT_ID
                   "\",\"intent_event_id\":\"" INTENT_ID
                   "\",\"tenant_id\":\"shop-1\",\"idempotency_key\":"
                   "\"ord-10063-pay-1\",\"order_id\":\"10063\","
                   "\"payment_id\":\"" PAYMENT_ID
                   "\",\"status\":\"succeeded\",\"amount\":1250000,"
                   "\"currency\":\"VND\",\"provider_charge_id\":\"ch_1\","
                   "\"error\":null,\"replayed\":false,\"occurred_at\":\"" WHEN
                   "\",\"resolves_review\":true}");
        r.resolves_review = false;
        r.replayed        = true;
        builds(&r, "{\"schema_version\":1,\"event_id\":\"" RESULT_ID
                   "\",\"intent_event_id\":\"" INTENT_ID
                   "\",\"tenant_id\":\"shop-1\",\"idempotency_key\":"
                   "\"ord-10063-pay-1\",\"order_id\":\"10063\","
                   "\"payment_id\":\"" PAYMENT_ID
                   "\",\"status\":\"succeeded\",\"amount\":1250000,"
                   "\"currency\":\"VND\",\"provider_charge_id\":\"ch_1\","
                   "\"error\":null,\"replayed\":true,\"occurred_at\":\"" WHEN
                   "\"}");
}

static void test_failed_conflict_review_bytes(void **state)
{
        struct payment_result r = succeeded();

        (void)state;
        r.status        = PAYMENT_STATUS_FAILED;
        r.error_code    = "card_declined";
        r.error_message = "The card was declined.";
        builds(&r, "{\"schema_version\":1,\"event_id\":\"" RESULT_ID
                   "\",\"intent_event_id\":\"" INTENT_ID
                   "\",\"tenant_id\":\"shop-1\",\"idempotency_key\":"
                   "\"ord-10063-pay-1\",\"order_id\":\"10063\","
                   "\"payment_id\":\"" PAYMENT_ID
                   "\",\"status\":\"failed\",\"amount\":1250000,"
                   "\"currency\":\"VND\",\"provider_charge_id\":\"ch_1\","
                   "\"error\":{\"code\":\"card_declined\",\"message\":"
                   "\"The card was declined.\"},\"replayed\":false,"
                   "\"occurred_at\":\"" WHEN "\"}");
        r                    = succeeded();
        r.status             = PAYMENT_STATUS_CONFLICT;
        r.payment_id         = NULL;
        r.provider_charge_id = NULL;
        r.error_code         = "idempotency_key_reused";
        r.error_message      = "the key was used for another request";
        builds(&r, "{\"schema_version\":1,\"event_id\":\"" RESULT_ID
                   "\",\"intent_event_id\":\"" INTENT_ID
                   "\",\"tenant_id\":\"shop-1\",\"idempotency_key\":"
                   "\"ord-10063-pay-1\",\"order_id\":\"10063\","
                   "\"payment_id\":null,\"status\":\"conflict\","
                   "\"amount\":1250000,\"currency\":\"VND\","
                   "\"provider_charge_id\":null,\"error\":{\"code\":"
                   "\"idempotency_key_reused\",\"message\":\"the key was used "
                   "for another request\"},\"replayed\":false,"
                   "\"occurred_at\":\"" WHEN "\"}");
        r                    = succeeded();
        r.status             = PAYMENT_STATUS_REVIEW;
        r.provider_charge_id = NULL;
        builds(&r, "{\"schema_version\":1,\"event_id\":\"" RESULT_ID
                   "\",\"intent_event_id\":\"" INTENT_ID
                   "\",\"tenant_id\":\"shop-1\",\"idempotency_key\":"
                   "\"ord-10063-pay-1\",\"order_id\":\"10063\","
                   "\"payment_id\":\"" PAYMENT_ID
                   "\",\"status\":\"review\",\"amount\":1250000,"
                   "\"currency\":\"VND\",\"provider_charge_id\":null,"
                   "\"error\":null,\"replayed\":false,\"occurred_at\":\"" WHEN
                   "\"}");
}

static void test_rejected_with_nulls_and_escapes(void **state)
{
        struct payment_result r = {
                .event_id        = RESULT_ID,
                .intent_event_id = "************1111",
                .tenant_id       = "shop-1",
                .idempotency_key = "k \"q\" \\ / \xc4\x91\t",
                .status          = PAYMENT_STATUS_REJECTED,
                .error_code      = "invalid_amount",
                .error_message   = "amount must be an integer",
                .occurred_at     = WHEN,
        };
        (void)state;
        builds(&r,
               "{\"schema_version\":1,\"event_id\":\"" RESULT_ID
               "\",\"intent_event_id\":\"************1111\","
               "\"tenant_id\":\"shop-1\",\"idempotency_key\":"
               "\"k \\\"q\\\" \\\\ / \xc4\x91\\t\",\"order_id\":null,"
               "\"payment_id\":null,\"status\":\"rejected\","
               "\"amount\":null,\"currency\":null,"
               "\"provider_charge_id\":null,\"error\":{\"code\":"
               "\"invalid_amount\",\"message\":\"amount must be an "
               "integer\"},\"replayed\":false,\"occurred_at\":\"" WHEN "\"}");
}

static void test_refusals(void **state)
{
        struct payment_result r;

        (void)state;
        r        = succeeded();
        r.status = PAYMENT_STATUS_PROCESSING;
        refuses(&r);
        /* resolves_review: never on a replayed or a review result */
        r                 = succeeded();
        r.resolves_review = true;
        r.replayed        = true;
        refuses(&r);
        r                 = succeeded();
        r.resolves_review = true;
        r.status          = PAYMENT_STATUS_REVIEW;
        refuses(&r);
        r        = succeeded();
        r.status = (enum payment_status)42;
        refuses(&r);
        r          = succeeded();
        r.event_id = "not-a-uuid";
        refuses(&r);
        r            = succeeded();
        r.payment_id = "pay_1";
        refuses(&r);
        r             = succeeded();
        r.occurred_at = "yesterday";
        refuses(&r);
        r             = succeeded();
        r.occurred_at = NULL;
        refuses(&r);
        r            = succeeded();
        r.error_code = "x"; /* no message; and succeeded has no error */
        refuses(&r);
        r               = succeeded();
        r.error_code    = "x";
        r.error_message = "y";
        refuses(&r);
        r        = succeeded();
        r.status = PAYMENT_STATUS_FAILED; /* needs an error */
        refuses(&r);
        r               = succeeded();
        r.status        = PAYMENT_STATUS_CONFLICT;
        r.error_code    = "other";
        r.error_message = "m";
        refuses(&r);
        r          = succeeded();
        r.order_id = NULL; /* only rejected may lack it */
        refuses(&r);
        r            = succeeded();
        r.has_amount = false;
        refuses(&r);
        r           = succeeded();
        r.tenant_id = NULL;
        refuses(&r);
        r                 = succeeded();
        r.intent_event_id = NULL;
        refuses(&r);
        r                 = succeeded();
        r.idempotency_key = "bad \xff utf8";
        refuses(&r);
        r               = succeeded();
        r.status        = PAYMENT_STATUS_FAILED;
        r.error_code    = "card_declined";
        r.error_message = "\xc3";
        refuses(&r);
}

static void test_key(void **state)
{
        char *key = NULL;
        size_t len;

        (void)state;
        assert_int_equal(payment_result_key("shop-1", "ord-1/a", &key, &len),
                         0);
        assert_string_equal(key, "shop-1/ord-1/a");
        assert_int_equal(len, 14);
        free(key);
        assert_int_equal(payment_result_key(NULL, "k", &key, &len), -1);
        assert_null(key);
}

static void test_status_names(void **state)
{
        static const char *const names[] = { "processing", "succeeded",
                                             "failed",     "review",
                                             "conflict",   "rejected" };
        enum payment_status s;

        (void)state;
        for (unsigned i = 0; i < PAYMENT_STATUS_COUNT; i++) {
                assert_string_equal(payment_status_name((enum payment_status)i),
                                    names[i]);
                assert_true(payment_status_parse(names[i], &s));
                assert_int_equal(s, i);
        }
        assert_null(
            payment_status_name((enum payment_status)PAYMENT_STATUS_COUNT));
        assert_false(payment_status_parse("Succeeded", &s));
        assert_false(payment_status_parse("unknown", &s));
        assert_false(payment_status_parse("", &s));
        assert_false(payment_status_parse(NULL, &s));
        assert_true(payment_status_is_payment_state(PAYMENT_STATUS_PROCESSING));
        assert_true(payment_status_is_payment_state(PAYMENT_STATUS_REVIEW));
        assert_false(payment_status_is_payment_state(PAYMENT_STATUS_CONFLICT));
        assert_false(payment_status_is_payment_state(PAYMENT_STATUS_REJECTED));
        assert_false(payment_status_is_result(PAYMENT_STATUS_PROCESSING));
        assert_true(payment_status_is_result(PAYMENT_STATUS_SUCCEEDED));
        assert_true(payment_status_is_result(PAYMENT_STATUS_REJECTED));
        assert_false(payment_status_is_result((enum payment_status)42));
}

/* The row an outbox insert makes for r (intent_event_id as the row's). */
static struct payment_result_row row_of(const struct payment_result *r,
                                        const char *row_intent)
{
        struct payment_result_row row = {
                .event_id        = r->event_id,
                .intent_event_id = row_intent,
                .tenant_id       = r->tenant_id,
                .idempotency_key = r->idempotency_key,
                .payment_id      = r->payment_id,
                .status          = payment_status_name(r->status),
                .replayed        = r->replayed,
                .resolves_review = r->resolves_review,
        };
        return row;
}

/* detail then compose gives exactly the bytes of the build. */
static void round_trips(const struct payment_result *r, const char *row_intent)
{
        char errstr[160] = "", *full = NULL, *detail = NULL, *back = NULL;
        size_t flen = 0, dlen = 0, blen = 0;
        struct payment_result_row row = row_of(r, row_intent);

        assert_int_equal(
            payment_result_build(r, &full, &flen, errstr, sizeof(errstr)), 0);
        assert_int_equal(payment_result_detail(r, row_intent, &detail, &dlen,
                                               errstr, sizeof(errstr)),
                         0);
        assert_true(dlen < flen);
        assert_int_equal(payment_result_compose(&row, detail, dlen, &back,
                                                &blen, errstr, sizeof(errstr)),
                         0);
        assert_string_equal(back, full);
        assert_int_equal(blen, flen);
        free(full);
        free(detail);
        free(back);
}

static void test_detail_round_trip(void **state)
{
        struct payment_result r = succeeded();

        (void)state;
        round_trips(&r, INTENT_ID);
        r.resolves_review = true;
        round_trips(&r, INTENT_ID);
        r                    = succeeded();
        r.status             = PAYMENT_STATUS_FAILED;
        r.provider_charge_id = NULL;
        r.error_code         = "card_declined";
        r.error_message      = "the card was \"declined\"\n\t\\ \xc3\xa9\x01";
        round_trips(&r, INTENT_ID);
        r.status = PAYMENT_STATUS_REVIEW;
        round_trips(&r, INTENT_ID);
        r.replayed = true;
        round_trips(&r, INTENT_ID);
        /* an event id that is no UUID: the row holds its sha256: key */
        r                 = succeeded();
        r.intent_event_id = "evt \xe2\x80\xa8 \"7\"";
        round_trips(&r, "sha256:0123456789abcdef0123456789abcdef0123456789abcd"
                        "ef0123456789abcdef");
        r.idempotency_key = "k\x7f/\xf0\x9f\x92\xb3";
        r.order_id        = "";
        r.amount          = 9007199254740991;
        round_trips(&r, "sha256:00");
}

/* The detail's exact bytes: a fixed vector. */
static void test_detail_bytes(void **state)
{
        struct payment_result r = succeeded();
        char errstr[128] = "", *d = NULL;
        size_t len = 0;

        (void)state;
        assert_int_equal(
            payment_result_detail(&r, INTENT_ID, &d, &len, errstr, 128), 0);
        assert_string_equal(d, "{\"order_id\":\"10063\",\"amount\":1250000,"
                               "\"currency\":\"VND\",\"provider_charge_id\":"
                               "\"ch_1\",\"error\":null,\"occurred_at\":\"" WHEN
                               "\"}");
        free(d);
        assert_int_equal(
            payment_result_detail(&r, "sha256:ab", &d, &len, errstr, 128), 0);
        assert_true(strncmp(d, "{\"intent_event_id\":\"" INTENT_ID "\",", 57) ==
                    0);
        free(d);
        /* the contract is checked before anything is built */
        r.occurred_at = "yesterday";
        assert_int_equal(
            payment_result_detail(&r, INTENT_ID, &d, &len, errstr, 128), -1);
        assert_null(d);
        r = succeeded();
        assert_int_equal(payment_result_detail(&r, NULL, &d, &len, errstr, 128),
                         -1);
}

/* A detail compose must refuse, with a reason and nothing built. */
static void refuses_detail(const struct payment_result_row *row,
                           const char *detail, size_t len)
{
        char errstr[160] = "", *out = (char *)"x";
        size_t olen = 5;

        assert_int_equal(payment_result_compose(row, detail, len, &out, &olen,
                                                errstr, sizeof(errstr)),
                         -1);
        assert_null(out);
        assert_int_equal(olen, 0);
        assert_true(strncmp(errstr, "result: ", 8) == 0);
}

static void test_detail_hostile(void **state)
{
        static const char *const bad[] = {
                "",
                "null",
                "[]",
                "\"x\"",
                "{",
                "{}",
                "{\"order_id\":\"1\"}",
                /* every member but one, in turn */
                "{\"amount\":1,\"currency\":\"VND\",\"provider_charge_id\":"
                "\"c\",\"error\":null,\"occurred_at\":\"" WHEN "\"}",
                "{\"order_id\":\"1\",\"currency\":\"VND\",\"provider_charge_"
                "id\":\"c\",\"error\":null,\"occurred_at\":\"" WHEN "\"}",
                "{\"order_id\":\"1\",\"amount\":1,\"provider_charge_id\":"
                "\"c\",\"error\":null,\"occurred_at\":\"" WHEN "\"}",
                "{\"order_id\":\"1\",\"amount\":1,\"currency\":\"VND\","
                "\"error\":null,\"occurred_at\":\"" WHEN "\"}",
                "{\"order_id\":\"1\",\"amount\":1,\"currency\":\"VND\","
                "\"provider_charge_id\":\"c\",\"occurred_at\":\"" WHEN "\"}",
                "{\"order_id\":\"1\",\"amount\":1,\"currency\":\"VND\","
                "\"provider_charge_id\":\"c\",\"error\":null}",
                /* wrong types */
                "{\"order_id\":1,\"amount\":1,\"currency\":\"VND\","
                "\"provider_charge_id\":\"c\",\"error\":null,"
                "\"occurred_at\":\"" WHEN "\"}",
                "{\"order_id\":\"1\",\"amount\":1.5,\"currency\":\"VND\","
                "\"provider_charge_id\":\"c\",\"error\":null,"
                "\"occurred_at\":\"" WHEN "\"}",
                "{\"order_id\":\"1\",\"amount\":\"1\",\"currency\":\"VND\","
                "\"provider_charge_id\":\"c\",\"error\":null,"
                "\"occurred_at\":\"" WHEN "\"}",
                "{\"order_id\":\"1\",\"amount\":1,\"currency\":\"VND\","
                "\"provider_charge_id\":\"c\",\"error\":\"e\","
                "\"occurred_at\":\"" WHEN "\"}",
                "{\"order_id\":\"1\",\"amount\":1,\"currency\":\"VND\","
                "\"provider_charge_id\":\"c\",\"error\":{\"code\":\"x\"},"
                "\"occurred_at\":\"" WHEN "\"}",
                "{\"order_id\":\"1\",\"amount\":1,\"currency\":\"VND\","
                "\"provider_charge_id\":\"c\",\"error\":{\"code\":\"x\","
                "\"message\":null},\"occurred_at\":\"" WHEN "\"}",
                "{\"order_id\":\"1\",\"amount\":1,\"currency\":\"VND\","
                "\"provider_charge_id\":\"c\",\"error\":{\"code\":\"x\","
                "\"message\":\"m\",\"more\":1},\"occurred_at\":\"" WHEN "\"}",
                "{\"order_id\":\"1\",\"amount\":1,\"currency\":\"VND\","
                "\"provider_charge_id\":\"c\",\"error\":null,"
                "\"occurred_at\":\"" WHEN "\",\"intent_event_id\":7}",
                /* a member named twice, one too many, one it may not have */
                "{\"order_id\":\"1\",\"order_id\":\"2\",\"amount\":1,"
                "\"currency\":\"VND\",\"provider_charge_id\":\"c\","
                "\"error\":null,\"occurred_at\":\"" WHEN "\"}",
                "{\"order_id\":\"1\",\"amount\":1,\"currency\":\"VND\","
                "\"provider_charge_id\":\"c\",\"error\":null,"
                "\"occurred_at\":\"" WHEN "\",\"status\":\"failed\"}",
                /* the contract: a succeeded result has no error, a time */
                "{\"order_id\":\"1\",\"amount\":1,\"currency\":\"VND\","
                "\"provider_charge_id\":\"c\",\"error\":{\"code\":\"x\","
                "\"message\":\"m\"},\"occurred_at\":\"" WHEN "\"}",
                "{\"order_id\":\"1\",\"amount\":1,\"currency\":\"VND\","
                "\"provider_charge_id\":\"c\",\"error\":null,"
                "\"occurred_at\":\"soon\"}",
                /* a NUL in a string; bytes that are not UTF-8 */
                "{\"order_id\":\"1\\u0000\",\"amount\":1,\"currency\":\"VND\","
                "\"provider_charge_id\":\"c\",\"error\":null,"
                "\"occurred_at\":\"" WHEN "\"}",
                "{\"order_id\":\"\xff\",\"amount\":1,\"currency\":\"VND\","
                "\"provider_charge_id\":\"c\",\"error\":null,"
                "\"occurred_at\":\"" WHEN "\"}",
                "{\"order_id\":\"1\",\"amount\":1,\"currency\":\"VND\","
                "\"provider_charge_id\":\"c\",\"error\":null,"
                "\"occurred_at\":\"" WHEN "\"} trailing",
        };
        static const char good[] =
            "{\"order_id\":\"1\",\"amount\":1,\"currency\":\"VND\","
            "\"provider_charge_id\":\"c\",\"error\":null,"
            "\"occurred_at\":\"" WHEN "\"}";
        struct payment_result r       = succeeded();
        struct payment_result_row row = row_of(&r, INTENT_ID);
        char errstr[128], *out = NULL, *big;
        size_t olen;

        (void)state;
        for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
                refuses_detail(&row, bad[i], strlen(bad[i]));
        refuses_detail(&row, NULL, 0);
        /* the good one composes; the row's columns are checked too */
        assert_int_equal(payment_result_compose(&row, good, strlen(good), &out,
                                                &olen, errstr, 128),
                         0);
        free(out);
        refuses_detail(&row, good, strlen(good) - 1);
        row.status = "processing";
        refuses_detail(&row, good, strlen(good));
        row.status = "Succeeded";
        refuses_detail(&row, good, strlen(good));
        row.status = NULL;
        refuses_detail(&row, good, strlen(good));
        row          = row_of(&r, INTENT_ID);
        row.event_id = "not-a-uuid";
        refuses_detail(&row, good, strlen(good));
        row            = row_of(&r, INTENT_ID);
        row.payment_id = "x";
        refuses_detail(&row, good, strlen(good));
        row          = row_of(&r, INTENT_ID);
        row.replayed = row.resolves_review = true;
        refuses_detail(&row, good, strlen(good));
        /* over the bound, even when well formed */
        row = row_of(&r, INTENT_ID);
        big = calloc(1, PAYMENT_RESULT_DETAIL_MAX + 2);
        assert_non_null(big);
        memset(big, ' ', PAYMENT_RESULT_DETAIL_MAX + 1);
        memcpy(big, good, strlen(good));
        refuses_detail(&row, big, PAYMENT_RESULT_DETAIL_MAX + 1);
        free(big);
}

int main(void)
{
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_succeeded_bytes),
                cmocka_unit_test(test_failed_conflict_review_bytes),
                cmocka_unit_test(test_rejected_with_nulls_and_escapes),
                cmocka_unit_test(test_refusals),
                cmocka_unit_test(test_key),
                cmocka_unit_test(test_status_names),
                cmocka_unit_test(test_detail_round_trip),
                cmocka_unit_test(test_detail_bytes),
                cmocka_unit_test(test_detail_hostile),
        };

        return cmocka_run_group_tests(tests, NULL, NULL);
}
