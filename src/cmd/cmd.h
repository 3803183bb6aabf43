/* SPDX-License-Identifier: Apache-2.0 */
/*
 * cmd: one function per subcommand, and nothing but arguments and wiring.
 * Each gets the loaded configuration and its own arguments (argv[0] is the
 * subcommand's name), checks the arguments (a usage error: exit 2 naming
 * the argument), fills the typed options of the code it runs from
 * struct settings (cmd/opts.c; no key is read by its name), and runs it:
 * the engines (pipeline/, relay/, reconcile/, http/) through cmd/engine.c,
 * the operator commands' logic in ops/ (replay, review, gc, the security
 * policy), or an adapter's single call (migrate, audit, inspect). It
 * returns the process exit status: 0 done, 1 runtime failure, 2 usage or
 * configuration error. Only main and cmd/ may end the process.
 */
#ifndef CO_CMD_H
#define CO_CMD_H

#include "util/compiler.h"

#include <stddef.h>
#include <stdio.h>

struct config;

struct cmd {
        const char *name;
        int (*run)(struct config *cfg, int argc, char **argv);
        const char *summary;
};

int cmd_migrate(struct config *cfg, int argc, char **argv) CO_MUST_CHECK;
int cmd_consume(struct config *cfg, int argc, char **argv) CO_MUST_CHECK;
int cmd_relay(struct config *cfg, int argc, char **argv) CO_MUST_CHECK;
int cmd_reconcile(struct config *cfg, int argc, char **argv) CO_MUST_CHECK;
int cmd_webhook(struct config *cfg, int argc, char **argv) CO_MUST_CHECK;
int cmd_audit(struct config *cfg, int argc, char **argv) CO_MUST_CHECK;
int cmd_inspect(struct config *cfg, int argc, char **argv) CO_MUST_CHECK;
int cmd_replay(struct config *cfg, int argc, char **argv) CO_MUST_CHECK;
int cmd_review(struct config *cfg, int argc, char **argv) CO_MUST_CHECK;
int cmd_gc(struct config *cfg, int argc, char **argv) CO_MUST_CHECK;

/*
 * What the configuration's own table cannot judge key by key, once every
 * source is loaded (main, before any subcommand, --dump-config too): the
 * rules between keys (config_check), db.conninfo parsed by libpq,
 * gateway.ca_file readable, the webhook secrets parsed, every kafka.*
 * property judged by librdkafka and the static group identity. 0, or -1
 * naming the key (a configuration error: exit 2).
 */
int cmd_opts_check(const struct config *cfg, char *errstr,
                   size_t errstr_size) CO_MUST_CHECK;

/* "chargeonce VERSION (commit COMMIT; librdkafka VERSION)" and a new
 * line, to out. */
void cmd_print_version(FILE *out);
/*
 * The db.* network keys -> store_net_set: every database connection the
 * process makes from now on notices a dead peer within the bounds they
 * give (store/conn.c). main() calls it once, before any command runs.
 */
void cmd_apply_db_net(const struct config *cfg);

/* Prints "chargeonce CMD: <message>" to stderr and returns 2. */
int cmd_usage_error(const char *cmd, const char *fmt, ...) CO_PRINTF(2, 3);

#endif
