/* SPDX-License-Identifier: Apache-2.0 */
/*
 * test_intent: every DLQ reason, every reject rule and its boundaries, the
 * copies an OK intent holds, and the redaction of a rejected one.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>
#include <jansson.h>

#include "intent/intent.h"

#define BASE_EVENT_ID "6f1c2a8e-3b4d-4e5f-9a0b-1c2d3e4f5a6b"

static json_t *base(void)
{
        json_t *o = json_pack(
            "{s:i, s:s, s:s, s:s, s:s, s:s, s:I, s:s, s:s, s:s}",
            "schema_version", 1, "event_id", BASE_EVENT_ID, "tenant_id",
            "shop-1", "idempotency_key", "ord-10063-pay-1", "order_id", "10063",
            "customer_id", "cus_42", "amount", (json_int_t)1250000, "currency",
            "VND", "payment_method", "pm_tok_abc", "occurred_at",
            "2026-11-29T10:47:03.123Z");
        assert_non_null(o);
        return o;
}

/* Parses raw bytes into *in (reset first) and returns the verdict. */
static enum intent_verdict parse_raw(struct intent *in, const char *s,
                                     size_t len)
{
        intent_parse(s, len, in);
        return in->verdict;
}

/* Serializes o (and releases it), parses it, returns the verdict. */
static enum intent_verdict parse_obj(struct intent *in, json_t *o)
{
        char *s = json_dumps(o, JSON_COMPACT | JSON_ENCODE_ANY);
        enum intent_verdict v;

        assert_non_null(s);
        v = parse_raw(in, s, strlen(s));
        free(s);
        json_decref(o);
        return v;
}

static json_t *with(json_t *o, const char *k, json_t *v)
{
        assert_int_equal(json_object_set_new(o, k, v), 0);
        return o;
}

static json_t *without(json_t *o, const char *k)
{
        assert_int_equal(json_object_del(o, k), 0);
        return o;
}

/* A string of n copies of c. Owned by the caller. */
static char *rep(char c, size_t n)
{
        char *s = malloc(n + 1);

        assert_non_null(s);
        memset(s, c, n);
        s[n] = '\0';
        return s;
}

static json_t *rep_str(char c, size_t n)
{
        char *s   = rep(c, n);
        json_t *v = json_string(s);

        free(s);
        return v;
}

/* n copies of a 2-byte UTF-8 character ("đ"). */
static json_t *rep_utf8(size_t n)
{
        char *s = malloc(2 * n + 1);
        json_t *v;

        assert_non_null(s);
        for (size_t i = 0; i < n; i++)
                memcpy(s + 2 * i, "\xc4\x91", 2);
        s[2 * n] = '\0';
        v        = json_string(s);
        free(s);
        return v;
}

static void expect(json_t *o, enum intent_verdict v, const char *reason)
{
        struct intent in;

        intent_init(&in);
        assert_int_equal(parse_obj(&in, o), v);
        assert_string_equal(in.reason, reason);
        intent_reset(&in);
}

#define REJECT(o, code) expect((o), INTENT_REJECTED, (code))
#define OK(o)           expect((o), INTENT_OK, "")

static void expect_raw(const char *s, enum intent_verdict v, const char *reason)
{
        struct intent in;

        intent_init(&in);
        assert_int_equal(parse_raw(&in, s, strlen(s)), v);
        assert_string_equal(in.reason, reason);
        intent_reset(&in);
}

static void test_ok_copies_everything(void **state)
{
        struct intent in;
        json_t *o = base();

        (void)state;
        o = with(o, "description", json_string("2 cups"));
        o = with(o, "metadata",
                 json_pack("{s:s, s:s}", "z", "last", "channel", "web"));
        o = with(o, "unknown_extra", json_pack("[i, {}]", 1));
        intent_init(&in);
        assert_int_equal(parse_obj(&in, o), INTENT_OK);
        assert_string_equal(in.event_id, BASE_EVENT_ID);
        assert_string_equal(in.tenant_id, "shop-1");
        assert_string_equal(in.idempotency_key, "ord-10063-pay-1");
        assert_string_equal(in.order_id, "10063");
        assert_string_equal(in.customer_id, "cus_42");
        assert_true(in.has_amount);
        assert_int_equal(in.amount, 1250000);
        assert_string_equal(in.currency, "VND");
        assert_string_equal(in.payment_method, "pm_tok_abc");
        assert_string_equal(in.description, "2 cups");
        assert_string_equal(in.occurred_at, "2026-11-29T10:47:03.123Z");
        assert_string_equal(in.request_hash_hex, "137493ebdebc9a7754362c5f28193"
                                                 "76378f710366e320298425e14afe3"
                                                 "6ca343");
        assert_string_equal(in.message, "");
        intent_reset(&in);
        assert_null(in.event_id);
        intent_reset(&in); /* twice is fine */
}

static void test_optional_absent_or_null(void **state)
{
        struct intent in;

        (void)state;
        intent_init(&in);
        assert_int_equal(parse_obj(&in, base()), INTENT_OK);
        assert_null(in.description);
        intent_reset(&in);
        assert_int_equal(
            parse_obj(&in, with(with(base(), "description", json_null()),
                                "metadata", json_null())),
            INTENT_OK);
        assert_null(in.description);
        intent_reset(&in);
        assert_int_equal(
            parse_obj(&in, with(base(), "metadata", json_object())), INTENT_OK);
        intent_reset(&in);
}

static void test_dlq_reasons(void **state)
{
        (void)state;
        expect_raw("", INTENT_DLQ, "not_json");
        expect_raw("{", INTENT_DLQ, "not_json");
        expect_raw("hello", INTENT_DLQ, "not_json");
        expect_raw("{\"a\":1} x", INTENT_DLQ, "not_json");
        expect_raw("{\"a\":NaN}", INTENT_DLQ, "not_json");
        expect_raw("{\"a\":\"\\ud800\"}", INTENT_DLQ, "not_json");
        expect_raw("[1,2]", INTENT_DLQ, "not_object");
        expect_raw("\"str\"", INTENT_DLQ, "not_object");
        expect_raw("42", INTENT_DLQ, "not_object");
        expect_raw("null", INTENT_DLQ, "not_object");
        expect_raw("{\"a\":\"\xff\"}", INTENT_DLQ, "invalid_utf8");
        expect_raw("{\"a\":\"\xc0\xaf\"}", INTENT_DLQ, "invalid_utf8");
        expect_raw("{\"a\":1,\"a\":1}", INTENT_DLQ, "duplicate_key");
        expect_raw("{\"a\":1e400}", INTENT_DLQ, "number_out_of_range");
        expect(without(base(), "event_id"), INTENT_DLQ, "missing_event_id");
        expect(with(base(), "event_id", json_string("")), INTENT_DLQ,
               "missing_event_id");
        expect(with(base(), "event_id", json_integer(5)), INTENT_DLQ,
               "missing_event_id");
        expect(with(base(), "event_id", json_null()), INTENT_DLQ,
               "missing_event_id");
        expect(without(base(), "tenant_id"), INTENT_DLQ, "missing_tenant_id");
        expect(with(base(), "tenant_id", json_string("")), INTENT_DLQ,
               "missing_tenant_id");
        expect(with(base(), "tenant_id", json_true()), INTENT_DLQ,
               "missing_tenant_id");
        expect(without(base(), "idempotency_key"), INTENT_DLQ,
               "missing_idempotency_key");
        expect(with(base(), "idempotency_key", json_string("")), INTENT_DLQ,
               "missing_idempotency_key");
        expect(with(base(), "idempotency_key", json_array()), INTENT_DLQ,
               "missing_idempotency_key");
        /* The first missing one is named. */
        expect(without(without(base(), "idempotency_key"), "event_id"),
               INTENT_DLQ, "missing_event_id");
}

static void test_dlq_null_and_binary(void **state)
{
        struct intent in;
        static const char bin[] = { '{', '}', '\0', '{', '}' };

        (void)state;
        intent_init(&in);
        intent_parse(NULL, 10, &in);
        assert_int_equal(in.verdict, INTENT_DLQ);
        assert_string_equal(in.reason, "not_json");
        assert_int_equal(parse_raw(&in, bin, sizeof(bin)), INTENT_DLQ);
        assert_string_equal(in.reason, "not_json");
        intent_reset(&in);
}

static void test_schema_version(void **state)
{
        (void)state;
        REJECT(without(base(), "schema_version"), "invalid_schema_version");
        REJECT(with(base(), "schema_version", json_integer(2)),
               "invalid_schema_version");
        REJECT(with(base(), "schema_version", json_integer(0)),
               "invalid_schema_version");
        REJECT(with(base(), "schema_version", json_real(1.0)),
               "invalid_schema_version");
        REJECT(with(base(), "schema_version", json_string("1")),
               "invalid_schema_version");
}

static void test_event_id(void **state)
{
        (void)state;
        REJECT(with(base(), "event_id", json_string("not-a-uuid")),
               "invalid_event_id");
        REJECT(with(base(), "event_id",
                    json_string("6f1c2a8e3b4d4e5f9a0b1c2d3e4f5a6b")),
               "invalid_event_id");
        OK(with(base(), "event_id",
                json_string("6F1C2A8E-3B4D-4E5F-9A0B-1C2D3E4F5A6B")));
}

static void test_tenant_id(void **state)
{
        (void)state;
        OK(with(base(), "tenant_id", rep_str('t', 64)));
        REJECT(with(base(), "tenant_id", rep_str('t', 65)),
               "invalid_tenant_id");
        OK(with(base(), "tenant_id", json_string("A.z_0-9")));
        OK(with(base(), "tenant_id", json_string("x")));
        REJECT(with(base(), "tenant_id", json_string("shop 1")),
               "invalid_tenant_id");
        REJECT(with(base(), "tenant_id", json_string("shop/1")),
               "invalid_tenant_id");
        REJECT(with(base(), "tenant_id", json_string("sh\xc3\xb6p")),
               "invalid_tenant_id");
}

static void test_idempotency_key(void **state)
{
        (void)state;
        OK(with(base(), "idempotency_key", rep_str('k', 255)));
        REJECT(with(base(), "idempotency_key", rep_str('k', 256)),
               "invalid_idempotency_key");
        OK(with(base(), "idempotency_key", json_string(" ~!\"#/\\")));
        REJECT(with(base(), "idempotency_key", json_string("k\x7f")),
               "invalid_idempotency_key");
        REJECT(with(base(), "idempotency_key", json_string("k\n")),
               "invalid_idempotency_key");
        REJECT(with(base(), "idempotency_key", json_string("k\xc3\xa9")),
               "invalid_idempotency_key");
}

static void test_order_and_customer_id(void **state)
{
        (void)state;
        OK(with(base(), "order_id", rep_str('o', 64)));
        REJECT(with(base(), "order_id", rep_str('o', 65)), "invalid_order_id");
        /* 64 two-byte characters (128 bytes) are 64 characters. */
        OK(with(base(), "order_id", rep_utf8(64)));
        REJECT(with(base(), "order_id", rep_utf8(65)), "invalid_order_id");
        REJECT(with(base(), "order_id", json_string("")), "invalid_order_id");
        REJECT(with(base(), "order_id", json_integer(10063)),
               "invalid_order_id");
        REJECT(without(base(), "order_id"), "invalid_order_id");
        OK(with(base(), "customer_id", rep_utf8(64)));
        REJECT(with(base(), "customer_id", rep_str('c', 65)),
               "invalid_customer_id");
        REJECT(with(base(), "customer_id", json_string("")),
               "invalid_customer_id");
        REJECT(without(base(), "customer_id"), "invalid_customer_id");
        /* U+0000 cannot live in a C string: rejected, not truncated. */
        REJECT(with(base(), "order_id", json_stringn("a\0b", 3)),
               "invalid_order_id");
}

static void test_amount(void **state)
{
        (void)state;
        OK(with(base(), "amount", json_integer(1)));
        OK(with(base(), "amount", json_integer(INT64_C(9007199254740991))));
        REJECT(with(base(), "amount", json_integer(INT64_C(9007199254740992))),
               "invalid_amount");
        REJECT(with(base(), "amount", json_integer(0)), "invalid_amount");
        REJECT(with(base(), "amount", json_integer(-5)), "invalid_amount");
        REJECT(with(base(), "amount", json_real(10.0)), "invalid_amount");
        REJECT(with(base(), "amount", json_real(10.5)), "invalid_amount");
        REJECT(with(base(), "amount", json_string("100")), "invalid_amount");
        REJECT(without(base(), "amount"), "invalid_amount");
}

/* Raw text, because jansson would print 1e3 and 10.0 its own way. */
static void test_amount_raw_forms(void **state)
{
        static const char head[] =
            "{\"schema_version\":1,\"event_id\":\"" BASE_EVENT_ID
            "\",\"tenant_id\":\"t\",\"idempotency_key\":\"k\","
            "\"order_id\":\"o\",\"customer_id\":\"c\",\"currency\":\"USD\","
            "\"payment_method\":\"pm\",\"occurred_at\":"
            "\"2026-11-29T10:47:03Z\",\"amount\":";
        static const struct {
                const char *amount;
                enum intent_verdict v;
        } cases[] = {
                { "100}", INTENT_OK },
                { "1e3}", INTENT_REJECTED },
                { "10.0}", INTENT_REJECTED },
                { "-0}", INTENT_REJECTED },
                { "9007199254740991}", INTENT_OK },
                { "9007199254740992}", INTENT_REJECTED },
                { "9223372036854775808}", INTENT_REJECTED }, /* > int64 */
                { "123456789012345678901234567890}", INTENT_REJECTED },
                { "100,\"x\":123456789012345678901234567890}", INTENT_OK },
                { "100,\"schema_version\":1}", INTENT_DLQ },
        };
        (void)state;
        for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
                char buf[512];
                struct intent in;

                snprintf(buf, sizeof(buf), "%s%s", head, cases[i].amount);
                intent_init(&in);
                assert_int_equal(parse_raw(&in, buf, strlen(buf)), cases[i].v);
                if (cases[i].v == INTENT_REJECTED)
                        assert_string_equal(in.reason, "invalid_amount");
                if (cases[i].v == INTENT_OK &&
                    strncmp(cases[i].amount, "100", 3) == 0)
                        assert_int_equal(in.amount, 100);
                intent_reset(&in);
        }
}

static void test_currency(void **state)
{
        (void)state;
        OK(with(base(), "currency", json_string("USD")));
        OK(with(base(), "currency", json_string("EUR")));
        OK(with(base(), "currency", json_string("JPY")));
        REJECT(with(base(), "currency", json_string("usd")),
               "invalid_currency");
        REJECT(with(base(), "currency", json_string("ABC")),
               "invalid_currency");
        REJECT(with(base(), "currency", json_string("XXX")),
               "invalid_currency");
        REJECT(with(base(), "currency", json_string("XAU")),
               "invalid_currency");
        REJECT(with(base(), "currency", json_string("US")), "invalid_currency");
        REJECT(with(base(), "currency", json_string("USDX")),
               "invalid_currency");
        REJECT(with(base(), "currency", json_integer(840)), "invalid_currency");
        REJECT(without(base(), "currency"), "invalid_currency");
}

static void test_payment_method(void **state)
{
        (void)state;
        OK(with(base(), "payment_method", rep_str('p', 255)));
        REJECT(with(base(), "payment_method", rep_str('p', 256)),
               "invalid_payment_method");
        REJECT(with(base(), "payment_method", json_string("")),
               "invalid_payment_method");
        REJECT(without(base(), "payment_method"), "invalid_payment_method");
}

static void test_description(void **state)
{
        (void)state;
        OK(with(base(), "description", rep_utf8(500)));
        OK(with(base(), "description", json_string("")));
        REJECT(with(base(), "description", rep_str('d', 501)),
               "invalid_description");
        REJECT(with(base(), "description", json_integer(1)),
               "invalid_description");
}

static json_t *meta_pairs(size_t n)
{
        json_t *m = json_object();

        for (size_t i = 0; i < n; i++) {
                char k[32];

                snprintf(k, sizeof(k), "k%zu", i);
                json_object_set_new(m, k, json_string("v"));
        }
        return m;
}

static void test_metadata(void **state)
{
        char *k40 = rep('m', 40), *k41 = rep('m', 41);

        (void)state;
        OK(with(base(), "metadata", meta_pairs(20)));
        REJECT(with(base(), "metadata", meta_pairs(21)), "invalid_metadata");
        OK(with(base(), "metadata", json_pack("{s:s}", k40, "v")));
        REJECT(with(base(), "metadata", json_pack("{s:s}", k41, "v")),
               "invalid_metadata");
        OK(with(base(), "metadata", json_pack("{s:o}", "k", rep_utf8(500))));
        REJECT(with(base(), "metadata", json_pack("{s:o}", "k", rep_utf8(501))),
               "invalid_metadata");
        REJECT(with(base(), "metadata", json_pack("{s:i}", "k", 1)),
               "invalid_metadata");
        REJECT(with(base(), "metadata", json_pack("{s:n}", "k")),
               "invalid_metadata");
        REJECT(with(base(), "metadata", json_pack("{s:{}}", "k")),
               "invalid_metadata");
        REJECT(with(base(), "metadata", json_pack("[s]", "k")),
               "invalid_metadata");
        REJECT(with(base(), "metadata", json_string("k=v")),
               "invalid_metadata");
        free(k40);
        free(k41);
}

static void test_occurred_at(void **state)
{
        (void)state;
        OK(with(base(), "occurred_at", json_string("2026-11-29T10:47:03Z")));
        OK(with(base(), "occurred_at",
                json_string("2024-02-29T23:59:60.5+07:00")));
        REJECT(with(base(), "occurred_at", json_string("2026-11-29")),
               "invalid_occurred_at");
        REJECT(with(base(), "occurred_at", json_string("2026-02-30T00:00:00Z")),
               "invalid_occurred_at");
        REJECT(with(base(), "occurred_at", json_string("2026-11-29 10:47:03Z")),
               "invalid_occurred_at");
        REJECT(with(base(), "occurred_at", json_integer(1764413223)),
               "invalid_occurred_at");
        REJECT(without(base(), "occurred_at"), "invalid_occurred_at");
}

static void test_card_and_email_guard(void **state)
{
        (void)state;
        REJECT(with(base(), "idempotency_key", json_string("4111111111111111")),
               "card_number_in_field");
        REJECT(with(base(), "idempotency_key",
                    json_string("pay-4111 1111 1111 1111")),
               "card_number_in_field");
        REJECT(with(base(), "idempotency_key", json_string("bob@example.com")),
               "email_in_field");
        REJECT(with(base(), "payment_method", json_string("378282246310005")),
               "card_number_in_field");
        REJECT(with(base(), "payment_method", json_string("pm_a@b.io")),
               "email_in_field");
        REJECT(with(base(), "metadata",
                    json_pack("{s:s}", "card", "4111-1111-1111-1111")),
               "card_number_in_field");
        REJECT(with(base(), "metadata",
                    json_pack("{s:s}", "bob@example.com", "x")),
               "email_in_field");
        REJECT(with(base(), "metadata",
                    json_pack("{s:s}", "4111111111111111", "x")),
               "card_number_in_field");
        /* Luhn-invalid digits are not a card number. */
        OK(with(base(), "idempotency_key", json_string("4111111111111112")));
        /* The guard comes first, before any other rule. */
        REJECT(with(with(base(), "payment_method",
                         json_string("4111111111111111")),
                    "amount", json_integer(0)),
               "card_number_in_field");
}

/* Nothing of the raw value in any field a result repeats, nor in message. */
static void test_rejected_is_redacted(void **state)
{
        struct intent in;
        json_t *o = base();

        (void)state;
        o = with(o, "event_id", json_string("4111111111111111"));
        o = with(o, "tenant_id", json_string("4111111111111111"));
        o = with(o, "idempotency_key",
                 json_string("k-4111 1111 1111 1111-bob@example.com"));
        o = with(o, "order_id", json_string("alice@example.org"));
        o = with(o, "currency", json_string("usd"));
        intent_init(&in);
        assert_int_equal(parse_obj(&in, o), INTENT_REJECTED);
        assert_string_equal(in.reason, "card_number_in_field");
        assert_string_equal(in.message,
                            "idempotency_key contains a card number");
        assert_string_equal(in.event_id, "************1111");
        assert_string_equal(in.tenant_id, "************1111");
        /* The e-mail's local part ("1111-bob") swallows the last group. */
        assert_string_equal(in.idempotency_key, "k-**** **** **** [email]");
        assert_string_equal(in.order_id, "[email]");
        assert_null(in.currency); /* invalid: not kept */
        assert_true(in.has_amount);
        assert_int_equal(in.amount, 1250000);
        assert_null(in.customer_id);
        assert_null(in.payment_method);
        intent_reset(&in);
}

static void test_rejected_keeps_valid_parts(void **state)
{
        struct intent in;

        (void)state;
        intent_init(&in);
        assert_int_equal(
            parse_obj(&in, with(base(), "amount", json_integer(0))),
            INTENT_REJECTED);
        assert_string_equal(in.reason, "invalid_amount");
        assert_string_equal(in.event_id, BASE_EVENT_ID);
        assert_string_equal(in.tenant_id, "shop-1");
        assert_string_equal(in.idempotency_key, "ord-10063-pay-1");
        assert_string_equal(in.order_id, "10063");
        assert_false(in.has_amount);
        assert_string_equal(in.currency, "VND");
        intent_reset(&in);
        assert_int_equal(
            parse_obj(&in, with(base(), "order_id", json_integer(7))),
            INTENT_REJECTED);
        assert_null(in.order_id);
        intent_reset(&in);
}

static void test_messages_never_hold_values(void **state)
{
        static const char *const fields[] = { "tenant_id",      "order_id",
                                              "customer_id",    "currency",
                                              "payment_method", "occurred_at" };
        (void)state;
        for (size_t i = 0; i < sizeof(fields) / sizeof(fields[0]); i++) {
                struct intent in;
                char *big = rep('Q', 300);

                intent_init(&in);
                assert_int_equal(
                    parse_obj(&in, with(base(), fields[i], json_string(big))),
                    INTENT_REJECTED);
                assert_null(strstr(in.message, "QQ"));
                assert_non_null(strstr(in.message, fields[i]));
                intent_reset(&in);
                free(big);
        }
}

/* order_id, customer_id and description are guarded too, with the usual
 * separators. */
static void test_guard_covers_more_fields(void **state)
{
        (void)state;
        REJECT(with(base(), "order_id", json_string("4111 1111 1111 1111")),
               "card_number_in_field");
        REJECT(with(base(), "customer_id", json_string("4111-1111-1111-1111")),
               "card_number_in_field");
        REJECT(with(base(), "description",
                    json_string("paid with 4111111111111111 thanks")),
               "card_number_in_field");
        REJECT(with(base(), "description",
                    json_string("receipt to bob@example.com please")),
               "email_in_field");
        REJECT(with(base(), "customer_id", json_string("bob@example.com")),
               "email_in_field");
        OK(with(base(), "description", json_string("order 10063, 2 items")));
}

/* A rejected intent echoes nothing unbounded: fields are cut to their
 * contract limits on code-point boundaries; the inbox key of an event id
 * that is not a UUID is its SHA-256 (vectors from Python's hashlib). */
static void test_rejected_is_bounded(void **state)
{
        char *big = rep('x', 5000);
        struct intent in;
        json_t *o = base();
        json_t *t;

        (void)state;
        intent_init(&in);
        o = with(o, "event_id", json_string(big));
        o = with(o, "tenant_id", json_string(big));
        o = with(o, "idempotency_key", json_string(big));
        o = with(o, "order_id", json_string(big));
        assert_int_equal(parse_obj(&in, o), INTENT_REJECTED);
        assert_string_equal(in.reason, "invalid_event_id");
        assert_int_equal(strlen(in.event_id), 36);
        assert_int_equal(strlen(in.tenant_id), 64);
        assert_int_equal(strlen(in.idempotency_key), 255);
        assert_int_equal(strlen(in.order_id), 64);
        assert_string_equal(in.event_key,
                            "sha256:c59d3c0480cc2d71d8f646e735e9"
                            "2da65450311eec46e81a5db8c7e6e8a92054");
        assert_false(in.has_hash);

        /* multi-byte text is cut between characters: 64 x U+0111 */
        t = json_string("\xc4\x91");
        for (int i = 0; i < 7; i++) {
                char *d  = NULL;
                size_t n = strlen(json_string_value(t));

                d = malloc(2 * n + 1);
                assert_non_null(d);
                memcpy(d, json_string_value(t), n);
                memcpy(d + n, json_string_value(t), n + 1);
                json_decref(t);
                t = json_string(d);
                free(d);
        }
        /* 128 x U+0111 as order_id, and an invalid event id */
        o = with(base(), "order_id", t);
        o = with(o, "event_id", json_string("not-a-uuid"));
        assert_int_equal(parse_obj(&in, o), INTENT_REJECTED);
        assert_int_equal(strlen(in.order_id), 128); /* 64 chars, 2 bytes */
        assert_string_equal(in.event_id, "not-a-uuid");
        assert_string_equal(in.event_key,
                            "sha256:2184a32a3bae6ad756d745ec8678"
                            "ad6adcfcca65c5b81f7ddcd64eb675b63b2d");
        /* a UUID event id is its own key */
        OK(base());
        intent_reset(&in);
        assert_int_equal(parse_obj(&in, base()), INTENT_OK);
        assert_string_equal(in.event_key, BASE_EVENT_ID);
        assert_true(in.has_hash);
        intent_reset(&in);
        free(big);
}

/* A rejection by a field outside the hash keeps the request hash, so a
 * copy of a finished intent can be answered with its stored outcome. */
static void test_rejected_keeps_hash(void **state)
{
        unsigned char want[INTENT_HASH_LEN];
        char *big = rep('d', 501);
        struct intent in;

        (void)state;
        intent_init(&in);
        assert_int_equal(parse_obj(&in, base()), INTENT_OK);
        memcpy(want, in.request_hash, sizeof(want));

        assert_int_equal(
            parse_obj(&in, with(base(), "description", json_string(big))),
            INTENT_REJECTED);
        assert_true(in.has_hash);
        assert_memory_equal(in.request_hash, want, sizeof(want));
        assert_string_equal(in.tenant_id, "shop-1");
        assert_string_equal(in.idempotency_key, "ord-10063-pay-1");

        assert_int_equal(parse_obj(&in, with(base(), "description",
                                             json_string("a@example.com"))),
                         INTENT_REJECTED);
        assert_true(in.has_hash);
        assert_int_equal(
            parse_obj(&in, with(base(), "occurred_at", json_string("never"))),
            INTENT_REJECTED);
        assert_true(in.has_hash);
        assert_int_equal(
            parse_obj(&in, with(base(), "event_id", json_string("e-1"))),
            INTENT_REJECTED);
        assert_true(in.has_hash);

        /* a hashed field broken, or another schema: no hash */
        assert_int_equal(
            parse_obj(&in, with(base(), "amount", json_integer(0))),
            INTENT_REJECTED);
        assert_false(in.has_hash);
        assert_int_equal(
            parse_obj(&in, with(base(), "schema_version", json_integer(2))),
            INTENT_REJECTED);
        assert_false(in.has_hash);
        /* a tenant that reads as a card number is echoed redacted, so
         * it is no lookup key */
        assert_int_equal(
            parse_obj(&in, with(with(base(), "tenant_id",
                                     json_string("4111111111111111")),
                                "description", json_string(big))),
            INTENT_REJECTED);
        assert_false(in.has_hash);
        intent_reset(&in);
        free(big);
}

static void test_verdict_names(void **state)
{
        (void)state;
        assert_string_equal(intent_verdict_name(INTENT_OK), "ok");
        assert_string_equal(intent_verdict_name(INTENT_REJECTED), "rejected");
        assert_string_equal(intent_verdict_name(INTENT_DLQ), "dlq");
}

/* One struct reused across verdicts leaks nothing (valgrind/ASan). */
static void test_reuse(void **state)
{
        struct intent in;

        (void)state;
        intent_init(&in);
        for (int i = 0; i < 3; i++) {
                assert_int_equal(parse_obj(&in, base()), INTENT_OK);
                assert_int_equal(parse_obj(&in, with(base(), "currency",
                                                     json_string("usd"))),
                                 INTENT_REJECTED);
                assert_int_equal(parse_raw(&in, "[]", 2), INTENT_DLQ);
                assert_null(in.tenant_id);
        }
        intent_reset(&in);
}

/*
 * jansson allocates from the decoding thread's arena during intent_parse
 * (src/intent/arena.h) and from malloc elsewhere. Trees made outside a
 * parse live across parses and are freed after them; a tree larger than
 * the arena (64 KiB) continues in malloc'd memory mid-parse, and both
 * kinds are freed by one json_decref; each parse still decides as it
 * should (and valgrind/ASan see no bad free or leak).
 */
static void test_arena_bounds(void **state)
{
        json_t *outside = base(); /* made outside any parse, kept */
        struct intent in;

        (void)state;
        intent_init(&in);
        for (int i = 0; i < 3; i++) {
                assert_int_equal(parse_obj(&in, base()), INTENT_OK);
                /* 100,000 bytes in one string: larger than the arena */
                assert_int_equal(parse_obj(&in, with(base(), "description",
                                                     rep_str('d', 100000))),
                                 INTENT_REJECTED);
                assert_string_equal(in.reason, "invalid_description");
                /* 4,000 small values: the arena fills up mid-tree */
                assert_int_equal(
                    parse_obj(&in, with(base(), "metadata", meta_pairs(4000))),
                    INTENT_REJECTED);
                assert_string_equal(in.reason, "invalid_metadata");
                assert_int_equal(parse_obj(&in, json_incref(outside)),
                                 INTENT_OK);
                assert_string_equal(
                    in.tenant_id,
                    json_string_value(json_object_get(outside, "tenant_id")));
        }
        intent_reset(&in);
        json_decref(outside);
}

int main(void)
{
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_ok_copies_everything),
                cmocka_unit_test(test_optional_absent_or_null),
                cmocka_unit_test(test_dlq_reasons),
                cmocka_unit_test(test_dlq_null_and_binary),
                cmocka_unit_test(test_schema_version),
                cmocka_unit_test(test_event_id),
                cmocka_unit_test(test_tenant_id),
                cmocka_unit_test(test_idempotency_key),
                cmocka_unit_test(test_order_and_customer_id),
                cmocka_unit_test(test_amount),
                cmocka_unit_test(test_amount_raw_forms),
                cmocka_unit_test(test_currency),
                cmocka_unit_test(test_payment_method),
                cmocka_unit_test(test_description),
                cmocka_unit_test(test_metadata),
                cmocka_unit_test(test_occurred_at),
                cmocka_unit_test(test_card_and_email_guard),
                cmocka_unit_test(test_rejected_is_redacted),
                cmocka_unit_test(test_rejected_keeps_valid_parts),
                cmocka_unit_test(test_messages_never_hold_values),
                cmocka_unit_test(test_guard_covers_more_fields),
                cmocka_unit_test(test_rejected_is_bounded),
                cmocka_unit_test(test_rejected_keeps_hash),
                cmocka_unit_test(test_verdict_names),
                cmocka_unit_test(test_reuse),
                cmocka_unit_test(test_arena_bounds),
        };

        return cmocka_run_group_tests(tests, NULL, NULL);
}
