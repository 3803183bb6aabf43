/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Unit tests of gateway/classify: every row of the docs/contract.md §4.4
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
#include "util/guard.h"
#include "payment/result.h"
#include "util/utf8.h"

#include <stdlib.h>

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
        /* a 2xx succeeded must carry the reference, amount and currency
         * we sent: without any of them it proves nothing */
        { "200 succeeded minimal", CHARGE, OK, 200, NULL,
          "{\"id\":\"ch_9\",\"status\":\"succeeded\"}", GW_UNKNOWN, NULL, NULL,
          -1 },
        { "200 succeeded without reference", CHARGE, OK, 200, NULL,
          "{\"id\":\"ch_1\",\"status\":\"succeeded\",\"amount\":1250000,"
          "\"currency\":\"VND\"}",
          GW_UNKNOWN, NULL, NULL, -1 },
        { "200 succeeded without amount", CHARGE, OK, 200, NULL,
          "{\"id\":\"ch_1\",\"status\":\"succeeded\",\"currency\":\"VND\","
          "\"reference\":\"pay-1\"}",
          GW_UNKNOWN, NULL, NULL, -1 },
        { "200 succeeded without currency", CHARGE, OK, 200, NULL,
          "{\"id\":\"ch_1\",\"status\":\"succeeded\",\"amount\":1250000,"
          "\"reference\":\"pay-1\"}",
          GW_UNKNOWN, NULL, NULL, -1 },
        { "200 succeeded reference null", CHARGE, OK, 200, NULL,
          "{\"id\":\"ch_1\",\"status\":\"succeeded\",\"amount\":1250000,"
          "\"currency\":\"VND\",\"reference\":null}",
          GW_UNKNOWN, NULL, NULL, -1 },
        { "200 succeeded lower-case currency", CHARGE, OK, 200, NULL,
          "{\"id\":\"ch_1\",\"status\":\"succeeded\",\"amount\":1250000,"
          "\"currency\":\"vnd\",\"reference\":\"pay-1\"}",
          GW_SUCCEEDED, "ch_1", NULL, -1 },
        { "200 other reference, no amount", CHARGE, OK, 200, NULL,
          "{\"id\":\"ch_1\",\"status\":\"succeeded\",\"reference\":"
          "\"pay-10\"}",
          GW_DEFECT, "ch_1", "charge_mismatch", -1 },
        { "200 reference with a NUL after ours", CHARGE, OK, 200, NULL,
          "{\"id\":\"ch_1\",\"status\":\"succeeded\",\"amount\":1250000,"
          "\"currency\":\"VND\",\"reference\":\"pay-1\\u0000x\"}",
          GW_DEFECT, "ch_1", "charge_mismatch", -1 },
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
        { "query succeeded without amount", QUERY, OK, 200, NULL,
          "{\"data\":[{\"id\":\"c\",\"status\":\"succeeded\",\"reference\":"
          "\"pay-1\",\"currency\":\"VND\"}]}",
          GW_UNKNOWN, NULL, NULL, -1 },
        { "query succeeded without currency", QUERY, OK, 200, NULL,
          "{\"data\":[{\"id\":\"c\",\"status\":\"succeeded\",\"reference\":"
          "\"pay-1\",\"amount\":1250000}]}",
          GW_UNKNOWN, NULL, NULL, -1 },
        { "query succeeded with a bad id", QUERY, OK, 200, NULL,
          "{\"data\":[{\"id\":\"c h\",\"status\":\"succeeded\",\"reference\":"
          "\"pay-1\",\"amount\":1250000,\"currency\":\"VND\"}]}",
          GW_UNKNOWN, NULL, NULL, -1 },
        { "query failed with a bad code", QUERY, OK, 200, NULL,
          "{\"data\":[{\"id\":\"c\",\"status\":\"failed\",\"reference\":"
          "\"pay-1\",\"error\":{\"code\":\"th\u1ebb_b\u1ecb\"}}]}",
          GW_UNKNOWN, NULL, NULL, -1 },
        { "query reference with a NUL", QUERY, OK, 200, NULL,
          "{\"data\":[{\"id\":\"c\",\"status\":\"succeeded\",\"reference\":"
          "\"pay-1\\u0000\",\"amount\":1250000,\"currency\":\"VND\"}]}",
          GW_UNKNOWN, NULL, NULL, -1 },
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
                gateway_classify_charge(&a, &v);
        else
                gateway_classify_query(&a, &v);
        if (v.outcome != r->want)
                fail_msg("row \"%s\": outcome %s, want %s", r->name,
                         gateway_outcome_name(v.outcome),
                         gateway_outcome_name(r->want));
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
                                gateway_classify_charge(&a, &v);
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
            "\"other\",\"amount\":3,\"currency\":\"EUR\"}";

        (void)state;
        a.http_status      = 200;
        a.replayed         = true;
        a.body             = body;
        a.body_len         = strlen(body);
        a.expect_reference = "other";
        a.expect_amount    = 3;
        a.expect_currency  = "EUR";
        gateway_classify_charge(&a, &v);
        assert_int_equal(v.outcome, GW_SUCCEEDED);
        assert_string_equal(v.charge_id, "ch_7");
        assert_string_equal(v.reason, "charged (replayed)");
        /* a caller that does not say what it sent gets no success: the
         * answer cannot be checked against anything */
        a.expect_reference = NULL;
        a.expect_amount    = -1;
        a.expect_currency  = NULL;
        gateway_classify_charge(&a, &v);
        assert_int_equal(v.outcome, GW_UNKNOWN);
        assert_string_equal(v.charge_id, "");
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
        gateway_classify_charge(&a, &v);
        /* cannot store the id: not evidence we can keep */
        assert_int_equal(v.outcome, GW_UNKNOWN);
}

/* ---- hostile answers: untrusted text never breaks a result */

/* Every string of a verdict: terminated inside its buffer, valid UTF-8,
 * no control character; ids and codes empty or identifiers. */
static void check_strings(const struct gw_verdict *v)
{
        size_t n;

        n = strnlen(v->charge_id, sizeof(v->charge_id));
        assert_true(n < sizeof(v->charge_id));
        assert_true(n == 0 || gateway_ident_valid(v->charge_id, n, 255));
        n = strnlen(v->error_code, sizeof(v->error_code));
        assert_true(n < sizeof(v->error_code));
        assert_true(n == 0 || gateway_ident_valid(v->error_code, n, 63));
        n = strnlen(v->error_message, sizeof(v->error_message));
        assert_true(n < sizeof(v->error_message));
        assert_true(utf8_valid(v->error_message, n));
        for (size_t i = 0; i < n; i++) {
                unsigned char c = (unsigned char)v->error_message[i];
                assert_true(c >= 0x20 && c != 0x7F);
                if (c == 0xC2 && i + 1 < n)
                        assert_true((unsigned char)v->error_message[i + 1] >
                                    0x9F);
        }
}

/* The verdict's error makes a result that builds (what the consumer and
 * the reconciler do with it). */
static void check_result_builds(const struct gw_verdict *v)
{
        struct payment_result r = { 0 };
        char *json              = NULL;
        size_t len              = 0;
        char err[128];

        r.event_id           = "8d5c4a52-8a3f-4c43-9d7e-0b2f5b1f0a11";
        r.intent_event_id    = "x";
        r.tenant_id          = "shop-1";
        r.idempotency_key    = "k";
        r.order_id           = "o";
        r.payment_id         = "0b1e6f1c-52a5-4b8e-a2f7-8c7b1c6f9d20";
        r.status             = v->outcome == GW_FAILED ? PAYMENT_STATUS_FAILED
                                                       : PAYMENT_STATUS_REVIEW;
        r.has_amount         = true;
        r.amount             = 1250000;
        r.currency           = "VND";
        r.provider_charge_id = v->charge_id[0] ? v->charge_id : NULL;
        r.error_code    = v->error_code[0] ? v->error_code : "gateway_defect";
        r.error_message = v->error_message;
        r.occurred_at   = "2026-12-01T06:00:00Z";
        if (payment_result_build(&r, &json, &len, err, sizeof(err)) != 0)
                fail_msg("result does not build: %s", err);
        assert_true(len > 0);
        free(json);
}

static void classify_body(int status, const char *body, size_t len,
                          struct gw_verdict *v)
{
        struct gw_answer a = { 0 };

        a.http_status      = status;
        a.body             = body;
        a.body_len         = len;
        a.expect_reference = REF;
        a.expect_amount    = 1250000;
        a.expect_currency  = "VND";
        gateway_classify_charge(&a, v);
        check_strings(v);
}

/* A 402 refusal whose message is `msg` (raw JSON string contents). */
static char *decline_with(const char *code, const char *msg)
{
        size_t n = strlen(msg) + strlen(code) + 256;
        char *b  = malloc(n);

        assert_non_null(b);
        snprintf(b, n,
                 "{\"id\":\"ch_2\",\"status\":\"failed\",\"amount\":1250000,"
                 "\"currency\":\"VND\",\"reference\":\"pay-1\",\"error\":{"
                 "\"code\":\"%s\",\"message\":\"%s\"}}",
                 code, msg);
        return b;
}

static void test_long_vietnamese_decline(void **state)
{
        static const char vi[] =
            "Th\xe1\xba\xbb c\xe1\xbb\xa7"
            "a b\xe1\xba\xa1n \xc4\x91\xc3\xa3 b\xe1\xbb\x8b t\xe1\xbb\xab "
            "ch\xe1\xbb\x91i. Vui l\xc3\xb2ng li\xc3\xaan h\xe1\xbb\x87 "
            "ng\xc3\xa2n h\xc3\xa0ng ph\xc3\xa1t h\xc3\xa0nh. ";
        size_t total = 10 * 1024, n = 0;
        char *msg = malloc(total + sizeof(vi));
        char *body;
        struct gw_verdict v;
        size_t len;

        (void)state;
        assert_non_null(msg);
        while (n < total) {
                memcpy(msg + n, vi, sizeof(vi) - 1);
                n += sizeof(vi) - 1;
        }
        msg[n] = '\0';
        body   = decline_with("card_declined", msg);
        classify_body(402, body, strlen(body), &v);
        assert_int_equal(v.outcome, GW_FAILED);
        assert_string_equal(v.error_code, "card_declined");
        assert_string_equal(v.charge_id, "ch_2");
        len = strlen(v.error_message);
        /* cut on a code-point boundary, as long as fits, a prefix */
        assert_true(len > sizeof(v.error_message) - 5);
        assert_memory_equal(v.error_message, msg, len);
        check_result_builds(&v);
        free(body);
        free(msg);
}

static void test_invalid_utf8_message(void **state)
{
        /* Latin-1, a truncated sequence, an overlong '/', a surrogate, a
         * stray continuation byte, a code point past U+10FFFF */
        static const char *const bad[] = {
                "Carte refus\xe9"
                "e",
                "cut \xe1\xba",
                "overlong \xc0\xaf",
                "surrogate \xed\xa0\x80",
                "stray \x80",
                "big \xf4\x90\x80\x80",
        };

        (void)state;
        for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
                char *body = decline_with("card_declined", bad[i]);
                struct gw_verdict v;

                classify_body(402, body, strlen(body), &v);
                /* still the documented refusal: the text is only text */
                assert_int_equal(v.outcome, GW_FAILED);
                assert_non_null(strstr(v.error_message, UTF8_REPLACEMENT));
                check_result_builds(&v);
                free(body);
        }
}

static void test_nul_and_controls(void **state)
{
        struct gw_verdict v;
        char *body;
        static const char ok_head[] =
            "{\"status\":\"succeeded\",\"amount\":1250000,\"currency\":\"VND\","
            "\"reference\":\"pay-1\",\"id\":";

        (void)state;
        /* NUL inside the message: replaced, the rest is kept */
        body = decline_with("card_declined", "a\\u0000b");
        classify_body(402, body, strlen(body), &v);
        assert_int_equal(v.outcome, GW_FAILED);
        assert_string_equal(v.error_message, "a" UTF8_REPLACEMENT "b");
        check_result_builds(&v);
        free(body);

        /* controls: escape sequences, CR/LF, tab, DEL, NEL (C1), line
         * separator, right-to-left override */
        body = decline_with("card_declined",
                            "x\\u001b[31my\\r\\nz\\t\\u007f\\u0085"
                            "\\u2028\\u202eq");
        classify_body(402, body, strlen(body), &v);
        assert_int_equal(v.outcome, GW_FAILED);
        assert_string_equal(v.error_message, "x [31my  z     q");
        free(body);

        /* NUL in the code: not an identifier, so not the refusal */
        body = decline_with("card\\u0000declined", "m");
        classify_body(402, body, strlen(body), &v);
        assert_int_equal(v.outcome, GW_DEFECT);
        assert_string_equal(v.error_code, "http_402");
        check_result_builds(&v);
        free(body);

        /* NUL in a succeeded charge's id: no usable id, no evidence */
        body = malloc(256);
        assert_non_null(body);
        snprintf(body, 256, "%s\"ch_1\\u0000x\"}", ok_head);
        classify_body(200, body, strlen(body), &v);
        assert_int_equal(v.outcome, GW_UNKNOWN);
        assert_string_equal(v.charge_id, "");
        /* a raw NUL byte in the body is not JSON */
        snprintf(body, 256, "%s\"ch_1\"}", ok_head);
        classify_body(200, body, strlen(body), &v);
        assert_int_equal(v.outcome, GW_SUCCEEDED);
        body[10] = '\0';
        classify_body(200, body, strlen(ok_head) + 7, &v);
        assert_int_equal(v.outcome, GW_UNKNOWN);
        free(body);
}

static void test_identifiers(void **state)
{
        char code[80], *id, *body;
        struct gw_verdict v;
        size_t n = 10000;

        (void)state;
        assert_true(gateway_ident_valid("card_declined", 13, 63));
        assert_false(gateway_ident_valid("", 0, 63));
        assert_false(gateway_ident_valid("a b", 3, 63));
        assert_false(gateway_ident_valid("a\"", 2, 1));
        assert_false(gateway_ident_valid("th\xe1\xba\xbb", 5, 63));
        assert_false(gateway_ident_valid("a\x7f", 2, 63));

        /* a code of 63 characters is one, of 64 is not */
        memset(code, 'c', 63);
        code[63] = '\0';
        body     = decline_with(code, "m");
        classify_body(402, body, strlen(body), &v);
        assert_int_equal(v.outcome, GW_FAILED);
        assert_string_equal(v.error_code, code);
        free(body);
        code[63] = 'c';
        code[64] = '\0';
        body     = decline_with(code, "m");
        classify_body(402, body, strlen(body), &v);
        assert_int_equal(v.outcome, GW_DEFECT);
        assert_string_equal(v.error_code, "http_402");
        assert_string_equal(v.error_message, "m"); /* kept for the review */
        check_result_builds(&v);
        free(body);
        /* a code in Vietnamese, with a space, with a tab */
        static const char *const bad[] = { "th\xe1\xba\xbb_b\xe1\xbb\x8b",
                                           "card declined", "card\\tx" };
        for (size_t i = 0; i < 3; i++) {
                body = decline_with(bad[i], "m");
                classify_body(402, body, strlen(body), &v);
                assert_int_equal(v.outcome, GW_DEFECT);
                free(body);
        }
        /* a code that is a number or an object: no code at all */
        body = strdup("{\"status\":\"failed\",\"reference\":\"pay-1\","
                      "\"error\":{\"code\":402}}");
        classify_body(402, body, strlen(body), &v);
        assert_int_equal(v.outcome, GW_DEFECT);
        free(body);

        /* a 10 KB charge id: a 2xx proves nothing, a refusal drops it */
        id = malloc(n + 1);
        assert_non_null(id);
        memset(id, 'x', n);
        id[n] = '\0';
        body  = malloc(n + 256);
        assert_non_null(body);
        snprintf(body, n + 256,
                 "{\"id\":\"%s\",\"status\":\"succeeded\",\"amount\":1250000,"
                 "\"currency\":\"VND\",\"reference\":\"pay-1\"}",
                 id);
        classify_body(200, body, strlen(body), &v);
        assert_int_equal(v.outcome, GW_UNKNOWN);
        snprintf(body, n + 256,
                 "{\"id\":\"%s\",\"status\":\"failed\",\"amount\":1250000,"
                 "\"currency\":\"VND\",\"reference\":\"pay-1\",\"error\":"
                 "{\"code\":\"card_declined\"}}",
                 id);
        classify_body(402, body, strlen(body), &v);
        assert_int_equal(v.outcome, GW_FAILED);
        assert_string_equal(v.charge_id, "");
        check_result_builds(&v);
        free(body);
        free(id);
}

static void test_odd_numbers(void **state)
{
        static const struct {
                const char *amount;
                enum gw_outcome want;
        } amounts[] = {
                { "1250000", GW_SUCCEEDED },
                { "\"1250000\"", GW_UNKNOWN },
                { "1250000.0", GW_UNKNOWN },
                { "1.25e6", GW_UNKNOWN },
                { "1250000e0", GW_UNKNOWN },
                { "12500000E-1", GW_UNKNOWN },
                { "null", GW_UNKNOWN },
                { "true", GW_UNKNOWN },
                { "[1250000]", GW_UNKNOWN },
                { "-1250000", GW_DEFECT },
                { "1250001", GW_DEFECT },
                { "0", GW_DEFECT },
                { "-0", GW_DEFECT },
                { "9223372036854775807", GW_DEFECT },
                /* not JSON (jansson refuses what overflows int64) */
                { "99999999999999999999999", GW_UNKNOWN },
                { "01250000", GW_UNKNOWN },
                { "+1250000", GW_UNKNOWN },
                { "0x1312D0", GW_UNKNOWN },
                { "NaN", GW_UNKNOWN },
                { "Infinity", GW_UNKNOWN },
        };
        char body[512];
        struct gw_verdict v;

        (void)state;
        for (size_t i = 0; i < sizeof(amounts) / sizeof(amounts[0]); i++) {
                snprintf(body, sizeof(body),
                         "{\"id\":\"ch_1\",\"status\":\"succeeded\","
                         "\"amount\":%s,\"currency\":\"VND\",\"reference\":"
                         "\"pay-1\"}",
                         amounts[i].amount);
                classify_body(200, body, strlen(body), &v);
                if (v.outcome != amounts[i].want)
                        fail_msg("amount %s: %s, want %s", amounts[i].amount,
                                 gateway_outcome_name(v.outcome),
                                 gateway_outcome_name(amounts[i].want));
        }
}

static void test_deep_nesting(void **state)
{
        size_t depth = 100000, n = 0;
        char *body = malloc(2 * depth + 512);
        struct gw_verdict v;

        (void)state;
        assert_non_null(body);
        n += (size_t)sprintf(body,
                             "{\"id\":\"ch_2\",\"status\":\"failed\","
                             "\"reference\":\"pay-1\",\"error\":{\"code\":"
                             "\"card_declined\",\"message\":\"m\"},\"x\":");
        memset(body + n, '[', depth);
        n += depth;
        memset(body + n, ']', depth);
        n += depth;
        body[n++] = '}';
        classify_body(402, body, n, &v);
        /* not parsed, so not a refusal; nothing crashes */
        assert_int_equal(v.outcome, GW_DEFECT);
        classify_body(200, body, n, &v);
        assert_int_equal(v.outcome, GW_UNKNOWN);
        /* a message that is an object, an error that is a list */
        n = (size_t)sprintf(
            body, "{\"id\":\"ch_2\",\"status\":\"failed\",\"reference\":"
                  "\"pay-1\",\"error\":{\"code\":\"card_declined\","
                  "\"message\":{\"a\":[1,{\"b\":null}]}}}");
        classify_body(402, body, n, &v);
        assert_int_equal(v.outcome, GW_FAILED);
        assert_string_equal(v.error_message, "");
        n = (size_t)sprintf(body, "{\"status\":\"failed\",\"error\":[1]}");
        classify_body(402, body, n, &v);
        assert_int_equal(v.outcome, GW_DEFECT);
        free(body);
}

/* Random corruptions of a refusal and of a success: the strings of every
 * verdict stay clean, and FAILED only ever comes from a 402. */
static void test_mutations(void **state)
{
        static const char *const seeds[] = { CH_DECLINED, CH_OK };
        uint64_t x                       = 0x9e3779b97f4a7c15ULL;
        char buf[512];

        (void)state;
        for (int i = 0; i < 40000; i++) {
                const char *seed = seeds[i % 2];
                size_t n         = strlen(seed);
                struct gw_verdict v;
                int status = i % 4 < 2 ? 402 : 200;

                memcpy(buf, seed, n);
                for (int k = 0; k < 1 + i % 6; k++) {
                        x ^= x << 13;
                        x ^= x >> 7;
                        x ^= x << 17;
                        buf[x % n] = (char)(x >> 32);
                }
                classify_body(status, buf, n, &v);
                if (v.outcome == GW_FAILED)
                        assert_int_equal(status, 402);
                if (v.outcome == GW_FAILED || v.outcome == GW_DEFECT)
                        check_result_builds(&v);
        }
}

static void test_text_clean(void **state)
{
        char out[8];

        (void)state;
        /* cut on a code-point boundary: 3 x 3 bytes do not fit in 7 */
        assert_int_equal(
            gateway_text_clean("\xe1\xba\xbb\xe1\xba\xbb\xe1\xba\xbb", 9, out,
                               sizeof(out)),
            6);
        assert_string_equal(out, "\xe1\xba\xbb\xe1\xba\xbb");
        assert_int_equal(gateway_text_clean(NULL, 5, out, sizeof(out)), 0);
        assert_string_equal(out, "");
        assert_int_equal(gateway_text_clean("a\nb", 3, out, sizeof(out)), 3);
        assert_string_equal(out, "a b");
}

/* A hostile gateway's text never carries a card number or an e-mail
 * address on: redacted before the cut, and the cut checked again. */
static void test_text_clean_redacts(void **state)
{
        char out[64], small[10], card17[17];
        const char *t;

        (void)state;
        t = "card 4111 1111 1111 1111 declined";
        assert_int_equal(gateway_text_clean(t, strlen(t), out, sizeof(out)),
                         strlen("card **** **** **** 1111 declined"));
        assert_string_equal(out, "card **** **** **** 1111 declined");
        t = "ask bob.smith@example.com\n";
        gateway_text_clean(t, strlen(t), out, sizeof(out));
        assert_string_equal(out, "ask [email] ");
        /* a card cut by the buffer: no digit of it is left but the last 4
         * the redaction keeps (none of which fits here) */
        t = "4111111111111111 declined";
        gateway_text_clean(t, strlen(t), small, sizeof(small));
        assert_string_equal(small, "*********");
        /* 25 digits are no card number, their first 16 are one: the cut
         * makes it, the last resort masks it */
        t = "4111111111111111123456789";
        assert_false(guard_has_card_number(t, strlen(t)));
        gateway_text_clean(t, strlen(t), card17, sizeof(card17));
        assert_string_equal(card17, "****************");
        /* a NUL and a control inside a card do not hide it */
        gateway_text_clean("4111\0001111 1111 1111", 19, out, sizeof(out));
        assert_false(guard_has_card_number(out, strlen(out)));
}

static void test_retry_class(void **state)
{
        (void)state;
        assert_int_equal(gateway_outcome_retry_class(GW_SUCCEEDED),
                         RETRY_CLASS_FINAL);
        assert_int_equal(gateway_outcome_retry_class(GW_FAILED),
                         RETRY_CLASS_FINAL);
        assert_int_equal(gateway_outcome_retry_class(GW_DEFECT),
                         RETRY_CLASS_FINAL);
        assert_int_equal(gateway_outcome_retry_class(GW_NOT_FOUND),
                         RETRY_CLASS_FINAL);
        assert_int_equal(gateway_outcome_retry_class(GW_UNKNOWN),
                         RETRY_CLASS_UNKNOWN);
        assert_int_equal(gateway_outcome_retry_class(GW_IN_PROGRESS),
                         RETRY_CLASS_BUSY);
        assert_int_equal(gateway_outcome_retry_class(GW_RETRY_AFTER),
                         RETRY_CLASS_THROTTLED);
        for (int o = GW_SUCCEEDED; o <= GW_NOT_FOUND; o++)
                assert_string_not_equal(
                    gateway_outcome_name((enum gw_outcome)o), "?");
        for (int t = GW_TRANSPORT_OK; t <= GW_TRANSPORT_OTHER; t++)
                assert_string_not_equal(
                    gateway_transport_name((enum gw_transport)t), "?");
}

int main(void)
{
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_table),
                cmocka_unit_test(test_never_failed_without_refusal),
                cmocka_unit_test(test_replayed_and_unchecked),
                cmocka_unit_test(test_long_charge_id),
                cmocka_unit_test(test_long_vietnamese_decline),
                cmocka_unit_test(test_invalid_utf8_message),
                cmocka_unit_test(test_nul_and_controls),
                cmocka_unit_test(test_identifiers),
                cmocka_unit_test(test_odd_numbers),
                cmocka_unit_test(test_deep_nesting),
                cmocka_unit_test(test_mutations),
                cmocka_unit_test(test_text_clean),
                cmocka_unit_test(test_text_clean_redacts),
                cmocka_unit_test(test_retry_class),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
