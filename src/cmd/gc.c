/* SPDX-License-Identifier: Apache-2.0 */
/*
 * cmd/gc: `chargeonce gc [--dry-run] [--json] [--limit N]`: the arguments
 * and the wiring; what a run does is ops/gc.c's (ops/gc.h).
 *
 * Exit 0 done, 1 runtime failure (database or broker unreachable, or
 * stopped by a signal between two batches: what was done is committed
 * and reported), 2 usage error or refusal by the retention rule.
 */
#include "cmd/cmd.h"
#include "cmd/engine.h"
#include "cmd/opts.h"
#include "ops/gc.h"
#include "util/config.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void usage(FILE *out)
{
        fprintf(out,
                "usage: chargeonce gc [--dry-run] [--json] [--limit N]\n"
                "Idempotency keys older than idempotency.retention (and "
                "past their expires_at),\nfinal with a succeeded or failed "
                "payment, become tombstones: tenant, key,\nrequest hash, "
                "payment id and outcome stay (a later copy of the intent is "
                "still\nanswered with its stored outcome, never charged "
                "again); the stored result and\nerror message, the "
                "payment's payment method, the key's inbox events, the\n"
                "payment's gateway evidence and its published results go. "
                "Keys in review,\nstill processing, or with a result not yet "
                "published are left (and counted).\nBatches of gc.batch_size "
                "keys, one short transaction each, gc.batch_pause\napart; a "
                "progress line on stderr, the summary on stdout.\n"
                "  --dry-run   count what would be done; write nothing\n"
                "  --json      the summary as one JSON document\n"
                "  --limit N   make at most N tombstones in this run\n"
                "Refuses (exit 2, nothing done) when idempotency.retention "
                "is shorter than the\nintents topic's retention.ms (read from "
                "the broker; -1 or a compact-only\ntopic keeps messages "
                "forever: always refused) or than "
                "gateway.key_retention.\nExit 0 done; 1 runtime failure "
                "(database or broker unreachable, or stopped\nby SIGINT or "
                "SIGTERM between two batches: the batches done are kept "
                "and\nreported); 2 usage error or refusal.\n");
}

/* 0 to go on, 2 on a usage error, -1 after --help (exit 0). */
static int parse_args(int argc, char **argv, struct ops_gc_args *a)
{
        memset(a, 0, sizeof(*a));
        for (int i = 1; i < argc; i++) {
                const char *s = argv[i];

                if (!strcmp(s, "--help") || !strcmp(s, "-h")) {
                        usage(stdout);
                        return -1;
                } else if (!strcmp(s, "--dry-run")) {
                        a->dry_run = true;
                } else if (!strcmp(s, "--json")) {
                        a->json = true;
                } else if (!strcmp(s, "--limit")) {
                        char *end = NULL;
                        long long v;

                        if (i + 1 == argc)
                                return cmd_usage_error("gc", "--limit needs N");
                        errno = 0;
                        v     = strtoll(argv[++i], &end, 10);
                        if (errno || !end || *end || v <= 0)
                                return cmd_usage_error(
                                    "gc",
                                    "--limit: \"%s\" is not a positive "
                                    "integer",
                                    argv[i]);
                        a->limit = (int64_t)v;
                } else {
                        return cmd_usage_error("gc", "unexpected argument %s",
                                               s);
                }
        }
        return 0;
}

int cmd_gc(struct config *cfg, int argc, char **argv)
{
        const struct settings *st = config_settings(cfg);
        struct ops_gc_args a;
        struct ops_gc_opts g;
        struct cmd_opts o;
        int rc;

        if ((rc = parse_args(argc, argv, &a)) != 0)
                return rc < 0 ? 0 : rc;
        cmd_opts_fill(&o, cfg);
        memset(&g, 0, sizeof(g));
        g.conninfo                 = st->db_conninfo;
        g.kafka                    = &o.kafka;
        g.topic                    = st->topic_intents;
        g.key_retention_ms         = st->idempotency_retention_ms;
        g.gateway_key_retention_ms = st->gateway_key_retention_ms;
        g.batch_size               = st->gc_batch_size;
        g.batch_pause_ms           = st->gc_batch_pause_ms;
        /* SIGINT / SIGTERM: stop after the batch in hand */
        rc = ops_gc_run(&g, &a, cmd_signals_install());
        cmd_opts_free(&o);
        return rc;
}
