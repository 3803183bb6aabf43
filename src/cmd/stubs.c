/*
 * cmd/stubs: the contract's subcommands whose engines are still being
 * built. Each says so and exits 2: never a silent no-op. Replaced one by one
 * as src/reconcile lands.
 */
#include "cmd/cmd.h"

int cmd_reconcile(struct config *cfg, int argc, char **argv)
{
        return cmd_not_built(cfg, argc, argv);
}
