/* SPDX-License-Identifier: Apache-2.0 */
/*
 * chargeonce-gatewaysim: entry point. Parses options, starts the server,
 * writes the port file, waits for SIGTERM/SIGINT, stops cleanly.
 * Exit status: 0 stopped by a signal, 1 runtime failure, 2 usage error.
 * The signal handler only sets a flag.
 */
#include <curl/curl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "sim_config.h"
#include "sim_server.h"
#include "util/log.h"

static volatile sig_atomic_t run = 1;

static void on_signal(int sig)
{
        (void)sig;
        run = 0;
}

/* Writes the port to path via a temporary file and rename(2), so a reader
 * never sees a partial number. */
static int write_port_file(const char *path, int port)
{
        char tmp[SIM_STR_LARGE + 32];
        FILE *f;
        int ret = -1;

        snprintf(tmp, sizeof(tmp), "%s.tmp.%ld", path, (long)getpid());
        f = fopen(tmp, "w");
        if (!f)
                goto out;
        if (fprintf(f, "%d\n", port) < 0) {
                fclose(f);
                goto out;
        }
        if (fclose(f) != 0)
                goto out;
        if (rename(tmp, path) != 0)
                goto out;
        ret = 0;
out:
        if (ret < 0)
                unlink(tmp);
        return ret;
}

int main(int argc, char **argv)
{
        static const struct log_ctx ctx = { "gatewaysim", NULL, -1,  -1,
                                            NULL,         NULL, NULL };
        struct sim_config cfg;
        struct sim_server *srv = NULL;
        struct sigaction sa;
        enum log_level lvl;
        char err[512];
        int rc;

        log_set_component("gatewaysim");
        sim_config_defaults(&cfg);
        rc = sim_config_parse_args(&cfg, argc, argv, err, sizeof(err));
        if (rc == 1)
                return 0;
        if (rc < 0) {
                fprintf(stderr, "chargeonce-gatewaysim: %s (see --help)\n",
                        err);
                return 2;
        }
        if (log_level_parse(cfg.log_level, &lvl))
                log_set_level(lvl);

        memset(&sa, 0, sizeof(sa));
        sa.sa_handler = on_signal;
        sigemptyset(&sa.sa_mask);
        sigaction(SIGTERM, &sa, NULL);
        sigaction(SIGINT, &sa, NULL);
        signal(SIGPIPE, SIG_IGN);

        if (curl_global_init(CURL_GLOBAL_DEFAULT) != CURLE_OK) {
                log_error(&ctx, "curl_global_init failed");
                return 1;
        }
        rc  = 1;
        srv = sim_server_start(&cfg, err, sizeof(err));
        if (!srv) {
                log_error(&ctx, "%s", err);
                fprintf(stderr, "chargeonce-gatewaysim: %s\n", err);
                goto out;
        }
        if (cfg.port_file[0] &&
            write_port_file(cfg.port_file, sim_server_port(srv)) < 0) {
                log_error(&ctx, "cannot write the port file");
                goto out;
        }
        while (run) {
                struct timespec ts = { 0, 100 * 1000000L };

                nanosleep(&ts, NULL);
        }
        log_info(&ctx, "stopping");
        rc = 0;
out:
        sim_server_stop(srv);
        curl_global_cleanup();
        return rc;
}
