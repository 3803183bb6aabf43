/*
 * cmd/stubs: the contract's subcommands whose engines are still being
 * built. Each says so and exits 2: never a silent no-op. Replaced one by one
 * as src/pipeline, src/relay and src/reconcile land.
 */
#include "cmd/cmd.h"

int cmd_relay(struct config *cfg, int argc, char **argv)
{
        return cmd_not_built(cfg, argc, argv);
}

int cmd_reconcile(struct config *cfg, int argc, char **argv)
{
        return cmd_not_built(cfg, argc, argv);
}
