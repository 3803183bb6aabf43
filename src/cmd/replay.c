/* SPDX-License-Identifier: Apache-2.0 */
/*
 * cmd/replay: `chargeonce replay`: the usage, the arguments
 * (cmd/replay_args.c) and the wiring; what a run does is ops/replay.c's
 * (ops/replay.h). Without --execute it changes nothing.
 */
#include "cmd/cmd.h"
#include "cmd/opts.h"
#include "cmd/replay.h"
#include "util/config.h"

#include <stdio.h>
#include <string.h>

static int usage(void)
{
        printf("usage: chargeonce replay [--partition P]... "
               "--from-offset N | --from-time RFC3339\n"
               "         [--to-offset M | --to-time RFC3339] [--dry-run] "
               "[--examples K] [--json]\n"
               "       chargeonce replay [--partition P]... "
               "--from-offset N | --from-time RFC3339\n"
               "         --execute [--wait [SECONDS]] [--json]\n"
               "\n"
               "Without --execute (--dry-run says so explicitly) nothing is "
               "changed, as with\nKafka's kafka-consumer-groups "
               "--reset-offsets: it prints the plan (per partition\nthe "
               "group's committed offset and the start --execute would set, "
               "and whether\nthe group has members, which would make "
               "--execute refuse) and judges the\nrange: it reads [from, to) "
               "of each partition of topic.intents (every\npartition without "
               "--partition; to: the end when the run starts) with a "
               "consumer\nof its own in assign mode (group.id + "
               "\".replay-dry-run.<pid>\": it joins no group\nand commits "
               "nothing), writes nothing, calls no gateway, and reports how "
               "the\nservice would treat each message now: new, "
               "duplicate_event, in_progress,\nreplayed, conflict, rejected, "
               "dead_lettered (the labels of\nchargeonce_intents_total), per "
               "partition, with K examples of each (default 3;\nkeys masked). "
               "A copy of an intent whose first copy is earlier in the range "
               "is\njudged as after that first copy finished.\n"
               "\n"
               "With --execute: sets the committed offsets of group.id for "
               "those partitions to\nthe start and prints old -> new. Refused "
               "while the group has active members\n(exit 1) unless --wait: "
               "then waits (SECONDS at most; none: without end) until\nthe "
               "group is empty.\n"
               "\n"
               "Exit status: 0 done; 1 runtime failure, or refused (the group "
               "has members,\n--wait ran out); 2 usage or configuration error, "
               "or a --partition the topic\ndoes not have, or a start past a "
               "partition's end.\n");
        return 0;
}

int cmd_replay(struct config *cfg, int argc, char **argv)
{
        const struct settings *st = config_settings(cfg);
        struct ops_replay_opts ro;
        struct ops_replay_args a;
        struct cmd_opts o;
        char err[512];
        int rc;

        if (cmd_replay_args_parse(argc, argv, &a, err, sizeof(err)) < 0)
                return cmd_usage_error("replay", "%s (see --help)", err);
        if (a.help)
                return usage();
        cmd_opts_fill(&o, cfg);
        memset(&ro, 0, sizeof(ro));
        ro.kafka             = &o.kafka;
        ro.conninfo          = st->db_conninfo;
        ro.topic             = st->topic_intents;
        ro.group             = st->group_id;
        ro.max_message_bytes = (size_t)st->consumer_max_message_bytes;
        rc                   = ops_replay_run(&ro, &a);
        cmd_opts_free(&o);
        return rc;
}
