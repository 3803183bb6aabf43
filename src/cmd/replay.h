/*
 * cmd/replay: what the files of `chargeonce replay` share: the parsed
 * arguments (replay_args.c, pure), the dry run's report (replay_report.c)
 * and the command (replay.c).
 *
 * Must never: print a full idempotency key (examples carry masked keys).
 */
#ifndef CO_CMD_REPLAY_H
#define CO_CMD_REPLAY_H

#include "payment/judge.h"
#include "util/compiler.h"
#include "util/log.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#define REPLAY_MAX_PARTITIONS 4096
#define REPLAY_EXAMPLES_MAX   1000

struct cmd_replay_args {
        int32_t parts[64]; /* --partition, in the order given */
        int n_parts;       /* 0: every partition of topic.intents */
        bool from_time;    /* from is Unix ms (--from-time), else offset */
        int64_t from;
        bool has_to, to_time;
        int64_t to;
        bool dry_run;
        bool wait;
        int64_t wait_s; /* --wait SECONDS; -1: without end */
        bool json;
        int examples; /* per category, default 3 */
        bool help;
};

/*
 * Parses argv[1..argc) of `replay` into a. Pure. 0, or -1 with errstr
 * naming the offending argument (a usage error: exit 2).
 */
int cmd_replay_args_parse(int argc, char **argv, struct cmd_replay_args *a,
                          char *errstr, size_t errstr_size) CO_MUST_CHECK;

/* An RFC 3339 date-time ("2026-11-29T10:47:03.123Z", "+07:00" offsets) as
 * Unix milliseconds. Pure. False if it is not one. */
bool cmd_replay_time_parse(const char *s, int64_t *ms) CO_MUST_CHECK;

/* One example of a category (strings cleaned for a terminal). */
struct replay_example {
        int32_t partition;
        int64_t offset;
        char tenant[72];
        char key_masked[LOG_MASKED_KEY_SIZE];
        char event_id[40];
        char reason[64];
};

/* The dry run's report. */
struct replay_report {
        const char *topic, *group, *reader_group; /* borrowed */
        int n;
        int32_t *parts;
        int64_t *from, *to;
        uint64_t (*counts)[JUDGE_N_CATEGORIES]; /* per partition */
        uint64_t totals[JUDGE_N_CATEGORIES];
        uint64_t read;
        int max_examples;
        struct replay_example *ex[JUDGE_N_CATEGORIES];
        size_t n_ex[JUDGE_N_CATEGORIES];
};

void cmd_replay_report_init(struct replay_report *r, int n,
                            const int32_t *parts, const int64_t *from,
                            const int64_t *to, int max_examples);
void cmd_replay_report_free(struct replay_report *r);
/* Counts one message (index i of the partitions) and keeps it as an
 * example if its category has room. Strings may be NULL. */
void cmd_replay_report_add(struct replay_report *r, int i, int64_t offset,
                           enum judge_category c, const char *tenant,
                           const char *idem_key, const char *event_id,
                           const char *reason);
/* The report as a table (out) or one JSON document. */
void cmd_replay_report_print(const struct replay_report *r, FILE *out);
int cmd_replay_report_json(const struct replay_report *r,
                           FILE *out) CO_MUST_CHECK;

#endif
