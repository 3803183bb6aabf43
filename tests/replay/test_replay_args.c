/* SPDX-License-Identifier: Apache-2.0 */
/*
 * test_replay_args: the arguments of `chargeonce replay` (cmd/replay_args.c,
 * pure): what is accepted (nothing is changed without --execute), every usage
 * error, RFC 3339 to Unix ms.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "cmd/replay.h"

static int parse(struct ops_replay_args *a, char *err, const char *line)
{
        char buf[512], *argv[32], *save = NULL;
        int argc = 0;

        strcpy(buf, line);
        for (char *t = strtok_r(buf, " ", &save); t;
             t       = strtok_r(NULL, " ", &save))
                argv[argc++] = t;
        return cmd_replay_args_parse(argc, argv, a, err, 256);
}

static void test_accepted(void **state)
{
        struct ops_replay_args a;
        char err[256];

        (void)state;
        /* nothing changes without --execute (Kafka's default) */
        assert_int_equal(parse(&a, err, "replay --from-offset 0"), 0);
        assert_false(a.execute);
        assert_int_equal(parse(&a, err, "replay --from-offset 0 --dry-run"), 0);
        assert_false(a.execute);
        assert_int_equal(parse(&a, err, "replay --from-offset 0 --execute"), 0);
        assert_true(a.execute);
        assert_int_equal(parse(&a, err, "replay --from-offset 0 --to-offset 9"),
                         0);
        assert_false(a.execute);
        assert_int_equal(a.n_parts, 0);
        assert_int_equal(a.examples, 3);
        assert_int_equal(parse(&a, err,
                               "replay --partition 2 --partition=0 "
                               "--from-offset=17 --to-offset 40 --dry-run "
                               "--json --examples 0"),
                         0);
        assert_int_equal(a.n_parts, 2);
        assert_int_equal(a.parts[0], 2);
        assert_int_equal(a.parts[1], 0);
        assert_int_equal(a.from, 17);
        assert_true(a.has_to && !a.to_time && a.to == 40);
        assert_true(!a.execute && a.json && a.examples == 0);
        assert_int_equal(
            parse(&a, err, "replay --from-offset 1 --execute --wait"), 0);
        assert_true(a.execute && a.wait && a.wait_s == -1);
        assert_int_equal(
            parse(&a, err, "replay --execute --wait 30 --from-offset 1"), 0);
        assert_true(a.wait && a.wait_s == 30 && a.from == 1);
        assert_int_equal(
            parse(&a, err,
                  "replay --from-time 2026-11-29T10:47:03.123Z --dry-run "
                  "--to-time 2026-11-29T17:47:04+07:00"),
            0);
        assert_true(a.from_time && a.from == INT64_C(1795949223123));
        assert_true(a.to_time && a.to == INT64_C(1795949224000));
}

static void test_usage_errors(void **state)
{
        static const char *const bad[][2] = {
                { "replay", "--from-offset" },
                { "replay --dry-run", "--from-offset" },
                { "replay --from-offset -1", "--from-offset" },
                { "replay --from-offset x", "--from-offset" },
                { "replay --from-offset", "needs a value" },
                { "replay --from-offset 1 --from-time 2026-01-01T00:00:00Z",
                  "give one of" },
                { "replay --from-time yesterday", "RFC 3339" },
                { "replay --from-time 2026-02-30T00:00:00Z", "RFC 3339" },
                { "replay --from-offset 1 --to-offset 5 --execute",
                  "only for the dry run" },
                { "replay --from-offset 9 --to-offset 5 --dry-run", "before" },
                { "replay --from-offset 1 --dry-run --wait",
                  "--wait is only for --execute" },
                { "replay --from-offset 1 --wait", "--wait is only for" },
                { "replay --from-offset 1 --dry-run --execute", "not both" },
                { "replay --from-offset 1 --partition x", "--partition" },
                { "replay --from-offset 1 --partition 1 --partition 1",
                  "twice" },
                { "replay --from-offset 1 --examples 1001", "--examples" },
                { "replay --from-offset 1 --frob", "unknown argument --frob" },
                { "replay --from-offset 1 --execute --wait=soon", "--wait" },
        };
        struct ops_replay_args a;
        char err[256];

        (void)state;
        for (size_t i = 0; i < sizeof(bad) / sizeof(*bad); i++) {
                err[0] = '\0';
                if (parse(&a, err, bad[i][0]) != -1 || !strstr(err, bad[i][1]))
                        fail_msg("\"%s\": \"%s\", want \"%s\"", bad[i][0], err,
                                 bad[i][1]);
        }
}

static void test_time(void **state)
{
        int64_t ms;

        (void)state;
        assert_true(cmd_replay_time_parse("1970-01-01T00:00:00Z", &ms));
        assert_int_equal(ms, 0);
        assert_true(cmd_replay_time_parse("2000-02-29T23:59:59.9+01:00", &ms));
        assert_int_equal(ms, INT64_C(951865199900));
        assert_true(cmd_replay_time_parse("1969-12-31T23:00:00-01:00", &ms));
        assert_int_equal(ms, 0);
        assert_false(cmd_replay_time_parse("2000-02-29 23:59:59Z", &ms));
        assert_false(cmd_replay_time_parse("2001-02-29T00:00:00Z", &ms));
}

int main(void)
{
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_accepted),
                cmocka_unit_test(test_usage_errors),
                cmocka_unit_test(test_time),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
