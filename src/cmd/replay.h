/* SPDX-License-Identifier: Apache-2.0 */
/*
 * cmd/replay: the arguments of `chargeonce replay` (cmd/replay_args.c,
 * pure) and the command (cmd/replay.c); what a run does is ops/replay.c's.
 */
#ifndef CO_CMD_REPLAY_H
#define CO_CMD_REPLAY_H

#include "ops/replay.h"
#include "util/compiler.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/*
 * Parses argv[1..argc) of `replay` into a. Pure. 0, or -1 with errstr
 * naming the offending argument (a usage error: exit 2).
 */
int cmd_replay_args_parse(int argc, char **argv, struct ops_replay_args *a,
                          char *errstr, size_t errstr_size) CO_MUST_CHECK;

/* An RFC 3339 date-time ("2026-11-29T10:47:03.123Z", "+07:00" offsets) as
 * Unix milliseconds. Pure. False if it is not one. */
bool cmd_replay_time_parse(const char *s, int64_t *ms) CO_MUST_CHECK;

#endif
