/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Unit tests of gateway/request: the charge body is the same bytes for the
 * same request, whatever else happens; URLs are encoded; keys are checked.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "gateway/request.h"

static struct gateway_charge_req sample(void)
{
        struct gateway_charge_req r = { 0 };

        r.payment_id     = "7d6f1f4e-3d1b-4f57-9a51-1b2c3d4e5f60";
        r.provider_key   = "pk_0123456789abcdef";
        r.tenant_id      = "shop-1";
        r.order_id       = "10063";
        r.currency       = "VND";
        r.payment_method = "pm_tok_abc";
        r.amount         = 1250000;
        return r;
}

static void test_body_exact(void **state)
{
        struct gateway_charge_req r = sample();
        char err[128];
        char *b;

        (void)state;
        b = gateway_charge_body(&r, err, sizeof(err));
        assert_non_null(b);
        assert_string_equal(
            b, "{\"amount\":1250000,\"currency\":\"VND\",\"payment_method\""
               ":\"pm_tok_abc\",\"reference\":\"7d6f1f4e-3d1b-4f57-9a51-"
               "1b2c3d4e5f60\",\"metadata\":{\"tenant_id\":\"shop-1\","
               "\"order_id\":\"10063\"}}");
        free(b);
}

/* The same request, built 1000 times and with other fields around, gives
 * the same bytes: the body depends on nothing but the request. */
static void test_body_deterministic(void **state)
{
        struct gateway_charge_req r = sample();
        char err[128];
        char *first, *b;

        (void)state;
        first = gateway_charge_body(&r, err, sizeof(err));
        assert_non_null(first);
        for (int i = 0; i < 1000; i++) {
                r.resume       = (i & 1) != 0;
                r.provider_key = (i & 2) ? "other-key" : "pk";
                b              = gateway_charge_body(&r, err, sizeof(err));
                assert_non_null(b);
                assert_string_equal(b, first);
                free(b);
        }
        free(first);
}

static void test_body_escapes(void **state)
{
        struct gateway_charge_req r = sample();
        char err[128];
        char *b;

        (void)state;
        r.order_id = "a\"b\\c\n";
        r.amount   = 9007199254740991LL;
        b          = gateway_charge_body(&r, err, sizeof(err));
        assert_non_null(b);
        assert_non_null(strstr(b, "\"order_id\":\"a\\\"b\\\\c\\n\""));
        assert_non_null(strstr(b, "\"amount\":9007199254740991,"));
        free(b);
}

static void test_body_rejects(void **state)
{
        struct gateway_charge_req r;
        char err[128];

        (void)state;
        r        = sample();
        r.amount = 0;
        assert_null(gateway_charge_body(&r, err, sizeof(err)));
        r.amount = -5;
        assert_null(gateway_charge_body(&r, err, sizeof(err)));
        r.amount = 9007199254740992LL;
        assert_null(gateway_charge_body(&r, err, sizeof(err)));
        r            = sample();
        r.payment_id = NULL;
        assert_null(gateway_charge_body(&r, err, sizeof(err)));
        r           = sample();
        r.tenant_id = "";
        assert_null(gateway_charge_body(&r, err, sizeof(err)));
        r          = sample();
        r.currency = NULL;
        assert_null(gateway_charge_body(&r, err, sizeof(err)));
        /* invalid UTF-8; the reason never repeats the value */
        r                = sample();
        r.payment_method = "pm_\xff\xfe_secret";
        assert_null(gateway_charge_body(&r, err, sizeof(err)));
        assert_null(strstr(err, "secret"));
        assert_null(strstr(err, "pm_"));
}

static void test_urls(void **state)
{
        char *u;

        (void)state;
        u = gateway_charges_url("http://127.0.0.1:8080");
        assert_string_equal(u, "http://127.0.0.1:8080/v1/charges");
        free(u);
        u = gateway_charges_url("http://127.0.0.1:8080//");
        assert_string_equal(u, "http://127.0.0.1:8080/v1/charges");
        free(u);
        u = gateway_query_url("https://psp.test/", "pay-1_~.x");
        assert_string_equal(u,
                            "https://psp.test/v1/charges?reference=pay-1_~.x");
        free(u);
        u = gateway_query_url("https://psp.test", "a b&c=d/é");
        assert_string_equal(u, "https://psp.test/v1/charges?reference="
                               "a%20b%26c%3Dd%2F%C3%A9");
        free(u);
}

static void test_key_valid(void **state)
{
        char long_key[300];

        (void)state;
        assert_true(gateway_key_valid("pk_0123456789abcdef"));
        assert_true(gateway_key_valid("a"));
        assert_false(gateway_key_valid(NULL));
        assert_false(gateway_key_valid(""));
        assert_false(gateway_key_valid("a\r\nX-Evil: 1"));
        assert_false(gateway_key_valid("a b"));
        assert_false(gateway_key_valid("caf\xc3\xa9"));
        memset(long_key, 'k', 255);
        long_key[255] = '\0';
        assert_true(gateway_key_valid(long_key));
        long_key[255] = 'k';
        long_key[256] = '\0';
        assert_false(gateway_key_valid(long_key));
}

int main(void)
{
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_body_exact),
                cmocka_unit_test(test_body_deterministic),
                cmocka_unit_test(test_body_escapes),
                cmocka_unit_test(test_body_rejects),
                cmocka_unit_test(test_urls),
                cmocka_unit_test(test_key_valid),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
