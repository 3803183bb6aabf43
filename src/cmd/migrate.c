/* SPDX-License-Identifier: Apache-2.0 */
/* cmd/migrate: `chargeonce migrate` applies sql/ migrations (idempotent);
 * `--plan` prints what it would do (ops/migrate_plan.h). */
#include "cmd/cmd.h"
#include "ops/migrate_plan.h"
#include "store/migrate.h"
#include "util/config.h"
#include "util/log.h"

#include <stdbool.h>
#include <stdio.h>
#include <string.h>

int cmd_migrate(struct config *cfg, int argc, char **argv)
{
        struct migrate_report rep;
        struct log_ctx lc = LOG_CTX_INIT;
        char err[1024];
        bool plan = false;

        lc.component = "migrate";
        if (argc > 2)
                return cmd_usage_error("migrate", "unexpected argument %s",
                                       argv[2]);
        if (argc > 1) {
                if (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h")) {
                        printf("usage: chargeonce migrate [--plan]\n"
                               "Applies the numbered migrations compiled "
                               "from sql/ to db.conninfo, in order, each in "
                               "its own transaction. Safe to run twice and "
                               "from several processes at once.\n"
                               "  --plan  change nothing: print the "
                               "migrations to apply, each step with the "
                               "relation it locks, the lock, what it stops "
                               "and the rows it reads or writes, and an "
                               "estimate of the time "
                               "(docs/upgrading.md)\n");
                        return 0;
                }
                if (strcmp(argv[1], "--plan") != 0)
                        return cmd_usage_error(
                            "migrate", "unexpected argument %s", argv[1]);
                plan = true;
        }
        if (plan) {
                if (ops_migrate_plan(config_settings(cfg)->db_conninfo, stdout,
                                     err, sizeof(err)) < 0) {
                        log_error(&lc, "migrate --plan failed: %s", err);
                        return 1;
                }
                return 0;
        }
        if (store_migrate_run(config_settings(cfg)->db_conninfo, &rep, err,
                              sizeof(err)) < 0) {
                log_error(&lc, "migrate failed: %s", err);
                return 1;
        }
        log_info(&lc, "schema up to date: %d applied now, %d already present",
                 rep.applied, rep.present);
        /* what changed, for the operator (stdout; the log line is stderr) */
        printf("migrate: %d migration(s) applied now, %d already present; "
               "every migration of this binary (up to %04d) is in\n",
               rep.applied, rep.present, store_migrate_known_version());
        return 0;
}
