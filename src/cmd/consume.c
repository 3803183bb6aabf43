/*
 * cmd/consume: `chargeonce consume`. Wiring only: the pipeline on the
 * main thread, the outbox relay and the reconciler each on a thread of
 * their own (relay.enabled, reconcile.enabled), all three with the same
 * lifecycle (cmd/engine.h).
 *
 * Stop order: the pipeline drains first (its last results reach the
 * outbox), then the reconciler, then the relay, which finishes the round
 * in flight; results settled during the drain are published by the next
 * relay to run; last the http server (http.listen, cmd/serve.h), so that
 * /metrics and the probes answer until the end. A second signal ends the
 * process at once at any point.
 */
#include "cmd/cmd.h"
#include "cmd/engine.h"
#include "cmd/opts.h"
#include "cmd/serve.h"
#include "util/config.h"
#include "util/failpoint.h"
#include "util/log.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

static int run_pipeline(void *e, const atomic_int *stop)
{
        return pipeline_run(e, stop);
}

static int run_relay(void *e, const atomic_int *stop)
{
        return relay_run(e, stop);
}

static int run_reconcile(void *e, const atomic_int *stop)
{
        return reconcile_run(e, stop);
}

struct consume {
        struct pipeline *pl;
        struct relay *relay;
        struct reconciler *rec;
        struct cmd_engine_thread *relay_t, *rec_t;
        struct cmd_serve http;
};

/* Makes the pipeline (its options are checked first: a configuration
 * error exits 2), then makes and starts the relay and the reconciler. */
static int consume_start(struct consume *c, const struct cmd_opts *o,
                         struct log_ctx *lc)
{
        char err[1024];
        int rc;

        if (o->http_enabled && http_opts_check(&o->http, err, sizeof(err))) {
                log_error(lc, "%s", err);
                return 2;
        }
        if (!(c->pl = pipeline_new(&o->pipeline, err, sizeof(err)))) {
                int why = errno;

                log_error(lc, "%s", err);
                return why == EINVAL ? 2 : 1; /* configuration: 2 */
        }
        if (o->http_enabled && (rc = cmd_serve_start(&c->http, &o->http)))
                return rc;
        if (o->relay_enabled &&
            (!(c->relay = relay_new(&o->relay, err, sizeof(err))) ||
             !(c->relay_t = cmd_engine_start("relay", run_relay, c->relay, err,
                                             sizeof(err))))) {
                log_error(lc, "relay: %s", err);
                return 1;
        }
        if (o->reconcile_enabled &&
            (!(c->rec = reconcile_new(&o->reconcile, err, sizeof(err))) ||
             !(c->rec_t = cmd_engine_start("reconciler", run_reconcile, c->rec,
                                           err, sizeof(err))))) {
                log_error(lc, "reconciler: %s", err);
                return 1;
        }
        return 0;
}

static void consume_stop(struct consume *c, const atomic_int *sig)
{
        /* the exit status is the pipeline's; the relay and the
         * reconciler log their own fatal errors */
        pipeline_destroy(c->pl);
        CO_IGNORE(cmd_engine_stop(c->rec_t, sig));
        reconcile_destroy(c->rec);
        CO_IGNORE(cmd_engine_stop(c->relay_t, sig));
        relay_destroy(c->relay);
        cmd_serve_stop(&c->http, sig);
}

int cmd_consume(struct config *cfg, int argc, char **argv)
{
        struct consume c;
        struct cmd_opts o;
        struct log_ctx lc = LOG_CTX_INIT;
        atomic_int *sig;
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
        lc.component = "consume";
        cmd_opts_fill(&o, cfg);
        o.http.webhooks             = HTTP_WEBHOOKS_IF_CONFIGURED;
        o.http.ready_needs_consumer = true;
        sig                         = cmd_signals_install();
        memset(&c, 0, sizeof(c));
        rc = consume_start(&c, &o, &lc);
        if (rc == 0)
                rc = cmd_engine_run(run_pipeline, c.pl, sig);
        consume_stop(&c, sig);
        cmd_opts_free(&o);
        return rc;
}
