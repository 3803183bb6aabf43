/* SPDX-License-Identifier: Apache-2.0 */
/*
 * test_peek: intent_peek, the sift's reader of (tenant_id, event key) from
 * raw JSON. It must find the top-level members of well-formed intents
 * (nested look-alikes, strings holding braces and quotes, white space,
 * any member order) and give up on everything it cannot read for certain:
 * escapes in a key or a wanted value, a member twice, a tenant outside
 * [A-Za-z0-9._-]{1,64}, truncation, bytes after the object, deep nesting.
 * Where it succeeds on an input that intent_parse accepts, both name the
 * same identity (the fuzzer checks this on every input, fuzz_intent.c).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "intent/intent.h"
#include "intent/peek.h"

#define UUID "0b6f5c1e-8f1a-4c1e-9d7a-2f3e4a5b6c7d"

static bool peek(const char *s, struct intent_peek *p)
{
        return intent_peek(s, strlen(s), p);
}

/* An intent that decodes OK: the peek agrees with intent_parse. */
static void agrees(const char *json)
{
        struct intent_peek p;
        struct intent in;

        intent_init(&in);
        intent_parse(json, strlen(json), &in);
        assert_int_equal(in.verdict, INTENT_OK);
        assert_true(peek(json, &p));
        assert_string_equal(p.tenant_id, in.tenant_id);
        assert_string_equal(p.event_key, in.event_key);
        intent_reset(&in);
}

static void test_found(void **state)
{
        (void)state;
        agrees("{\"schema_version\":1,\"event_id\":\"" UUID "\","
               "\"tenant_id\":\"shop-1\",\"idempotency_key\":\"k\","
               "\"order_id\":\"o\",\"customer_id\":\"c\",\"amount\":1,"
               "\"currency\":\"VND\",\"payment_method\":\"pm_tok\","
               "\"occurred_at\":\"2026-11-29T10:47:03Z\"}");
        /* members in another order, white space, nested look-alikes and
         * strings holding what the skipper must not count */
        agrees(" \n{ \"metadata\" : {\"event_id\":\"x\",\"tenant_id\":"
               "\"evil\",\"}\":\"]\\\"}{[\"},"
               "\"description\":\"a } b \\\" { c\","
               "\"amount\" : 12 , \"currency\":\"EUR\","
               "\"tenant_id\"\t:\t\"T.x_9-Z\",\"idempotency_key\":\"k\","
               "\"order_id\":\"o\",\"customer_id\":\"c\","
               "\"payment_method\":\"pm_tok\",\"schema_version\":1,"
               "\"occurred_at\":\"2026-11-29T10:47:03Z\","
               "\"event_id\":\"0B6F5C1E-8F1A-4C1E-9D7A-2F3E4A5B6C7D\"}\r\n");
}

static void test_event_key(void **state)
{
        struct intent_peek p;
        char want[INTENT_EVENT_KEY_SIZE];

        (void)state;
        assert_true(
            peek("{\"tenant_id\":\"t\",\"event_id\":\"" UUID "\"}", &p));
        assert_string_equal(p.tenant_id, "t");
        assert_string_equal(p.event_key, UUID);
        /* not a UUID: the digest of its bytes, as the decoder's key */
        assert_true(peek("{\"event_id\":\"e-1\",\"tenant_id\":\"t\"}", &p));
        intent_event_key("e-1", 3, want);
        assert_string_equal(p.event_key, want);
        assert_int_equal(strncmp(want, "sha256:", 7), 0);
        assert_int_equal(strlen(want), 7 + 64);
}

static void test_gives_up(void **state)
{
        static const char *const bad[] = {
                "",
                "   ",
                "[]",
                "{}",
                "null",
                "{\"tenant_id\":\"t\"}",
                "{\"event_id\":\"e\"}",
                /* an escape in a wanted value, or in any key */
                "{\"tenant_id\":\"t\",\"event_id\":\"e\\u0031\"}",
                "{\"tenant_id\":\"t\\/\",\"event_id\":\"e\"}",
                "{\"tenant\\u005fid\":\"t\",\"event_id\":\"e\"}",
                "{\"x\\n\":1,\"tenant_id\":\"t\",\"event_id\":\"e\"}",
                /* a control character, an empty value, not a string */
                "{\"tenant_id\":\"t\",\"event_id\":\"e\x01\"}",
                "{\"tenant_id\":\"t\",\"event_id\":\"\"}",
                "{\"tenant_id\":\"t\",\"event_id\":7}",
                "{\"tenant_id\":null,\"event_id\":\"e\"}",
                /* twice (the decoder refuses duplicate keys) */
                "{\"tenant_id\":\"t\",\"event_id\":\"e\",\"tenant_id\":\"u\"}",
                "{\"event_id\":\"e\",\"tenant_id\":\"t\",\"event_id\":\"e\"}",
                /* a tenant the decoder would not keep as it is */
                "{\"tenant_id\":\"t t\",\"event_id\":\"e\"}",
                "{\"tenant_id\":\"t\xc3\xa9\",\"event_id\":\"e\"}",
                /* truncated anywhere, or more after the object */
                "{\"tenant_id\":\"t\",\"event_id\":\"e\"",
                "{\"tenant_id\":\"t\",\"event_id\":\"e",
                "{\"tenant_id\":\"t\",\"event_id\":",
                "{\"tenant_id\":\"t\",\"event_id\"",
                "{\"tenant_id\":\"t\",\"a\":[1,2",
                "{\"tenant_id\":\"t\",\"a\":\"x",
                "{\"tenant_id\":\"t\",\"event_id\":\"e\"}x",
                "{\"tenant_id\":\"t\",\"event_id\":\"e\"}{}",
                /* no separator, no colon, an empty value */
                "{\"tenant_id\":\"t\" \"event_id\":\"e\"}",
                "{\"tenant_id\" \"t\",\"event_id\":\"e\"}",
                "{\"a\":,\"tenant_id\":\"t\",\"event_id\":\"e\"}",
                "{\"tenant_id\":\"t\",\"event_id\":\"e\",}",
        };
        struct intent_peek p;

        (void)state;
        for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
                if (peek(bad[i], &p))
                        fail_msg("peeked #%zu: %s", i, bad[i]);
        }
        assert_false(intent_peek(NULL, 0, &p));
}

static void test_tenant_bounds(void **state)
{
        char json[256], tenant[80];
        struct intent_peek p;

        (void)state;
        memset(tenant, 'a', 64);
        tenant[64] = '\0';
        snprintf(json, sizeof(json),
                 "{\"tenant_id\":\"%s\",\"event_id\":\"e\"}", tenant);
        assert_true(peek(json, &p));
        assert_string_equal(p.tenant_id, tenant);
        tenant[64] = 'a';
        tenant[65] = '\0';
        snprintf(json, sizeof(json),
                 "{\"tenant_id\":\"%s\",\"event_id\":\"e\"}", tenant);
        assert_false(peek(json, &p));
}

static void test_depth(void **state)
{
        char json[512];
        size_t n = 0;
        struct intent_peek p;

        (void)state;
        /* INTENT_PEEK_MAX_DEPTH levels: read; one more: given up */
        for (int extra = 0; extra < 2; extra++) {
                int depth = INTENT_PEEK_MAX_DEPTH + extra;

                n = (size_t)snprintf(json, sizeof(json), "{\"a\":");
                for (int i = 0; i < depth; i++)
                        json[n++] = '[';
                for (int i = 0; i < depth; i++)
                        json[n++] = ']';
                snprintf(json + n, sizeof(json) - n,
                         ",\"tenant_id\":\"t\",\"event_id\":\"e\"}");
                assert_int_equal(peek(json, &p), extra == 0);
        }
}

/* Never reads past len: every prefix of a good message, copied to a heap
 * block of exactly its length (ASan and valgrind see an overrun). */
static void test_prefixes(void **state)
{
        static const char good[] =
            "{\"tenant_id\":\"t\",\"x\":[{\"y\":\"}\\\"\"}],\"event_id\":"
            "\"e\"}";
        struct intent_peek p;

        (void)state;
        for (size_t len = 0; len < sizeof(good) - 1; len++) {
                char *b = malloc(len ? len : 1);

                assert_non_null(b);
                memcpy(b, good, len);
                assert_false(intent_peek(b, len, &p));
                free(b);
        }
        assert_true(intent_peek(good, sizeof(good) - 1, &p));
}

int main(void)
{
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_found),
                cmocka_unit_test(test_event_key),
                cmocka_unit_test(test_gives_up),
                cmocka_unit_test(test_tenant_bounds),
                cmocka_unit_test(test_depth),
                cmocka_unit_test(test_prefixes),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
