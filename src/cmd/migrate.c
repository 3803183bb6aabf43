/* SPDX-License-Identifier: Apache-2.0 */
/* cmd/migrate: `chargeonce migrate` applies sql/ migrations (idempotent). */
#include "cmd/cmd.h"
#include "store/migrate.h"
#include "util/config.h"
#include "util/log.h"

#include <stdio.h>
#include <string.h>

int cmd_migrate(struct config *cfg, int argc, char **argv)
{
        struct migrate_report rep;
        struct log_ctx lc = LOG_CTX_INIT;
        char err[1024];

        lc.component = "migrate";
        if (argc > 1) {
                if (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h")) {
                        printf("usage: chargeonce migrate\n"
                               "Applies the numbered migrations compiled "
                               "from sql/ to db.conninfo, in order, each in "
                               "its own transaction. Safe to run twice and "
                               "from several processes at once.\n");
                        return 0;
                }
                return cmd_usage_error("migrate", "unexpected argument %s",
                                       argv[1]);
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
