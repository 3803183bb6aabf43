/*
 * cmd/stubs: the contract's subcommands whose engines are still being
 * built. Each says so and exits 2: never a silent no-op. Replaced one by one
 * as src/reconcile lands.
 */
#include "cmd/cmd.h"
