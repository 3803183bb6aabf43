/* SPDX-License-Identifier: Apache-2.0 */
/*
 * ops/replay: what `chargeonce replay` does (docs/operations.md,
 * "Replaying a partition"). By default, like Kafka's own
 * kafka-consumer-groups --reset-offsets without --execute, it changes
 * nothing: it prints the plan (per partition the group's committed offset
 * and the start it would be set to, and whether the group has members
 * that would make a rewind refuse) and judges the range: it reads
 * [from, to) of each partition of topic.intents with a consumer of its
 * own in assign mode (never the service's group, never a commit), judges
 * each message as the running service would now (intent_parse,
 * store_judge_batch: one read-only statement per batch,
 * payment_judge_range_next) and reports counts per category and
 * partition with a few masked examples. With execute it rewinds the
 * service group's committed offsets of those partitions to the start,
 * refusing while the group has members unless wait, and prints old ->
 * new for each partition.
 *
 * Must never: commit or join the service's group unless executing, write
 * to the database, call the gateway, alter the offsets of a group with
 * active members, or print a full idempotency key.
 */
#ifndef CO_OPS_REPLAY_H
#define CO_OPS_REPLAY_H

#include "kafka/kconf.h"
#include "payment/judge.h"
#include "util/compiler.h"
#include "util/log.h"

#include <jansson.h>

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#define REPLAY_MAX_PARTITIONS 4096
#define REPLAY_EXAMPLES_MAX   1000

/* What replay runs with (cmd/replay.c fills it from the configuration). */
struct ops_replay_opts {
        const struct kafka_opts *kafka;
        const char *conninfo;     /* db.conninfo */
        const char *topic;        /* topic.intents */
        const char *group;        /* group.id: the service's group */
        size_t max_message_bytes; /* consumer.max_message_bytes */
};

/* What the operator asked for (cmd/replay_args.c parses it). */
struct ops_replay_args {
        int32_t parts[64]; /* --partition, in the order given */
        int n_parts;       /* 0: every partition of topic.intents */
        bool from_time;    /* from is Unix ms (--from-time), else offset */
        int64_t from;
        bool has_to, to_time;
        int64_t to;
        bool execute; /* --execute: rewind; else show what it would do */
        bool wait;
        int64_t wait_s; /* --wait SECONDS; -1: without end */
        bool json;
        int examples; /* per category, default 3 */
        bool help;
};

/*
 * One run (see above): the plan and the judged range, or with a->execute
 * the rewind. Output on stdout (a table, or one JSON document with
 * a->json), progress and refusals on stderr. Returns the exit status: 0
 * done; 1 runtime failure, or refused (the group has members, --wait ran
 * out); 2 a partition the topic does not have, a start past a
 * partition's end, or options the broker refuses. Main thread.
 */
int ops_replay_run(const struct ops_replay_opts *o,
                   const struct ops_replay_args *a) CO_MUST_CHECK;

/* One example of a category (strings cleaned for a terminal). */
struct replay_example {
        int32_t partition;
        int64_t offset;
        char tenant[72];
        char key_masked[LOG_MASKED_KEY_SIZE];
        char event_id[40];
        char reason[64];
};

/* The dry run's report (ops/replay_report.c). */
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

void ops_replay_report_init(struct replay_report *r, int n,
                            const int32_t *parts, const int64_t *from,
                            const int64_t *to, int max_examples);
void ops_replay_report_free(struct replay_report *r);
/* Counts one message (index i of the partitions) and keeps it as an
 * example if its category has room. Strings may be NULL. */
void ops_replay_report_add(struct replay_report *r, int i, int64_t offset,
                           enum judge_category c, const char *tenant,
                           const char *idem_key, const char *event_id,
                           const char *reason);
/* The report as a table (out) or as members of the JSON object doc. */
void ops_replay_report_print(const struct replay_report *r, FILE *out);
void ops_replay_report_json(const struct replay_report *r, json_t *doc);

#endif
