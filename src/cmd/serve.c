/* SPDX-License-Identifier: Apache-2.0 */
/* cmd/serve: the http engine beside the others or alone (serve.h). */
#include "cmd/serve.h"
#include "util/failpoint.h"
#include "util/log.h"

#include <errno.h>
#include <string.h>

static int check(const void *o, char *errstr, size_t errstr_size)
{
        return http_opts_check(o, errstr, errstr_size);
}

static void *make(const void *o, char *errstr, size_t errstr_size)
{
        return http_new(o, errstr, errstr_size);
}

static int run(void *engine, const atomic_int *stop)
{
        return http_run(engine, stop);
}

static void destroy(void *engine)
{
        http_destroy(engine);
}

const struct cmd_engine_kind cmd_serve_kind = { "webhook", check, make, run,
                                                destroy };

int cmd_serve_start(struct cmd_serve *s, const struct http_opts *o)
{
        struct log_ctx lc = LOG_CTX_INIT;
        char err[1024];

        lc.component = "http";
        memset(s, 0, sizeof(*s));
        if (!(s->http = http_new(o, err, sizeof(err)))) {
                int why = errno;

                log_error(&lc, "cannot start: %s", err);
                return why == EINVAL ? 2 : 1;
        }
        if (!(s->t =
                  cmd_engine_start("http", run, s->http, err, sizeof(err)))) {
                log_error(&lc, "cannot start: %s", err);
                http_destroy(s->http);
                s->http = NULL;
                return 1;
        }
        return 0;
}

void cmd_serve_stop(struct cmd_serve *s, const atomic_int *signals)
{
        /* the loop logs its own errors; the exit status is the engines' */
        CO_IGNORE(cmd_engine_stop(s->t, signals));
        s->t = NULL;
        http_destroy(s->http);
        s->http = NULL;
}

int cmd_serve_beside(const struct cmd_engine_kind *k, const void *opts,
                     const struct http_opts *o, bool enabled)
{
        struct log_ctx lc = LOG_CTX_INIT;
        struct cmd_serve s;
        const atomic_int *sig;
        char err[1024];
        void *e;
        int rc;

        if (!enabled)
                return cmd_engine_main(k, opts);
        /* as cmd_engine_main, with the server started once the whole
         * configuration was judged (a busy port is not a config error) */
        lc.component = k->component;
        if (failpoint_init() < 0)
                return 2;
        if (http_opts_check(o, err, sizeof(err)) < 0) {
                log_error(&lc, "cannot start: %s", err);
                return 2;
        }
        sig = cmd_signals_install();
        if (!(e = k->make(opts, err, sizeof(err)))) {
                rc = errno == EINVAL ? 2 : 1;
                log_error(&lc, "cannot start: %s", err);
                return rc;
        }
        if ((rc = cmd_serve_start(&s, o)) == 0) {
                rc = cmd_engine_run(k->run, e, sig);
                if (rc == 0)
                        log_info(&lc, "stopped");
        }
        k->destroy(e);
        cmd_serve_stop(&s, sig);
        return rc;
}
