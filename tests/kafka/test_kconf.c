/* SPDX-License-Identifier: Apache-2.0 */
/*
 * test_kconf: the group member's static identity (group.instance.id,
 * KIP-345): derived from worker.id, "none", an explicit
 * kafka.group.instance.id winning, conflicts naming both keys, and only
 * the group member's configuration ever carrying it; and when a static
 * member's fencing is its own rejoin's (kconsumer_self_fence); and
 * chargeonce's defaults per role, each overridable.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "kafka/consumer.h"
#include "kafka/kconf.h"

#include <stdio.h>
#include <string.h>

static char out[256], err[512];

static int resolve(const struct kafka_prop *p, size_t n, const char *setting,
                   const char *worker)
{
        struct kafka_opts ko = { .props = p, .n_props = n };

        err[0] = '\0';
        return kconf_instance_id(&ko, setting, worker, out, sizeof(out), err,
                                 sizeof(err));
}

static void test_derived(void **state)
{
        (void)state;
        assert_int_equal(resolve(NULL, 0, "", "worker-1"), 0);
        assert_string_equal(out, "worker-1");
        /* no worker.id: dynamic */
        assert_int_equal(resolve(NULL, 0, "", ""), 0);
        assert_string_equal(out, "");
        /* "none": dynamic even with a worker.id */
        assert_int_equal(resolve(NULL, 0, "none", "worker-1"), 0);
        assert_string_equal(out, "");
        /* any other value as is */
        assert_int_equal(resolve(NULL, 0, "pod-7.a_b", "worker-1"), 0);
        assert_string_equal(out, "pod-7.a_b");
}

static void test_worker_id_not_an_identity(void **state)
{
        (void)state;
        /* worker.id also names review's operator: never an error, but
         * dynamic, and said why */
        assert_int_equal(resolve(NULL, 0, "", "alice@example"), 1);
        assert_string_equal(out, "");
        assert_non_null(strstr(err, "worker.id"));
        /* the same value given as the identity itself: an error */
        assert_int_equal(resolve(NULL, 0, "alice@example", ""), -1);
        assert_non_null(strstr(err, "group.instance.id"));
}

static void test_explicit_wins(void **state)
{
        struct kafka_prop p[]  = { { "group.instance.id", "explicit-1" } };
        struct kafka_prop pc[] = { { "consumer.group.instance.id", "c-1" } };
        struct kafka_prop pe[] = { { "group.instance.id", "" } };

        (void)state;
        assert_int_equal(resolve(p, 1, "", "worker-1"), 0);
        assert_string_equal(out, "explicit-1");
        assert_int_equal(resolve(p, 1, "explicit-1", "worker-1"), 0);
        assert_string_equal(out, "explicit-1");
        assert_int_equal(resolve(pc, 1, "", "worker-1"), 0);
        assert_string_equal(out, "c-1");
        /* an empty property is dynamic membership: agrees with "none" */
        assert_int_equal(resolve(pe, 1, "none", "worker-1"), 0);
        assert_string_equal(out, "");
        assert_int_equal(resolve(pe, 1, "", "worker-1"), 0);
        assert_string_equal(out, "");
}

static void test_conflict_names_both(void **state)
{
        struct kafka_prop p[]  = { { "group.instance.id", "explicit-1" } };
        struct kafka_prop pe[] = { { "group.instance.id", "" } };
        struct kafka_prop p2[] = { { "group.instance.id", "a" },
                                   { "consumer.group.instance.id", "b" } };

        (void)state;
        assert_int_equal(resolve(p, 1, "other", "worker-1"), -1);
        assert_non_null(strstr(err, "group.instance.id (\"other\")"));
        assert_non_null(strstr(err, "kafka.group.instance.id"));
        assert_int_equal(resolve(p, 1, "none", ""), -1);
        assert_non_null(strstr(err, "kafka.group.instance.id"));
        assert_int_equal(resolve(pe, 1, "static-1", ""), -1);
        assert_int_equal(resolve(p2, 2, "", ""), -1);
        assert_non_null(strstr(err, "kafka.group.instance.id"));
        assert_non_null(strstr(err, "kafka.consumer.group.instance.id"));
}

/* A property of a configuration made for role, or "" if unset. */
static const char *conf_value(const struct kafka_opts *ko, enum kconf_role role,
                              const char *name)
{
        static char v[256];
        size_t n              = sizeof(v);
        rd_kafka_conf_t *conf = kconf_new(ko, role, err, sizeof(err));

        assert_non_null(conf);
        if (rd_kafka_conf_get(conf, name, v, &n) != RD_KAFKA_CONF_OK)
                v[0] = '\0';
        rd_kafka_conf_destroy(conf);
        return v;
}

/* group.instance.id of a configuration made for role, or "" if unset. */
static const char *conf_id(const struct kafka_opts *ko, enum kconf_role role)
{
        return conf_value(ko, role, "group.instance.id");
}

static void test_member_only(void **state)
{
        struct kafka_prop p[] = { { "group.instance.id", "explicit-1" },
                                  { "client.id", "x" } };
        struct kafka_opts ko  = { .props = p, .n_props = 2 };

        (void)state;
        /* the property itself never passes through: only the resolved
         * identity, and only to the member */
        ko.instance_id = "member-1";
        assert_string_equal(conf_id(&ko, KCONF_MEMBER), "member-1");
        assert_string_equal(conf_id(&ko, KCONF_CONSUMER), "");
        assert_string_equal(conf_id(&ko, KCONF_PRODUCER), "");
        ko.instance_id = "";
        assert_string_equal(conf_id(&ko, KCONF_MEMBER), "");
        /* kconf_check accepts it (the property is a known one) */
        assert_int_equal(kconf_check(&ko, err, sizeof(err)), 0);
}

static void test_self_fence(void **state)
{
        const int fenced    = RD_KAFKA_RESP_ERR_FENCED_INSTANCE_ID;
        const int64_t lost  = 50000;
        const int64_t later = lost + KCONSUMER_SELF_FENCE_MS;

        (void)state;
        /* a static member fenced just after losing its assignment */
        assert_true(kconsumer_self_fence(fenced, true, lost, lost));
        assert_true(kconsumer_self_fence(fenced, true, lost, lost + 17));
        assert_true(kconsumer_self_fence(fenced, true, lost, later));
        /* too long after, never lost, or a clock that went back */
        assert_false(kconsumer_self_fence(fenced, true, lost, later + 1));
        assert_false(kconsumer_self_fence(fenced, true, 0, lost));
        assert_false(kconsumer_self_fence(fenced, true, lost, lost - 1));
        /* a dynamic member is never fenced by an instance id */
        assert_false(kconsumer_self_fence(fenced, false, lost, lost + 17));
        /* any other fatal error stays fatal */
        assert_false(kconsumer_self_fence(RD_KAFKA_RESP_ERR_UNKNOWN_MEMBER_ID,
                                          true, lost, lost + 17));
        assert_false(kconsumer_self_fence(0, true, lost, lost + 17));
}

static void test_rejoin_budget(void **state)
{
        struct kconsumer_rejoins r = { .n = 0 };
        const int64_t t0           = 1000000;
        const int64_t w            = KCONSUMER_REJOIN_WINDOW_MS;

        (void)state;
        /* KCONSUMER_REJOIN_MAX within the window pass, one more does not */
        for (int i = 0; i < KCONSUMER_REJOIN_MAX; i++)
                assert_true(kconsumer_rejoin_budget(&r, t0 + i * 10000));
        assert_false(kconsumer_rejoin_budget(&r, t0 + w - 1));
        /* a refusal is not counted: the first one leaves the window at
         * t0 + w and makes room for exactly one */
        assert_true(kconsumer_rejoin_budget(&r, t0 + w));
        assert_false(kconsumer_rejoin_budget(&r, t0 + w + 1));
        /* a window later all have left it */
        assert_true(kconsumer_rejoin_budget(&r, t0 + 3 * w));
        assert_int_equal(r.n, 1);
        /* a clock that went back drops what would be in the future */
        assert_true(kconsumer_rejoin_budget(&r, t0));
        assert_int_equal(r.n, 1);
}

/* chargeonce's defaults per role (docs/configuration.md), each one
 * overridden by kafka.<prop> or kafka.<role>.<prop> */
static void test_role_defaults(void **state)
{
        struct kafka_opts none = { 0 };
        /* values that are neither chargeonce's nor librdkafka's defaults */
        struct kafka_prop p[] = { { "consumer.fetch.wait.max.ms", "250" },
                                  { "fetch.min.bytes", "4096" },
                                  { "producer.linger.ms", "2" } };
        struct kafka_opts ko  = { .props = p, .n_props = 3 };

        (void)state;
        assert_string_equal(
            conf_value(&none, KCONF_MEMBER, "fetch.wait.max.ms"), "5");
        assert_string_equal(conf_value(&none, KCONF_MEMBER, "fetch.min.bytes"),
                            "65536");
        assert_string_equal(
            conf_value(&none, KCONF_MEMBER, "queued.max.messages.kbytes"),
            "16384");
        /* "earliest", as librdkafka spells it back */
        assert_string_equal(
            conf_value(&none, KCONF_MEMBER, "auto.offset.reset"), "smallest");
        assert_string_equal(conf_value(&none, KCONF_MEMBER, "client.id"),
                            "chargeonce-consumer");
        assert_string_equal(conf_value(&none, KCONF_PRODUCER, "linger.ms"),
                            "5");
        /* the member's defaults stay on the member: the replay's range
         * reader and the admin client keep librdkafka's */
        assert_string_equal(
            conf_value(&none, KCONF_CONSUMER, "fetch.wait.max.ms"), "500");
        /* every client's: the dead-link bounds */
        assert_string_equal(
            conf_value(&none, KCONF_PRODUCER, "socket.timeout.ms"), "10000");
        /* the user's value wins, in either form */
        assert_string_equal(conf_value(&ko, KCONF_MEMBER, "fetch.wait.max.ms"),
                            "250");
        assert_string_equal(conf_value(&ko, KCONF_MEMBER, "fetch.min.bytes"),
                            "4096");
        assert_string_equal(conf_value(&ko, KCONF_PRODUCER, "linger.ms"), "2");
}

int main(void)
{
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_derived),
                cmocka_unit_test(test_worker_id_not_an_identity),
                cmocka_unit_test(test_explicit_wins),
                cmocka_unit_test(test_conflict_names_both),
                cmocka_unit_test(test_member_only),
                cmocka_unit_test(test_self_fence),
                cmocka_unit_test(test_rejoin_budget),
                cmocka_unit_test(test_role_defaults),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
