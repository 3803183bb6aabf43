/* SPDX-License-Identifier: Apache-2.0 */
/*
 * test_relay_policy: the relay's pure decisions (src/relay/policy.c).
 * Which produce errors park a row, hold every row or are retried; that
 * the size check is an upper bound of librdkafka's own (checked against
 * the linked librdkafka, a producer without any broker); that the
 * back-off grows, is capped and jittered.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "relay/policy.h"

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void test_row_errors(void **state)
{
        static const rd_kafka_resp_err_t row[] = {
                RD_KAFKA_RESP_ERR_MSG_SIZE_TOO_LARGE,
                RD_KAFKA_RESP_ERR_INVALID_MSG_SIZE,
                RD_KAFKA_RESP_ERR_RECORD_LIST_TOO_LARGE,
                RD_KAFKA_RESP_ERR_INVALID_RECORD,
                RD_KAFKA_RESP_ERR__INVALID_ARG,
        };
        (void)state;
        for (size_t i = 0; i < sizeof(row) / sizeof(row[0]); i++)
                assert_int_equal(relay_classify_err(row[i]), RELAY_ERR_ROW);
        assert_string_equal(relay_err_class_name(RELAY_ERR_ROW), "row");
}

static void test_topic_errors(void **state)
{
        static const rd_kafka_resp_err_t topic[] = {
                RD_KAFKA_RESP_ERR__UNKNOWN_TOPIC,
                RD_KAFKA_RESP_ERR_UNKNOWN_TOPIC_OR_PART,
                RD_KAFKA_RESP_ERR__UNKNOWN_PARTITION,
                RD_KAFKA_RESP_ERR_TOPIC_EXCEPTION,
                RD_KAFKA_RESP_ERR_TOPIC_AUTHORIZATION_FAILED,
                RD_KAFKA_RESP_ERR_CLUSTER_AUTHORIZATION_FAILED,
                RD_KAFKA_RESP_ERR__AUTHENTICATION,
                RD_KAFKA_RESP_ERR_SASL_AUTHENTICATION_FAILED,
                RD_KAFKA_RESP_ERR_INVALID_REQUIRED_ACKS,
                RD_KAFKA_RESP_ERR_UNSUPPORTED_FOR_MESSAGE_FORMAT,
                RD_KAFKA_RESP_ERR_POLICY_VIOLATION,
                RD_KAFKA_RESP_ERR_INVALID_TIMESTAMP,
        };
        (void)state;
        for (size_t i = 0; i < sizeof(topic) / sizeof(topic[0]); i++)
                assert_int_equal(relay_classify_err(topic[i]), RELAY_ERR_TOPIC);
        assert_string_equal(relay_err_class_name(RELAY_ERR_TOPIC), "topic");
}

static void test_producer_errors(void **state)
{
        (void)state;
        assert_int_equal(relay_classify_err(RD_KAFKA_RESP_ERR__FATAL),
                         RELAY_ERR_PRODUCER);
        assert_int_equal(relay_classify_err(RD_KAFKA_RESP_ERR_PRODUCER_FENCED),
                         RELAY_ERR_PRODUCER);
        assert_int_equal(
            relay_classify_err(RD_KAFKA_RESP_ERR_OUT_OF_ORDER_SEQUENCE_NUMBER),
            RELAY_ERR_PRODUCER);
}

/* an outage, a leader change, a timeout or a purge must never park */
static void test_transient_errors(void **state)
{
        static const rd_kafka_resp_err_t tr[] = {
                RD_KAFKA_RESP_ERR__MSG_TIMED_OUT,
                RD_KAFKA_RESP_ERR__TIMED_OUT,
                RD_KAFKA_RESP_ERR__TIMED_OUT_QUEUE,
                RD_KAFKA_RESP_ERR__TRANSPORT,
                RD_KAFKA_RESP_ERR__ALL_BROKERS_DOWN,
                RD_KAFKA_RESP_ERR__PURGE_QUEUE,
                RD_KAFKA_RESP_ERR__PURGE_INFLIGHT,
                RD_KAFKA_RESP_ERR__QUEUE_FULL,
                RD_KAFKA_RESP_ERR_INVALID_MSG, /* CRC on the wire */
                RD_KAFKA_RESP_ERR_LEADER_NOT_AVAILABLE,
                RD_KAFKA_RESP_ERR_NOT_LEADER_FOR_PARTITION,
                RD_KAFKA_RESP_ERR_REQUEST_TIMED_OUT,
                RD_KAFKA_RESP_ERR_NOT_ENOUGH_REPLICAS,
                RD_KAFKA_RESP_ERR_NOT_ENOUGH_REPLICAS_AFTER_APPEND,
                RD_KAFKA_RESP_ERR_KAFKA_STORAGE_ERROR,
                RD_KAFKA_RESP_ERR_THROTTLING_QUOTA_EXCEEDED,
                RD_KAFKA_RESP_ERR_UNKNOWN,
                (rd_kafka_resp_err_t)4242,  /* a code of a later broker */
                (rd_kafka_resp_err_t)-4242, /* or of a later librdkafka */
        };
        (void)state;
        for (size_t i = 0; i < sizeof(tr) / sizeof(tr[0]); i++)
                assert_int_equal(relay_classify_err(tr[i]),
                                 RELAY_ERR_TRANSIENT);
        assert_string_equal(relay_err_class_name(RELAY_ERR_TRANSIENT),
                            "transient");
}

/*
 * Over every code librdkafka knows: exactly the five row errors park. A
 * code added to the row class by mistake (a transient one would park
 * rows during an outage) fails here.
 */
static void test_only_row_errors_park(void **state)
{
        const struct rd_kafka_err_desc *d;
        size_t n, rows = 0;
        (void)state;
        rd_kafka_get_err_descs(&d, &n);
        assert_true(n > 100);
        for (size_t i = 0; i < n; i++) {
                if (!d[i].name)
                        continue;
                if (relay_classify_err(d[i].code) == RELAY_ERR_ROW) {
                        rows++;
                        assert_true(strstr(d[i].name, "SIZE") ||
                                    strstr(d[i].name, "RECORD") ||
                                    !strcmp(d[i].name, "_INVALID_ARG"));
                }
        }
        assert_int_equal(rows, 5);
}

/* librdkafka's refusal of one message (no broker: produce only queues) */
static bool rdk_accepts(rd_kafka_t *rk, size_t key, size_t value, size_t hname,
                        size_t hvalue)
{
        static char buf[8192];
        rd_kafka_headers_t *h = rd_kafka_headers_new(3);
        rd_kafka_resp_err_t err;
        char name[3][64];

        memset(buf, 'x', sizeof(buf));
        for (int i = 0; i < 3; i++) {
                memset(name[i], 'a' + i, hname);
                name[i][hname] = '\0';
                rd_kafka_header_add(h, name[i], -1, buf, (ssize_t)hvalue);
        }
        err = rd_kafka_producev(rk, RD_KAFKA_V_TOPIC("t"),
                                RD_KAFKA_V_KEY(buf, key),
                                RD_KAFKA_V_VALUE(buf, value),
                                RD_KAFKA_V_MSGFLAGS(RD_KAFKA_MSG_F_COPY),
                                RD_KAFKA_V_HEADERS(h), RD_KAFKA_V_END);
        if (err) {
                rd_kafka_headers_destroy(h);
                assert_int_equal(err, RD_KAFKA_RESP_ERR_MSG_SIZE_TOO_LARGE);
                assert_int_equal(relay_classify_err(err), RELAY_ERR_ROW);
                return false;
        }
        return true;
}

/*
 * relay_wire_size is an upper bound of librdkafka's size, at most
 * 64 + 10 per header above it: what the relay lets through is never
 * refused for its size by the producer, and what it parks is at most
 * that many bytes below the limit.
 */
static void test_wire_size_bounds_librdkafka(void **state)
{
        const size_t max      = 2000;
        rd_kafka_conf_t *conf = rd_kafka_conf_new();
        char err[256];
        rd_kafka_t *rk;
        (void)state;

        assert_int_equal(rd_kafka_conf_set(conf, "message.max.bytes", "2000",
                                           err, sizeof(err)),
                         RD_KAFKA_CONF_OK);
        rk = rd_kafka_new(RD_KAFKA_PRODUCER, conf, err, sizeof(err));
        assert_non_null(rk);
        for (size_t key = 0; key <= 300; key += 75) {
                for (size_t hv = 0; hv <= 40; hv += 20) {
                        size_t hname = 10, hdrs = 3 * (hname + hv);
                        size_t last_ok = 0;
                        for (size_t value = 1000; value <= 2000; value++) {
                                size_t w = relay_wire_size(key, value, 3, hdrs);
                                bool ok =
                                    rdk_accepts(rk, key, value, hname, hv);
                                if (w <= max)
                                        assert_true(ok);
                                if (ok)
                                        last_ok = value;
                        }
                        /* the largest value librdkafka takes is parked by
                         * the relay only within the documented margin */
                        assert_true(relay_wire_size(key, last_ok, 3, hdrs) <=
                                    max + 64 + 3 * 10);
                        assert_true(relay_wire_size(key, last_ok + 1, 3, hdrs) >
                                    max);
                }
        }
        rd_kafka_purge(rk, RD_KAFKA_PURGE_F_QUEUE);
        rd_kafka_destroy(rk);
}

static void test_wire_size_saturates(void **state)
{
        (void)state;
        assert_int_equal(relay_wire_size(0, 0, 0, 0), 64);
        assert_int_equal(relay_wire_size(1, 2, 3, 4), 64 + 30 + 7);
        assert_true(relay_wire_size(SIZE_MAX, 1, 0, 0) == SIZE_MAX);
        assert_true(relay_wire_size(1, SIZE_MAX - 10, 3, 0) == SIZE_MAX);
        assert_true(relay_wire_size(0, 0, SIZE_MAX / 2, 0) == SIZE_MAX);
}

static void test_backoff_grows_to_cap(void **state)
{
        int64_t nominal = 0, want = 100;
        (void)state;
        for (int i = 0; i < 12; i++) {
                int64_t d = relay_backoff_next(nominal, 100, 10000,
                                               (uint32_t)rand(), &nominal);
                assert_int_equal(nominal, want);
                assert_true(d >= nominal - nominal / 2 && d <= nominal);
                want = want * 2 > 10000 ? 10000 : want * 2;
        }
        /* stays at the cap, never grows past it or overflows */
        assert_int_equal(nominal, 10000);
        (void)relay_backoff_next(INT64_MAX, 100, 10000, 7, &nominal);
        assert_int_equal(nominal, 10000);
        /* a success resets it: the caller passes 0 */
        (void)relay_backoff_next(0, 100, 10000, 7, &nominal);
        assert_int_equal(nominal, 100);
        /* "longest": the caller passes the cap */
        (void)relay_backoff_next(10000, 100, 10000, 7, &nominal);
        assert_int_equal(nominal, 10000);
}

static void test_backoff_jitter(void **state)
{
        int64_t nominal, lo = INT64_MAX, hi = 0;
        (void)state;
        /* the ends of the range */
        assert_int_equal(relay_backoff_next(0, 100, 10000, 0, &nominal), 50);
        assert_int_equal(relay_backoff_next(0, 100, 10000, 50, &nominal), 100);
        /* relays that failed together spread over [n/2, n] */
        for (uint32_t r = 0; r < 1000; r++) {
                int64_t d = relay_backoff_next(5000, 100, 10000,
                                               r * 2654435761u, &nominal);
                assert_int_equal(nominal, 10000);
                if (d < lo)
                        lo = d;
                if (d > hi)
                        hi = d;
        }
        assert_true(lo >= 5000 && lo < 5200);
        assert_true(hi <= 10000 && hi > 9800);
}

static void test_backoff_bad_bounds(void **state)
{
        int64_t nominal, d;
        (void)state;
        /* never 0 (a busy loop), whatever the bounds */
        d = relay_backoff_next(0, 0, 0, 0, &nominal);
        assert_int_equal(nominal, 1);
        assert_true(d >= 1);
        d = relay_backoff_next(0, 500, 100, 123, &nominal);
        assert_int_equal(nominal, 500);
        assert_true(d >= 250 && d <= 500);
        d = relay_backoff_next(-5, 100, 1000, 0, &nominal);
        assert_int_equal(nominal, 100);
}

int main(void)
{
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_row_errors),
                cmocka_unit_test(test_topic_errors),
                cmocka_unit_test(test_producer_errors),
                cmocka_unit_test(test_transient_errors),
                cmocka_unit_test(test_only_row_errors_park),
                cmocka_unit_test(test_wire_size_bounds_librdkafka),
                cmocka_unit_test(test_wire_size_saturates),
                cmocka_unit_test(test_backoff_grows_to_cap),
                cmocka_unit_test(test_backoff_jitter),
                cmocka_unit_test(test_backoff_bad_bounds),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
