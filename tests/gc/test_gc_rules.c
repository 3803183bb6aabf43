/* SPDX-License-Identifier: Apache-2.0 */
/*
 * test_gc_rules: the pure parts of `chargeonce gc`. The retention rule
 * (payment/key_retention.c: refuse when idempotency.retention is shorter
 * than the intents topic's retention.ms, -1 meaning forever, or than
 * gateway.key_retention; the reason names both numbers and both keys) and
 * the reading of the broker's topic configuration
 * (kafka/topic_config.c: retention.ms and cleanup.policy).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "kafka/topic_config.h"
#include "payment/key_retention.h"

#include <stdio.h>
#include <string.h>

#define DAY 86400000LL

static void test_allowed(void **state)
{
        char err[512] = "";
        (void)state;
        /* equal is enough: a key lives as long as the topic's message */
        assert_int_equal(payment_key_retention_check(7 * DAY, 7 * DAY,
                                                     "payments.intents", DAY,
                                                     err, sizeof(err)),
                         0);
        assert_int_equal(payment_key_retention_check(30 * DAY, 0, "t", 30 * DAY,
                                                     err, sizeof(err)),
                         0);
        assert_string_equal(err, "");
}

static void test_topic_longer(void **state)
{
        char err[512];
        (void)state;
        assert_int_equal(payment_key_retention_check(7 * DAY, 14 * DAY,
                                                     "payments.intents", DAY,
                                                     err, sizeof(err)),
                         -1);
        assert_non_null(strstr(err, "idempotency.retention 7d (604800000 ms)"));
        assert_non_null(strstr(err, "retention.ms of topic payments.intents"));
        assert_non_null(strstr(err, "14d (1209600000 ms)"));
        /* one millisecond is enough to refuse */
        assert_int_equal(
            payment_key_retention_check(DAY, DAY + 1, "t", 1, err, sizeof(err)),
            -1);
}

static void test_topic_forever(void **state)
{
        char err[512];
        (void)state;
        assert_int_equal(
            payment_key_retention_check(3650 * DAY, KEY_RETENTION_FOREVER, "in",
                                        DAY, err, sizeof(err)),
            -1);
        assert_non_null(strstr(err, "idempotency.retention 3650d"));
        assert_non_null(strstr(err, "retention.ms of topic in, -1 (forever)"));
}

static void test_gateway_longer(void **state)
{
        char err[512];
        (void)state;
        assert_int_equal(payment_key_retention_check(DAY, DAY / 2, "t", 2 * DAY,
                                                     err, sizeof(err)),
                         -1);
        assert_non_null(strstr(err, "idempotency.retention 1d (86400000 ms)"));
        assert_non_null(strstr(err, "gateway.key_retention 2d (172800000 ms)"));
}

static void test_parse(void **state)
{
        struct kafka_topic_retention r;
        char err[256];
        (void)state;
        assert_int_equal(kafka_topic_retention_parse("604800000", "delete", &r,
                                                     err, sizeof(err)),
                         0);
        assert_int_equal(r.retention_ms, 604800000);
        assert_false(r.compact);
        assert_int_equal(
            kafka_topic_retention_parse("-1", "delete", &r, err, sizeof(err)),
            0);
        assert_int_equal(r.retention_ms, -1);
        /* compact only: the last message of a key stays forever */
        assert_int_equal(kafka_topic_retention_parse("1000", "compact", &r, err,
                                                     sizeof(err)),
                         0);
        assert_int_equal(r.retention_ms, -1);
        assert_true(r.compact);
        /* compact and delete: retention.ms still bounds it */
        assert_int_equal(kafka_topic_retention_parse("1000", "compact, delete",
                                                     &r, err, sizeof(err)),
                         0);
        assert_int_equal(r.retention_ms, 1000);
        assert_true(r.compact);
        assert_int_equal(
            kafka_topic_retention_parse("1000", NULL, &r, err, sizeof(err)), 0);
        assert_int_equal(r.retention_ms, 1000);
        /* never a guess */
        assert_int_equal(
            kafka_topic_retention_parse(NULL, "delete", &r, err, sizeof(err)),
            -1);
        assert_non_null(strstr(err, "retention.ms"));
        assert_int_equal(
            kafka_topic_retention_parse("-2", "delete", &r, err, sizeof(err)),
            -1);
        assert_int_equal(
            kafka_topic_retention_parse("7d", "delete", &r, err, sizeof(err)),
            -1);
        assert_int_equal(
            kafka_topic_retention_parse("", "delete", &r, err, sizeof(err)),
            -1);
        assert_int_equal(kafka_topic_retention_parse("99999999999999999999",
                                                     "delete", &r, err,
                                                     sizeof(err)),
                         -1);
}

int main(void)
{
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_allowed),
                cmocka_unit_test(test_topic_longer),
                cmocka_unit_test(test_topic_forever),
                cmocka_unit_test(test_gateway_longer),
                cmocka_unit_test(test_parse),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
