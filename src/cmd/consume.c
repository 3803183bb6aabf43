/*
 * cmd/consume: `chargeonce consume`. Wiring only: signals and the
 * pipeline. The first SIGTERM/SIGINT drains (stop fetching, finish what is
 * in flight, commit, exit 0); a second one exits at once, which is still
 * safe because every step is durable and idempotent.
 */
#include "cmd/cmd.h"
#include "pipeline/pipeline.h"
#include "util/config.h"
#include "util/failpoint.h"
#include "util/log.h"

#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

int cmd_consume(struct config *cfg, int argc, char **argv)
{
        volatile sig_atomic_t *flag;
        int rc;

        if (argc > 1) {
                if (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h")) {
                        printf("usage: chargeonce consume\n"
                               "Consumes %s and charges each intent once. "
                               "SIGTERM drains and exits 0; a second "
                               "SIGTERM exits at once.\n",
                               config_str(cfg, "topic.intents"));
                        return 0;
                }
                return cmd_usage_error("consume", "unexpected argument %s",
                                       argv[1]);
        }
        if (failpoint_init() < 0)
                return 2;
        cmd_install_signals(&flag);
        rc = pipeline_run(cfg, flag);
        if (rc == PIPELINE_EXIT_NOW)
                _exit(1); /* second signal: no teardown, still safe */
        return rc;
}
