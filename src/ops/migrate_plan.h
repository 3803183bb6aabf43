/* SPDX-License-Identifier: Apache-2.0 */
/*
 * ops/migrate_plan: what `chargeonce migrate --plan` prints. Reads which
 * migrations the database lacks and the sizes of the relations they touch
 * (store/migrate.h), reads each migration's steps from its text
 * (store/migrate_plan.h), and prints per migration its steps, the locks it
 * holds until its COMMIT and what they stop, the tables it reads or writes
 * whole, and an estimate of its time. Changes nothing.
 *
 * The estimate is the bytes the steps read or write whole (a table once
 * per step that scans it, indexes included) at a rate measured by
 * bench/upgrade.sh on the reference machine (docs/upgrading.md): an order
 * of magnitude for planning a window, not a promise.
 */
#ifndef CO_OPS_MIGRATE_PLAN_H
#define CO_OPS_MIGRATE_PLAN_H

#include "util/compiler.h"

#include <stddef.h>
#include <stdio.h>

/* The rate of the estimate, in bytes per second (docs/upgrading.md). */
#define OPS_MIGRATE_PLAN_BYTES_PER_S (70LL * 1000 * 1000)

/* Prints the plan for conninfo's database to out. 0, or -1 with errstr
 * set (the database unreachable, a recorded migration changed). */
int ops_migrate_plan(const char *conninfo, FILE *out, char *errstr,
                     size_t errstr_size) CO_MUST_CHECK;

#endif
