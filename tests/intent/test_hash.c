/* SPDX-License-Identifier: Apache-2.0 */
/*
 * test_hash: the canonical request hash against the vectors of
 * docs/request-hash.md (cross-checked there with an independent Python
 * implementation), and its independence from field order and white space.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "intent/hash.h"
#include "intent/intent.h"

struct vector {
        struct intent_hash_fields f;
        const char *canonical;
        const char *sha256;
};

static const struct vector vectors[] = {
        { { "shop-1", "ord-10063-pay-1", "10063", "cus_42", 1250000, "VND",
            "pm_tok_abc" },
          "{\"amount\":1250000,\"currency\":\"VND\",\"customer_id\":\"cus_42\","
          "\"idempotency_key\":\"ord-10063-pay-1\",\"order_id\":\"10063\","
          "\"payment_method\":\"pm_tok_abc\",\"tenant_id\":\"shop-1\"}",
          "137493ebdebc9a7754362c5f2819376378f710366e320298425e14afe36ca343" },
        { { "shop-1", "k-1",
            "\xc4\x91\xc6\xa1n-h\xc3\xa0ng-\xe2\x84\x96"
            "42",
            "Nguy\xe1\xbb\x85n V\xc4\x83n A", 50000, "VND", "pm_tok_abc" },
          "{\"amount\":50000,\"currency\":\"VND\",\"customer_id\":\"Nguy"
          "\xe1\xbb\x85n V\xc4\x83n A\",\"idempotency_key\":\"k-1\","
          "\"order_id\":\"\xc4\x91\xc6\xa1n-h\xc3\xa0ng-\xe2\x84\x96"
          "42\",\"payment_method\":\"pm_tok_abc\",\"tenant_id\":\"shop-1\"}",
          "f20abd47def6506946d5f38673b57c9c708daf46a8dec66759c1f99309ac82ba" },
        { { "t.1_x-Y", "a\"b\\c/d", "o/1", "c", 1, "USD", "pm" },
          "{\"amount\":1,\"currency\":\"USD\",\"customer_id\":\"c\","
          "\"idempotency_key\":\"a\\\"b\\\\c/d\",\"order_id\":\"o/1\","
          "\"payment_method\":\"pm\",\"tenant_id\":\"t.1_x-Y\"}",
          "ffdcdc99f67d58015991b8166954ef1957820ee54946f27cee26e38b16a8f8ea" },
        { { "t", "k", "a\b\t\n\f\r\x01\x1f\x7fz", "c", 42, "EUR", "pm" },
          "{\"amount\":42,\"currency\":\"EUR\",\"customer_id\":\"c\","
          "\"idempotency_key\":\"k\",\"order_id\":\"a\\b\\t\\n\\f\\r"
          "\\u0001\\u001f\x7fz\",\"payment_method\":\"pm\","
          "\"tenant_id\":\"t\"}",
          "0d8baf2bec367a5ff5cdfca6a1dbd462c14c29d15fa266d53011e95395203a8d" },
        { { "shop-2", "k2", "o-\xf0\x9f\x98\x80", "cus",
            INT64_C(9007199254740991), "JPY", "pm_\xc3\xa9" },
          "{\"amount\":9007199254740991,\"currency\":\"JPY\","
          "\"customer_id\":\"cus\",\"idempotency_key\":\"k2\","
          "\"order_id\":\"o-\xf0\x9f\x98\x80\",\"payment_method\":\"pm_"
          "\xc3\xa9\",\"tenant_id\":\"shop-2\"}",
          "0983f2e3cb7df2f8baf208c59e59b85ca8240e97b4432c8bacdbcc61dc4225bf" },
        { { "shop-1", "ord-10063-pay-1", "10063", "cus_42", 1250001, "VND",
            "pm_tok_abc" },
          NULL,
          "21627841fefe799aca08456087927f2147447ee6f4a853300f77b3f3ac6b1a47" },
        { { "shop-2", "ord-10063-pay-1", "10063", "cus_42", 1250000, "VND",
            "pm_tok_abc" },
          NULL,
          "f5b17ce777541967b30062f08d4e884a5621a320f38c877f4c5ab6a21140fbfe" },
};

static void test_vectors(void **state)
{
        (void)state;
        for (size_t i = 0; i < sizeof(vectors) / sizeof(vectors[0]); i++) {
                const struct vector *v = &vectors[i];
                unsigned char raw[INTENT_HASH_LEN];
                char hex[INTENT_HASH_HEX_SIZE];
                char *canon = NULL;
                size_t len;

                assert_int_equal(intent_hash_canonical(&v->f, &canon, &len), 0);
                if (v->canonical != NULL) {
                        assert_string_equal(canon, v->canonical);
                        assert_int_equal(len, strlen(v->canonical));
                }
                free(canon);
                assert_int_equal(intent_hash_compute(&v->f, raw, hex), 0);
                assert_string_equal(hex, v->sha256);
        }
}

static void test_null_field_refused(void **state)
{
        struct intent_hash_fields f = vectors[0].f;
        unsigned char raw[INTENT_HASH_LEN];
        char *canon = (char *)"x";
        size_t len  = 7;

        (void)state;
        f.order_id = NULL;
        assert_int_equal(intent_hash_canonical(&f, &canon, &len), -1);
        assert_null(canon);
        assert_int_equal(len, 0);
        assert_int_equal(intent_hash_compute(&f, raw, NULL), -1);
}

/* The same intent written three ways; event_id, occurred_at, description
 * and metadata differ too and must not matter. */
static const char *const same_intent[] = {
        "{\"schema_version\":1,\"event_id\":"
        "\"6f1c2a8e-3b4d-4e5f-9a0b-1c2d3e4f5a6b\",\"tenant_id\":\"shop-1\","
        "\"idempotency_key\":\"ord-10063-pay-1\",\"order_id\":\"10063\","
        "\"customer_id\":\"cus_42\",\"amount\":1250000,\"currency\":\"VND\","
        "\"payment_method\":\"pm_tok_abc\","
        "\"occurred_at\":\"2026-11-29T10:47:03.123Z\"}",
        "{\n  \"payment_method\" : \"pm_tok_abc\",\n  \"currency\": \"VND\",\n"
        "  \"amount\": 1250000, \"customer_id\": \"cus_42\",\n"
        "  \"order_id\": \"\\u0031\\u0030063\", \"idempotency_key\":"
        " \"ord-10063-pay-1\",\n  \"tenant_id\": \"shop-1\",\n"
        "  \"event_id\": \"00000000-0000-4000-8000-000000000001\",\n"
        "  \"occurred_at\": \"2026-11-30T00:00:00+07:00\",\n"
        "  \"schema_version\": 1, \"description\": \"retry\",\n"
        "  \"metadata\": {\"a\": \"b\"}, \"unknown\": [1, 2, 3]\n}\n",
        "\t{ \"tenant_id\":\"shop-1\" ,\"schema_version\":1,"
        "\"idempotency_key\":\"ord-10063-pay-1\",\"amount\":1250000,"
        "\"order_id\":\"10063\",\"customer_id\":\"cus_42\","
        "\"currency\":\"VND\",\"payment_method\":\"pm_tok_\\u0061bc\","
        "\"event_id\":\"6F1C2A8E-3B4D-4E5F-9A0B-1C2D3E4F5A6B\","
        "\"occurred_at\":\"2026-11-29t10:47:03z\"}  ",
};

static void test_order_and_white_space_do_not_matter(void **state)
{
        struct intent in;

        (void)state;
        intent_init(&in);
        for (size_t i = 0; i < sizeof(same_intent) / sizeof(same_intent[0]);
             i++) {
                intent_parse(same_intent[i], strlen(same_intent[i]), &in);
                assert_int_equal(in.verdict, INTENT_OK);
                assert_string_equal(in.request_hash_hex, vectors[0].sha256);
                intent_reset(&in);
        }
}

int main(void)
{
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_vectors),
                cmocka_unit_test(test_null_field_refused),
                cmocka_unit_test(test_order_and_white_space_do_not_matter),
        };

        return cmocka_run_group_tests(tests, NULL, NULL);
}
