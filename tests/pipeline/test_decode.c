/* SPDX-License-Identifier: Apache-2.0 */
/*
 * test_decode: a poll decoded on several threads gives, message for
 * message, what intent_parse gives on one (valid, rejected, wrong-typed,
 * not JSON, invalid UTF-8 and oversized messages mixed, so a slice boundary
 * falls between kinds); polls too small to share (under two slices' worth, one
 * message) give the same; many rounds in a row. Which thread decoded what is
 * not observed.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "pipeline/decode.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define N       500
#define MAX_LEN 600

static char payload[N][1024];
static rd_kafka_message_t msg[N];
static rd_kafka_message_t *msgs[N];

/* Message i: an intent rejected for its amount (a JSON literal). */
static int rejected(size_t i, const char *amount)
{
        return snprintf(payload[i], sizeof(payload[i]),
                        "{\"schema_version\":1,\"event_id\":"
                        "\"6f1c2a8e-3b4d-4e5f-9a0b-%012zu\",\"tenant_id\":"
                        "\"shop\",\"idempotency_key\":\"key-%zu\","
                        "\"order_id\":\"o\",\"customer_id\":\"c\","
                        "\"amount\":%s,\"currency\":\"VND\","
                        "\"payment_method\":\"pm\",\"occurred_at\":"
                        "\"2026-11-29T10:47:03Z\"}",
                        i, i, amount);
}

/* Message i: kinds in turn, each with its own event id and key. */
static void make(size_t i)
{
        int len = 0;

        switch (i % 7) {
        case 0:
        case 1: /* valid */
                len = snprintf(
                    payload[i], sizeof(payload[i]),
                    "{\"schema_version\":1,\"event_id\":"
                    "\"6f1c2a8e-3b4d-4e5f-9a0b-%012zu\",\"tenant_id\":"
                    "\"shop-%zu\",\"idempotency_key\":\"key-%zu\","
                    "\"order_id\":\"o%zu\",\"customer_id\":\"c\","
                    "\"amount\":%zu,\"currency\":\"VND\","
                    "\"payment_method\":\"pm_tok\",\"occurred_at\":"
                    "\"2026-11-29T10:47:03Z\",\"metadata\":{\"a\":\"b\"}}",
                    i, i % 7, i, i, 1000 + i);
                break;
        case 2: /* rejected: amount out of range */
                len = rejected(i, "-1");
                break;
        case 3: /* not JSON */
                len = snprintf(payload[i], sizeof(payload[i]), "{not json %zu",
                               i);
                break;
        case 4: /* over the size bound: never parsed */
                memset(payload[i], 'x', MAX_LEN + 1);
                len = MAX_LEN + 1;
                break;
        case 5: /* invalid UTF-8 in a string */
                len = snprintf(
                    payload[i], sizeof(payload[i]),
                    "{\"event_id\":\"e%zu\",\"tenant_id\":\"\xc3\x28\"}", i);
                break;
        case 6: /* a field of the wrong type: amount as a string */
                len = rejected(i, "\"1000\"");
                break;
        }
        memset(&msg[i], 0, sizeof(msg[i]));
        msg[i].payload = payload[i];
        msg[i].len     = (size_t)len;
        msgs[i]        = &msg[i];
}

static void expect(size_t i, const struct intent *got)
{
        struct intent want;

        intent_init(&want);
        if (msg[i].len > MAX_LEN) {
                assert_int_equal(got->verdict, INTENT_DLQ);
                assert_string_equal(got->reason, "message_too_large");
                return;
        }
        intent_parse(msg[i].payload, msg[i].len, &want);
        assert_int_equal(got->verdict, want.verdict);
        assert_string_equal(got->reason, want.reason);
        if (want.verdict == INTENT_OK) {
                assert_string_equal(got->event_id, want.event_id);
                assert_string_equal(got->idempotency_key, want.idempotency_key);
                assert_memory_equal(got->request_hash, want.request_hash,
                                    sizeof(want.request_hash));
        }
        intent_reset(&want);
}

static void run_with(int helpers, size_t n, int rounds)
{
        struct decoder *d = decoder_new(helpers, MAX_LEN);
        struct intent *in = calloc(N, sizeof(*in));

        assert_non_null(d);
        assert_non_null(in);
        for (size_t i = 0; i < N; i++)
                intent_init(&in[i]);
        for (int r = 0; r < rounds; r++) {
                /* slices move a little */
                size_t m = n > 2 ? n - (size_t)r % 3 : n;
                decoder_run(d, msgs, m, in);
                for (size_t i = 0; i < m; i++)
                        expect(i, &in[i]);
        }
        for (size_t i = 0; i < N; i++)
                intent_reset(&in[i]);
        free(in);
        decoder_destroy(d);
}

static void test_one_thread(void **state)
{
        (void)state;
        run_with(0, N, 2);
}

static void test_helpers(void **state)
{
        (void)state;
        run_with(1, N, 20);
        run_with(3, N, 20);
}

static void test_small_polls(void **state)
{
        (void)state;
        run_with(3, 40, 5); /* under two slices' worth: the caller alone */
        run_with(1, 1, 3);
}

/* The kinds are what they say, so the comparisons above cover them. */
static void test_kinds(void **state)
{
        struct intent in;
        static const struct {
                size_t i;
                enum intent_verdict v;
                const char *reason;
        } k[] = {
                { 0, INTENT_OK, "" },
                { 2, INTENT_REJECTED, NULL },
                { 3, INTENT_DLQ, "not_json" },
                { 5, INTENT_DLQ, "invalid_utf8" },
                { 6, INTENT_REJECTED, NULL },
        };

        (void)state;
        intent_init(&in);
        for (size_t j = 0; j < sizeof(k) / sizeof(k[0]); j++) {
                intent_parse(msg[k[j].i].payload, msg[k[j].i].len, &in);
                assert_int_equal(in.verdict, k[j].v);
                if (k[j].reason)
                        assert_string_equal(in.reason, k[j].reason);
        }
        intent_reset(&in);
}

static void test_too_large(void **state)
{
        struct decoder *d = decoder_new(0, MAX_LEN);

        (void)state;
        assert_true(decoder_too_large(d, &msg[4]));
        assert_false(decoder_too_large(d, &msg[0]));
        msg[0].key_len = MAX_LEN; /* the key counts too */
        assert_true(decoder_too_large(d, &msg[0]));
        msg[0].key_len = 0;
        decoder_destroy(d);
        decoder_destroy(NULL);
}

int main(void)
{
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_one_thread),
                cmocka_unit_test(test_helpers),
                cmocka_unit_test(test_small_polls),
                cmocka_unit_test(test_kinds),
                cmocka_unit_test(test_too_large),
        };

        for (size_t i = 0; i < N; i++)
                make(i);
        return cmocka_run_group_tests(tests, NULL, NULL);
}
