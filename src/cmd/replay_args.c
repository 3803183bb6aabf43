/* SPDX-License-Identifier: Apache-2.0 */
/*
 * cmd/replay_args: the arguments of `chargeonce replay` (pure: no I/O, so
 * tests/replay/test_replay_args.c checks every usage error).
 *
 * Without --execute nothing is changed (--dry-run says so explicitly);
 * that is the default of Kafka's own kafka-consumer-groups.
 *
 * Must never: accept an ambiguous range (two starts, two ends, an end
 * with --execute, --execute with --dry-run): a rewind must do exactly
 * what was typed.
 */
#include "cmd/replay.h"
#include "util/timeutil.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* A non-negative decimal integer, all of s. */
static bool parse_i64(const char *s, int64_t max, int64_t *out)
{
        char *end;
        long long v;

        if (!s || *s < '0' || *s > '9')
                return false;
        errno = 0;
        v     = strtoll(s, &end, 10);
        if (errno || *end || v < 0 || v > max)
                return false;
        *out = v;
        return true;
}

static int64_t days_from_civil(int64_t y, int m, int d)
{
        /* H. Hinnant's algorithm: days since 1970-01-01 */
        int64_t era;
        int64_t yoe, doy, doe;

        y -= m <= 2;
        era = (y >= 0 ? y : y - 399) / 400;
        yoe = y - era * 400;
        doy = (153 * (m + (m > 2 ? -3 : 9)) + 2) / 5 + d - 1;
        doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
        return era * 146097 + doe - 719468;
}

bool cmd_replay_time_parse(const char *s, int64_t *ms)
{
        int y, mo, d, h, mi, sec, n = 0;
        int64_t frac_ms = 0, t;
        const char *p;

        if (!s || !rfc3339_valid(s, strlen(s)))
                return false;
        if (sscanf(s, "%4d-%2d-%2d%*1[Tt ]%2d:%2d:%2d%n", &y, &mo, &d, &h, &mi,
                   &sec, &n) != 6 ||
            n != 19)
                return false;
        p = s + 19;
        if (*p == '.') {
                int digits = 0;

                for (p++; *p >= '0' && *p <= '9'; p++, digits++)
                        if (digits < 3)
                                frac_ms = frac_ms * 10 + (*p - '0');
                for (; digits < 3; digits++)
                        frac_ms *= 10;
        }
        t = ((days_from_civil(y, mo, d) * 24 + h) * 60 + mi) * 60 + sec;
        if (*p == '+' || *p == '-') {
                int oh      = (p[1] - '0') * 10 + (p[2] - '0');
                int om      = (p[4] - '0') * 10 + (p[5] - '0');
                int64_t off = (int64_t)(oh * 60 + om) * 60;

                t += *p == '+' ? -off : off;
        }
        *ms = t * 1000 + frac_ms;
        return true;
}

/* The value of option `name` at argv[*i] ("--x V" or "--x=V"); NULL if
 * argv[*i] is not that option. *missing: it is, without a value. */
static const char *value_of(int argc, char **argv, int *i, const char *name,
                            bool *missing)
{
        size_t n = strlen(name);

        *missing = false;
        if (strncmp(argv[*i], name, n) != 0)
                return NULL;
        if (argv[*i][n] == '=')
                return argv[*i] + n + 1;
        if (argv[*i][n] != '\0')
                return NULL;
        if (*i + 1 >= argc) {
                *missing = true;
                return NULL;
        }
        return argv[++*i];
}

#define USAGE(...)                                                             \
        do {                                                                   \
                snprintf(errstr, errstr_size, __VA_ARGS__);                    \
                return -1;                                                     \
        } while (0)

/* One option of the range; 1 taken, 0 not this one, -1 error. */
static int range_opt(int argc, char **argv, int *i, struct ops_replay_args *a,
                     bool *have_from, char *errstr, size_t errstr_size)
{
        static const char *const names[] = { "--from-offset", "--from-time",
                                             "--to-offset", "--to-time" };
        bool miss;

        for (int k = 0; k < 4; k++) {
                const char *v = value_of(argc, argv, i, names[k], &miss);
                bool is_from = k < 2, is_time = k % 2 == 1;
                int64_t x;

                if (miss)
                        USAGE("%s needs a value", names[k]);
                if (!v)
                        continue;
                if (is_from ? *have_from : a->has_to)
                        USAGE("%s: give one of %s and %s", names[k],
                              names[is_from ? 0 : 2], names[is_from ? 1 : 3]);
                if (is_time ? !cmd_replay_time_parse(v, &x)
                            : !parse_i64(v, INT64_MAX / 2, &x))
                        USAGE("%s: \"%s\" is not %s", names[k], v,
                              is_time ? "an RFC 3339 date-time"
                                      : "an offset (0 or more)");
                if (is_from) {
                        *have_from   = true;
                        a->from_time = is_time;
                        a->from      = x;
                } else {
                        a->has_to  = true;
                        a->to_time = is_time;
                        a->to      = x;
                }
                return 1;
        }
        return 0;
}

int cmd_replay_args_parse(int argc, char **argv, struct ops_replay_args *a,
                          char *errstr, size_t errstr_size)
{
        bool have_from = false, dry_run = false, miss;

        memset(a, 0, sizeof(*a));
        a->examples = 3;
        a->wait_s   = -1;
        for (int i = 1; i < argc; i++) {
                const char *v;
                int64_t x;
                int r;

                if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) {
                        a->help = true;
                        return 0;
                }
                if ((r = range_opt(argc, argv, &i, a, &have_from, errstr,
                                   errstr_size)) < 0)
                        return -1;
                if (r > 0)
                        continue;
                if ((v = value_of(argc, argv, &i, "--partition", &miss)) ||
                    miss) {
                        if (!v || !parse_i64(v, INT32_MAX, &x))
                                USAGE("--partition: \"%s\" is not a partition "
                                      "number",
                                      v ? v : "");
                        for (int k = 0; k < a->n_parts; k++)
                                if (a->parts[k] == (int32_t)x)
                                        USAGE("--partition %s given twice", v);
                        if (a->n_parts ==
                            (int)(sizeof(a->parts) / sizeof(*a->parts)))
                                USAGE("--partition: at most %zu",
                                      sizeof(a->parts) / sizeof(*a->parts));
                        a->parts[a->n_parts++] = (int32_t)x;
                } else if ((v = value_of(argc, argv, &i, "--examples",
                                         &miss)) ||
                           miss) {
                        if (!v || !parse_i64(v, REPLAY_EXAMPLES_MAX, &x))
                                USAGE("--examples: \"%s\" is not a number "
                                      "from 0 to %d",
                                      v ? v : "", REPLAY_EXAMPLES_MAX);
                        a->examples = (int)x;
                } else if (!strcmp(argv[i], "--dry-run")) {
                        dry_run = true; /* the default, said explicitly */
                } else if (!strcmp(argv[i], "--execute")) {
                        a->execute = true;
                } else if (!strcmp(argv[i], "--json")) {
                        a->json = true;
                } else if (!strcmp(argv[i], "--wait")) {
                        a->wait = true;
                        /* SECONDS is optional: the next word if a number */
                        if (i + 1 < argc &&
                            parse_i64(argv[i + 1], INT64_MAX / 1000, &x)) {
                                a->wait_s = x;
                                i++;
                        }
                } else if (!strncmp(argv[i], "--wait=", 7)) {
                        if (!parse_i64(argv[i] + 7, INT64_MAX / 1000, &x))
                                USAGE("--wait: \"%s\" is not a number of "
                                      "seconds",
                                      argv[i] + 7);
                        a->wait   = true;
                        a->wait_s = x;
                } else {
                        USAGE("unknown argument %s", argv[i]);
                }
        }
        if (!have_from)
                USAGE("give --from-offset N or --from-time RFC3339");
        if (dry_run && a->execute)
                USAGE("give --execute or --dry-run, not both");
        if (a->has_to && a->execute)
                USAGE("%s is only for the dry run (--execute sets the start; "
                      "the service reads on to the end)",
                      a->to_time ? "--to-time" : "--to-offset");
        if (a->wait && !a->execute)
                USAGE("--wait is only for --execute (the dry run joins no "
                      "group and changes nothing)");
        if (a->has_to && a->to_time == a->from_time && a->to < a->from)
                USAGE("%s is before %s",
                      a->to_time ? "--to-time" : "--to-offset",
                      a->from_time ? "--from-time" : "--from-offset");
        return 0;
}
