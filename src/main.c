/* SPDX-License-Identifier: Apache-2.0 */
/*
 * chargeonce: argv -> configuration -> subcommand table, nothing else.
 *
 *   chargeonce [--config FILE] [-X key=value]... COMMAND [OPTIONS]
 *
 * Configuration, later sources winning: defaults, --config FILE,
 * CHARGEONCE_* environment, -X. Exit status: 0 done, 1 runtime failure,
 * 2 usage or configuration error naming the offending key or argument
 * (also a setting security.mode = production refuses, ops/security.h).
 *
 * Before anything else the process makes itself non-dumpable with no
 * core files (it is about to hold every secret), unless
 * CHARGEONCE_ALLOW_CORE=1, which only development mode accepts.
 */
#include "cmd/cmd.h"
#include "cmd/security.h"
#include "ops/security.h"
#include "util/config.h"
#include "util/crypto.h"
#include "util/log.h"
#include "util/xalloc.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

extern char **environ;

static const struct cmd commands[] = {
        { "migrate", cmd_migrate, "apply sql/ migrations (idempotent)" },
        { "consume", cmd_consume,
          "consume intents; by default also runs the relay and the "
          "reconciler" },
        { "relay", cmd_relay, "the outbox relay alone" },
        { "reconcile", cmd_reconcile, "the reconciler alone" },
        { "webhook", cmd_webhook,
          "the gateway's signed webhooks, /metrics and the probes, alone" },
        { "replay", cmd_replay,
          "judge a range of intents (--dry-run) or rewind the group to it" },
        { "inspect", cmd_inspect,
          "show one intent: key, payment, ledger, events, results, evidence" },
        { "audit", cmd_audit, "list invariant violations (exit 1 if any)" },
        { "review", cmd_review,
          "the review queue: list, show, resolve (asks the gateway)" },
        { "gc", cmd_gc,
          "reduce expired keys to tombstones, remove their bulky rows" },
};
#define N_COMMANDS (sizeof(commands) / sizeof(*commands))

static void usage(FILE *out)
{
        fprintf(out,
                "usage: chargeonce [--config FILE] [-X key=value]... "
                "COMMAND [OPTIONS]\n"
                "       chargeonce --help | --version | --dump-config\n"
                "\n"
                "Exactly one charge per payment intent: consumes intents from "
                "Kafka, claims them\nin PostgreSQL, charges through the "
                "gateway with a stable provider key, and\npublishes results "
                "through an outbox.\n\ncommands:\n");
        for (size_t i = 0; i < N_COMMANDS; i++)
                fprintf(out, "  %-10s %s\n", commands[i].name,
                        commands[i].summary);
        fprintf(out,
                "\noptions:\n"
                "  --config FILE      key = value file (# comments)\n"
                "  -X key=value       set a key (repeatable); kafka.<prop> "
                "goes to librdkafka\n"
                "  --dump-config      print the effective configuration, "
                "secrets hidden\n"
                "  --help, --version\n"
                "\nenvironment: CHARGEONCE_<KEY> (upper case, . -> _), "
                "e.g. CHARGEONCE_DB_CONNINFO\n"
                "secrets may come from a file: <key>_file = /path\n"
                "exit status: 0 done, 1 runtime failure, 2 usage or "
                "configuration error\n\nconfiguration keys (default):\n");
        config_describe(out);
}

/*
 * The CHARGEONCE_* variables that name no key, said once the logger is
 * set up: a misspelling as a warning naming the key it resembles, an
 * unknown one as a note; a platform's service links (Kubernetes sets
 * CHARGEONCE_SERVICE_HOST, ... for a Service named chargeonce) and the
 * project's own tool variables only at debug. None stops the process.
 */
static void log_env_notes(const struct config *cfg)
{
        const struct config_env_note *n;
        size_t cnt        = config_env_notes(cfg, &n);
        struct log_ctx lc = LOG_CTX_INIT;

        lc.component = "config";
        for (size_t i = 0; i < cnt; i++) {
                switch (n[i].kind) {
                case CONFIG_ENV_MISSPELT:
                        log_warn(&lc,
                                 "environment variable %s names no "
                                 "configuration key: ignored. Did you mean "
                                 "%s (%s%s)?",
                                 n[i].name, n[i].like_env, n[i].like_key,
                                 n[i].like_file ? "_file" : "");
                        break;
                case CONFIG_ENV_UNKNOWN:
                        log_info(&lc,
                                 "environment variable %s names no "
                                 "configuration key: ignored",
                                 n[i].name);
                        break;
                case CONFIG_ENV_PLATFORM:
                        log_debug(&lc,
                                  "environment variable %s: a service link "
                                  "of the platform, ignored",
                                  n[i].name);
                        break;
                case CONFIG_ENV_TOOL:
                        log_debug(&lc,
                                  "environment variable %s: a chargeonce "
                                  "tool's, not configuration",
                                  n[i].name);
                        break;
                }
        }
}

/* The subcommand of argv[i..argc) (NULL for none: --dump-config) */
static const struct cmd *find_command(int i, int argc, char **argv)
{
        for (size_t c = 0; i < argc && c < N_COMMANDS; c++)
                if (!strcmp(argv[i], commands[c].name))
                        return &commands[c];
        return NULL;
}

/* A copy of a -X key=value (owned by the caller); a secret's value is
 * then overwritten in argv, which is what ps shows from now on. */
static char *take_arg(char *arg)
{
        char *copy = xstrdup(arg), *eq = strchr(arg, '=');

        if (eq && config_arg_is_secret(arg))
                memset(eq + 1, '*', strlen(eq + 1));
        return copy;
}

int main(int argc, char **argv)
{
        struct config *cfg      = config_new();
        const char *config_file = NULL;
        char **xargs            = xcalloc((size_t)argc + 1, sizeof(*xargs));
        const char *argv_secret = NULL;
        char argv_key[128];
        const struct cmd *cmd;
        int nx = 0, i, rc = 2;
        int dump = 0;
        char err[1024];
        enum log_level lvl;

        /* before any secret is read (config_new() holds defaults only) */
        (void)ops_security_no_core();
        for (i = 1; i < argc; i++) {
                const char *a = argv[i];
                if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
                        usage(stdout);
                        rc = 0;
                        goto done;
                } else if (!strcmp(a, "--version")) {
                        cmd_print_version(stdout);
                        rc = 0;
                        goto done;
                } else if (!strcmp(a, "--dump-config")) {
                        dump = 1;
                } else if (!strcmp(a, "--config") || !strcmp(a, "-c")) {
                        if (++i == argc) {
                                fprintf(stderr, "chargeonce: %s needs a file\n",
                                        a);
                                goto done;
                        }
                        config_file = argv[i];
                } else if (!strncmp(a, "--config=", 9)) {
                        config_file = a + 9;
                } else if (!strcmp(a, "-X")) {
                        if (++i == argc) {
                                fprintf(stderr,
                                        "chargeonce: -X needs key=value\n");
                                goto done;
                        }
                        xargs[nx++] = take_arg(argv[i]);
                } else if (!strncmp(a, "-X", 2)) {
                        xargs[nx++] = take_arg(argv[i] + 2);
                } else if (a[0] == '-') {
                        fprintf(stderr,
                                "chargeonce: unknown option %s (see "
                                "--help)\n",
                                a);
                        goto done;
                } else {
                        break;
                }
        }

        if (config_file &&
            config_load_file(cfg, config_file, err, sizeof(err)) < 0)
                goto config_error;
        if (config_load_env(cfg, environ, err, sizeof(err)) < 0)
                goto config_error;
        for (int k = 0; k < nx; k++) {
                if (config_set_arg(cfg, xargs[k], err, sizeof(err)) < 0)
                        goto config_error;
                if (!argv_secret && config_arg_is_secret(xargs[k])) {
                        size_t n = strcspn(xargs[k], "=");
                        snprintf(argv_key, sizeof(argv_key), "%.*s", (int)n,
                                 xargs[k]);
                        argv_secret = argv_key;
                }
        }
        if (cmd_opts_check(cfg, err, sizeof(err)) < 0)
                goto config_error;
        if (!log_level_parse(config_settings(cfg)->log_level, &lvl))
                abort(); /* the table checked it */
        log_set_level(lvl);
        log_env_notes(cfg);
        cmd_apply_db_net(cfg);
        cmd = find_command(i, argc, argv);
        if ((dump || cmd) &&
            cmd_security_apply(cfg, dump ? NULL : cmd->name, argv_secret, err,
                               sizeof(err)) < 0)
                goto config_error;

        if (dump) {
                config_dump(cfg, stdout);
                rc = 0;
                goto done;
        }
        if (i == argc) {
                usage(stderr);
                goto done;
        }
        if (cmd) {
                log_set_component(cmd->name);
                rc = cmd->run(cfg, argc - i, argv + i);
                goto done;
        }
        fprintf(stderr, "chargeonce: unknown command %s (see --help)\n",
                argv[i]);
        goto done;

config_error:
        fprintf(stderr, "chargeonce: configuration error: %s\n", err);
done:
        for (int k = 0; k < nx; k++) {
                crypto_wipe(xargs[k], strlen(xargs[k]));
                free(xargs[k]);
        }
        free(xargs);
        config_destroy(cfg);
        log_clear_mask_key();
        return rc;
}
