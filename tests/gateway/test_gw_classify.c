/*
 * Unit tests of gateway/classify: every row of the CONTRACT.md section 4
 * table and the odd answers around it. Must never see a FAILED outcome for
 * anything but a well-formed refusal.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <cmocka.h>

#include "gateway/classify.h"

#define REF "pay-1"
#define CH_OK                                                                  \
        "{\"id\":\"ch_1\",\"status\":\"succeeded\",\"amount\":1250000,"        \
        "\"currency\":\"VND\",\"reference\":\"pay-1\",\"error\":null}"
#define CH_DECLINED                                                            \
        "{\"id\":\"ch_2\",\"status\":\"failed\",\"amount\":1250000,"           \
        "\"currency\":\"VND\",\"reference\":\"pay-1\",\"error\":{\"code\":"    \
        "\"card_declined\",\"message\":\"Your card was declined.\"}}"
#define IDEM_ERR(code)                                                         \
        "{\"error\":{\"type\":\"idempotency_error\",\"code\":\"" code "\"}}"

enum kind { CHARGE, QUERY };

struct row {
        const char *name;
        enum kind kind;
        enum gw_transport transport;
        int status;
        const char *retry_after;
        const char *body;
        enum gw_outcome want;
        const char *want_charge_id; /* NULL: must be empty */
        const char *want_code;      /* NULL: not checked */
        int64_t want_retry_after_ms;
};

#define OK GW_TRANSPORT_OK

static const struct row rows[] = {
        /* 2xx */
        { "200 succeeded", CHARGE, OK, 200, NULL, CH_OK, GW_SUCCEEDED, "ch_1",
          NULL, -1 },
        { "201 succeeded", CHARGE, OK, 201, NULL, CH_OK, GW_SUCCEEDED, "ch_1",
          NULL, -1 },
        { "200 succeeded minimal", CHARGE, OK, 200, NULL,
          "{\"id\":\"ch_9\",\"status\":\"succeeded\"}", GW_SUCCEEDED, "ch_9",
          NULL, -1 },
        { "200 status failed", CHARGE, OK, 200, NULL, CH_DECLINED, GW_UNKNOWN,
          NULL, NULL, -1 },
        { "200 status pending", CHARGE, OK, 200, NULL,
          "{\"id\":\"ch_1\",\"status\":\"pending\"}", GW_UNKNOWN, NULL, NULL,
          -1 },
        { "201 garbage body", CHARGE, OK, 201, NULL, "<html>ok</html>",
          GW_UNKNOWN, NULL, NULL, -1 },
        { "200 truncated json", CHARGE, OK, 200, NULL,
          "{\"id\":\"ch_1\",\"status\":\"succ", GW_UNKNOWN, NULL, NULL, -1 },
        { "200 empty body", CHARGE, OK, 200, NULL, "", GW_UNKNOWN, NULL, NULL,
          -1 },
        { "200 null body", CHARGE, OK, 200, NULL, NULL, GW_UNKNOWN, NULL, NULL,
          -1 },
        { "200 json array", CHARGE, OK, 200, NULL, "[" CH_OK "]", GW_UNKNOWN,
          NULL, NULL, -1 },
        { "200 succeeded without id", CHARGE, OK, 200, NULL,
          "{\"status\":\"succeeded\"}", GW_UNKNOWN, NULL, NULL, -1 },
        { "200 succeeded empty id", CHARGE, OK, 200, NULL,
          "{\"id\":\"\",\"status\":\"succeeded\"}", GW_UNKNOWN, NULL, NULL,
          -1 },
        { "200 succeeded numeric id", CHARGE, OK, 200, NULL,
          "{\"id\":7,\"status\":\"succeeded\"}", GW_UNKNOWN, NULL, NULL, -1 },
        { "200 duplicate status keys", CHARGE, OK, 200, NULL,
          "{\"id\":\"ch_1\",\"status\":\"failed\",\"status\":\"succeeded\"}",
          GW_UNKNOWN, NULL, NULL, -1 },
        { "200 without status", CHARGE, OK, 200, NULL, "{\"id\":\"ch_1\"}",
          GW_UNKNOWN, NULL, NULL, -1 },
        { "200 other reference", CHARGE, OK, 200, NULL,
          "{\"id\":\"ch_1\",\"status\":\"succeeded\",\"reference\":\"pay-2\"}",
          GW_DEFECT, "ch_1", "charge_mismatch", -1 },
        { "200 other amount", CHARGE, OK, 200, NULL,
          "{\"id\":\"ch_1\",\"status\":\"succeeded\",\"amount\":1}", GW_DEFECT,
          "ch_1", "charge_mismatch", -1 },
        { "200 other currency", CHARGE, OK, 200, NULL,
          "{\"id\":\"ch_1\",\"status\":\"succeeded\",\"currency\":\"USD\"}",
          GW_DEFECT, "ch_1", "charge_mismatch", -1 },
        { "202 accepted", CHARGE, OK, 202, NULL, CH_OK, GW_UNKNOWN, NULL, NULL,
          -1 },
        { "204 no content", CHARGE, OK, 204, NULL, NULL, GW_UNKNOWN, NULL, NULL,
          -1 },
        { "100 informational", CHARGE, OK, 100, NULL, NULL, GW_UNKNOWN, NULL,
          NULL, -1 },
        { "302 redirect", CHARGE, OK, 302, NULL, NULL, GW_UNKNOWN, NULL, NULL,
          -1 },
        /* 402 */
        { "402 declined", CHARGE, OK, 402, NULL, CH_DECLINED, GW_FAILED, "ch_2",
          "card_declined", -1 },
        { "402 without error code", CHARGE, OK, 402, NULL,
          "{\"id\":\"ch_2\",\"status\":\"failed\",\"error\":{\"message\":\"x\""
          "}}",
          GW_DEFECT, NULL, "http_402", -1 },
        { "402 error null", CHARGE, OK, 402, NULL,
          "{\"id\":\"ch_2\",\"status\":\"failed\",\"error\":null}", GW_DEFECT,
          NULL, "http_402", -1 },
        { "402 empty error code", CHARGE, OK, 402, NULL,
          "{\"status\":\"failed\",\"error\":{\"code\":\"\"}}", GW_DEFECT, NULL,
          "http_402", -1 },
        { "402 garbage", CHARGE, OK, 402, NULL, "Payment Required", GW_DEFECT,
          NULL, "http_402", -1 },
        { "402 status succeeded", CHARGE, OK, 402, NULL, CH_OK, GW_DEFECT, NULL,
          "http_402", -1 },
        { "402 bare error object", CHARGE, OK, 402, NULL,
          "{\"error\":{\"code\":\"card_declined\"}}", GW_DEFECT, NULL,
          "card_declined", -1 },
        { "402 refusal for other reference", CHARGE, OK, 402, NULL,
          "{\"status\":\"failed\",\"reference\":\"pay-2\",\"error\":{\"code\""
          ":\"card_declined\"}}",
          GW_DEFECT, NULL, "card_declined", -1 },
        /* 409, 422 */
        { "409 request_in_progress", CHARGE, OK, 409, NULL,
          IDEM_ERR("request_in_progress"), GW_IN_PROGRESS, NULL,
          "request_in_progress", -1 },
        { "409 with Retry-After", CHARGE, OK, 409, "1",
          IDEM_ERR("request_in_progress"), GW_IN_PROGRESS, NULL, NULL, 1000 },
        { "409 other code", CHARGE, OK, 409, NULL, IDEM_ERR("key_conflict"),
          GW_DEFECT, NULL, "key_conflict", -1 },
        { "409 no body", CHARGE, OK, 409, NULL, NULL, GW_DEFECT, NULL,
          "http_409", -1 },
        { "422 parameters_mismatch", CHARGE, OK, 422, NULL,
          IDEM_ERR("parameters_mismatch"), GW_DEFECT, NULL,
          "parameters_mismatch", -1 },
        { "422 other", CHARGE, OK, 422, NULL,
          "{\"error\":{\"code\":\"invalid_currency\"}}", GW_DEFECT, NULL,
          "invalid_currency", -1 },
        /* 429 */
        { "429 without Retry-After", CHARGE, OK, 429, NULL, NULL,
          GW_RETRY_AFTER, NULL, NULL, -1 },
        { "429 Retry-After 3", CHARGE, OK, 429, "3", NULL, GW_RETRY_AFTER, NULL,
          NULL, 3000 },
        { "429 Retry-After 0", CHARGE, OK, 429, "0", NULL, GW_RETRY_AFTER, NULL,
          NULL, 0 },
        { "429 Retry-After spaces", CHARGE, OK, 429, " 2 \r\n", NULL,
          GW_RETRY_AFTER, NULL, NULL, 2000 },
        { "429 Retry-After word", CHARGE, OK, 429, "soon", NULL, GW_RETRY_AFTER,
          NULL, NULL, -1 },
        { "429 Retry-After negative", CHARGE, OK, 429, "-1", NULL,
          GW_RETRY_AFTER, NULL, NULL, -1 },
        { "429 Retry-After fraction", CHARGE, OK, 429, "1.5", NULL,
          GW_RETRY_AFTER, NULL, NULL, -1 },
        { "429 Retry-After empty", CHARGE, OK, 429, "", NULL, GW_RETRY_AFTER,
          NULL, NULL, -1 },
        { "429 Retry-After http-date", CHARGE, OK, 429,
          "Wed, 21 Oct 2015 07:28:00 GMT", NULL, GW_RETRY_AFTER, NULL, NULL,
          -1 },
        { "429 Retry-After huge", CHARGE, OK, 429, "99999999999999999999999999",
          NULL, GW_RETRY_AFTER, NULL, NULL, RETRY_AFTER_MAX_MS },
        /* other 4xx */
        { "400", CHARGE, OK, 400, NULL,
          "{\"error\":{\"code\":\"invalid_request\"}}", GW_DEFECT, NULL,
          "invalid_request", -1 },
        { "401", CHARGE, OK, 401, NULL, NULL, GW_DEFECT, NULL, "http_401", -1 },
        { "403", CHARGE, OK, 403, NULL, "forbidden", GW_DEFECT, NULL,
          "http_403", -1 },
        { "404", CHARGE, OK, 404, NULL, NULL, GW_DEFECT, NULL, "http_404", -1 },
        { "408 request timeout", CHARGE, OK, 408, NULL, NULL, GW_UNKNOWN, NULL,
          NULL, -1 },
        { "499 client closed", CHARGE, OK, 499, NULL, NULL, GW_UNKNOWN, NULL,
          NULL, -1 },
        /* 5xx */
        { "500", CHARGE, OK, 500, NULL, "{\"error\":{\"code\":\"internal\"}}",
          GW_UNKNOWN, NULL, NULL, -1 },
        { "500 with a charge body", CHARGE, OK, 500, NULL, CH_DECLINED,
          GW_UNKNOWN, NULL, NULL, -1 },
        { "502", CHARGE, OK, 502, NULL, "<html>bad gateway</html>", GW_UNKNOWN,
          NULL, NULL, -1 },
        { "503 Retry-After", CHARGE, OK, 503, "2", NULL, GW_UNKNOWN, NULL, NULL,
          2000 },
        { "504", CHARGE, OK, 504, NULL, NULL, GW_UNKNOWN, NULL, NULL, -1 },
        { "600", CHARGE, OK, 600, NULL, NULL, GW_UNKNOWN, NULL, NULL, -1 },
        /* transport */
        { "timeout", CHARGE, GW_TRANSPORT_TIMEOUT, 0, NULL, NULL, GW_UNKNOWN,
          NULL, NULL, -1 },
        { "timeout after 200 headers", CHARGE, GW_TRANSPORT_TIMEOUT, 200, NULL,
          CH_OK, GW_UNKNOWN, NULL, NULL, -1 },
        { "reset", CHARGE, GW_TRANSPORT_RESET, 0, NULL, NULL, GW_UNKNOWN, NULL,
          NULL, -1 },
        { "reset after 402 headers", CHARGE, GW_TRANSPORT_RESET, 402, NULL,
          CH_DECLINED, GW_UNKNOWN, NULL, NULL, -1 },
        { "refused", CHARGE, GW_TRANSPORT_REFUSED, 0, NULL, NULL, GW_UNKNOWN,
          NULL, NULL, -1 },
        { "dns", CHARGE, GW_TRANSPORT_DNS, 0, NULL, NULL, GW_UNKNOWN, NULL,
          NULL, -1 },
        { "tls", CHARGE, GW_TRANSPORT_TLS, 0, NULL, NULL, GW_UNKNOWN, NULL,
          NULL, -1 },
        { "other transport", CHARGE, GW_TRANSPORT_OTHER, 0, NULL, NULL,
          GW_UNKNOWN, NULL, NULL, -1 },

        /* GET /v1/charges?reference= */
        { "query empty list", QUERY, OK, 200, NULL, "{\"data\":[]}",
          GW_NOT_FOUND, NULL, NULL, -1 },
        { "query succeeded", QUERY, OK, 200, NULL, "{\"data\":[" CH_OK "]}",
          GW_SUCCEEDED, "ch_1", NULL, -1 },
        { "query failed", QUERY, OK, 200, NULL, "{\"data\":[" CH_DECLINED "]}",
          GW_FAILED, NULL, "card_declined", -1 },
        { "query failed then succeeded", QUERY, OK, 200, NULL,
          "{\"data\":[" CH_DECLINED "," CH_OK "]}", GW_SUCCEEDED, "ch_1", NULL,
          -1 },
        { "query failed without code", QUERY, OK, 200, NULL,
          "{\"data\":[{\"id\":\"c\",\"status\":\"failed\",\"reference\":"
          "\"pay-1\"}]}",
          GW_UNKNOWN, NULL, NULL, -1 },
        { "query pending", QUERY, OK, 200, NULL,
          "{\"data\":[{\"id\":\"c\",\"status\":\"pending\",\"reference\":"
          "\"pay-1\"}]}",
          GW_UNKNOWN, NULL, NULL, -1 },
        { "query failed and pending", QUERY, OK, 200, NULL,
          "{\"data\":[" CH_DECLINED ",{\"id\":\"c\",\"status\":\"pending\","
          "\"reference\":\"pay-1\"}]}",
          GW_UNKNOWN, NULL, NULL, -1 },
        { "query other reference only", QUERY, OK, 200, NULL,
          "{\"data\":[{\"id\":\"c\",\"status\":\"succeeded\",\"reference\":"
          "\"pay-2\"}]}",
          GW_UNKNOWN, NULL, NULL, -1 },
        { "query charge without reference", QUERY, OK, 200, NULL,
          "{\"data\":[{\"id\":\"c\",\"status\":\"succeeded\"}]}", GW_UNKNOWN,
          NULL, NULL, -1 },
        { "query other amount", QUERY, OK, 200, NULL,
          "{\"data\":[{\"id\":\"c\",\"status\":\"succeeded\",\"reference\":"
          "\"pay-1\",\"amount\":5}]}",
          GW_DEFECT, NULL, "charge_mismatch", -1 },
        { "query item not an object", QUERY, OK, 200, NULL, "{\"data\":[42]}",
          GW_UNKNOWN, NULL, NULL, -1 },
        { "query no data", QUERY, OK, 200, NULL, "{}", GW_UNKNOWN, NULL, NULL,
          -1 },
        { "query data not a list", QUERY, OK, 200, NULL, "{\"data\":{}}",
          GW_UNKNOWN, NULL, NULL, -1 },
        { "query garbage", QUERY, OK, 200, NULL, "[]", GW_UNKNOWN, NULL, NULL,
          -1 },
        { "query 201", QUERY, OK, 201, NULL, "{\"data\":[]}", GW_UNKNOWN, NULL,
          NULL, -1 },
        { "query 404", QUERY, OK, 404, NULL, "{\"data\":[]}", GW_UNKNOWN, NULL,
          NULL, -1 },
        { "query 500", QUERY, OK, 500, NULL, NULL, GW_UNKNOWN, NULL, NULL, -1 },
        { "query 429", QUERY, OK, 429, "4", NULL, GW_RETRY_AFTER, NULL, NULL,
          4000 },
        { "query timeout", QUERY, GW_TRANSPORT_TIMEOUT, 0, NULL, NULL,
          GW_UNKNOWN, NULL, NULL, -1 },
        { "query reset", QUERY, GW_TRANSPORT_RESET, 200, NULL, "{\"data\":[]",
          GW_UNKNOWN, NULL, NULL, -1 },
};

static void run_row(const struct row *r)
{
        struct gw_answer a = { 0 };
        struct gw_verdict v;

        a.transport        = r->transport;
        a.http_status      = r->status;
        a.retry_after      = r->retry_after;
        a.body             = r->body;
        a.body_len         = r->body ? strlen(r->body) : 0;
        a.expect_reference = REF;
        a.expect_amount    = 1250000;
        a.expect_currency  = "VND";
        if (r->kind == CHARGE)
                gw_classify_charge(&a, &v);
        else
                gw_classify_query(&a, &v);
        if (v.outcome != r->want)
                fail_msg("row \"%s\": outcome %s, want %s", r->name,
                         gw_outcome_name(v.outcome), gw_outcome_name(r->want));
        if (r->want_charge_id && strcmp(v.charge_id, r->want_charge_id))
                fail_msg("row \"%s\": charge id \"%s\"", r->name, v.charge_id);
        if (!r->want_charge_id && r->want != GW_DEFECT && v.charge_id[0])
                fail_msg("row \"%s\": unexpected charge id", r->name);
        if (r->want_code && strcmp(v.error_code, r->want_code))
                fail_msg("row \"%s\": error code \"%s\", want \"%s\"", r->name,
                         v.error_code, r->want_code);
        if (v.retry_after_ms != r->want_retry_after_ms)
                fail_msg("row \"%s\": retry after %lld, want %lld", r->name,
                         (long long)v.retry_after_ms,
                         (long long)r->want_retry_after_ms);
        assert_non_null(v.reason);
        /* The rule above all: only a well-formed refusal is FAILED. */
        if (v.outcome == GW_FAILED) {
                assert_int_equal(r->transport, GW_TRANSPORT_OK);
                assert_true(r->status == 402 ||
                            (r->kind == QUERY && r->status == 200));
                assert_true(v.error_code[0] != '\0');
        }
        if (r->kind == CHARGE)
                assert_int_not_equal(v.outcome, GW_NOT_FOUND);
}

static void test_table(void **state)
{
        (void)state;
        for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++)
                run_row(&rows[i]);
}

/* Every status 0..999 and every transport error: FAILED only for 402. */
static void test_never_failed_without_refusal(void **state)
{
        static const char *const bodies[] = { NULL,        "",
                                              "x",         CH_OK,
                                              CH_DECLINED, "{\"data\":[]}" };
        (void)state;
        for (int t = GW_TRANSPORT_OK; t <= GW_TRANSPORT_OTHER; t++) {
                for (int s = 0; s < 1000; s++) {
                        for (size_t b = 0; b < 6; b++) {
                                struct gw_answer a = { 0 };
                                struct gw_verdict v;

                                a.transport     = (enum gw_transport)t;
                                a.http_status   = s;
                                a.body          = bodies[b];
                                a.body_len      = a.body ? strlen(a.body) : 0;
                                a.expect_amount = -1;
                                gw_classify_charge(&a, &v);
                                if (v.outcome == GW_FAILED)
                                        assert_true(t == GW_TRANSPORT_OK &&
                                                    s == 402 && b == 4);
                                if (s >= 500 && s <= 599)
                                        assert_int_equal(v.outcome, GW_UNKNOWN);
                                if (t != GW_TRANSPORT_OK)
                                        assert_int_equal(v.outcome, GW_UNKNOWN);
                        }
                }
        }
}

static void test_replayed_and_unchecked(void **state)
{
        struct gw_answer a = { 0 };
        struct gw_verdict v;
        static const char body[] =
            "{\"id\":\"ch_7\",\"status\":\"succeeded\",\"reference\":"
            "\"other\",\"amount\":3}";

        (void)state;
        a.http_status   = 200;
        a.replayed      = true;
        a.body          = body;
        a.body_len      = strlen(body);
        a.expect_amount = -1; /* nothing expected: nothing compared */
        gw_classify_charge(&a, &v);
        assert_int_equal(v.outcome, GW_SUCCEEDED);
        assert_string_equal(v.charge_id, "ch_7");
        assert_string_equal(v.reason, "charged (replayed)");
}

static void test_long_charge_id(void **state)
{
        char body[GW_CHARGE_ID_SIZE + 64];
        char id[GW_CHARGE_ID_SIZE + 1];
        struct gw_answer a = { 0 };
        struct gw_verdict v;

        (void)state;
        memset(id, 'x', sizeof(id) - 1);
        id[sizeof(id) - 1] = '\0';
        snprintf(body, sizeof(body), "{\"id\":\"%s\",\"status\":\"succeeded\"}",
                 id);
        a.http_status   = 201;
        a.body          = body;
        a.body_len      = strlen(body);
        a.expect_amount = -1;
        gw_classify_charge(&a, &v);
        /* cannot store the id: not evidence we can keep */
        assert_int_equal(v.outcome, GW_UNKNOWN);
}

static void test_retry_class(void **state)
{
        (void)state;
        assert_int_equal(gw_outcome_retry_class(GW_SUCCEEDED),
                         RETRY_CLASS_FINAL);
        assert_int_equal(gw_outcome_retry_class(GW_FAILED), RETRY_CLASS_FINAL);
        assert_int_equal(gw_outcome_retry_class(GW_DEFECT), RETRY_CLASS_FINAL);
        assert_int_equal(gw_outcome_retry_class(GW_NOT_FOUND),
                         RETRY_CLASS_FINAL);
        assert_int_equal(gw_outcome_retry_class(GW_UNKNOWN),
                         RETRY_CLASS_UNKNOWN);
        assert_int_equal(gw_outcome_retry_class(GW_IN_PROGRESS),
                         RETRY_CLASS_BUSY);
        assert_int_equal(gw_outcome_retry_class(GW_RETRY_AFTER),
                         RETRY_CLASS_THROTTLED);
        for (int o = GW_SUCCEEDED; o <= GW_NOT_FOUND; o++)
                assert_string_not_equal(gw_outcome_name((enum gw_outcome)o),
                                        "?");
        for (int t = GW_TRANSPORT_OK; t <= GW_TRANSPORT_OTHER; t++)
                assert_string_not_equal(gw_transport_name((enum gw_transport)t),
                                        "?");
}

int main(void)
{
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_table),
                cmocka_unit_test(test_never_failed_without_refusal),
                cmocka_unit_test(test_replayed_and_unchecked),
                cmocka_unit_test(test_long_charge_id),
                cmocka_unit_test(test_retry_class),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
