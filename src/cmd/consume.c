/* SPDX-License-Identifier: Apache-2.0 */
/*
 * cmd/consume: `chargeonce consume`. Wiring only: the engines of one
 * table (below), all with the same lifecycle (cmd/engine.h): the
 * pipeline on the main thread; the http server (http.listen, so that
 * /metrics and the probes answer from the start to the end), the outbox
 * relay (relay.enabled) and the reconciler (reconcile.enabled) each on a
 * thread of its own.
 *
 * Start: every enabled engine's options are judged first (a
 * configuration error exits 2 before anything listens or connects), then
 * the engines are made in the table's order, then the threads started.
 * Stop, the reverse: the pipeline drains first (its last results reach
 * the outbox), then the reconciler, then the relay, which finishes the
 * round in flight (results settled during the drain are published by the
 * next relay to run), last the http server. A second signal ends the
 * process at once at any point.
 *
 * A pipeline that returns PIPELINE_REJOIN (its static member's own rejoin
 * fenced after a network fault, kafka/consumer.h) is destroyed and made
 * again while the other engines go on: what it had in flight is left to
 * redelivery and the reconciler, as after a crash. Every time a fault
 * makes it so, up to KCONSUMER_REJOIN_MAX times within
 * KCONSUMER_REJOIN_WINDOW_MS; one more stops the process (exit 1) as any
 * fatal consumer error does.
 */
#include "cmd/cmd.h"
#include "cmd/engine.h"
#include "cmd/opts.h"
#include "cmd/serve.h"
#include "flow/flow.h"
#include "kafka/consumer.h"
#include "pipeline/pipeline.h"
#include "util/config.h"
#include "util/failpoint.h"
#include "util/log.h"
#include "util/metrics.h"
#include "util/timeutil.h"

#include <errno.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>

/* One engine of consume: its kind, where its options and its switch are
 * in struct cmd_opts (ALWAYS: no switch). The first runs on the main
 * thread. */
#define ALWAYS SIZE_MAX
static const struct {
        const struct cmd_engine_kind *kind;
        const char *thread; /* the name of its thread, for errors */
        size_t opts, enabled;
} engines[] = {
        { &cmd_pipeline_kind, "pipeline", offsetof(struct cmd_opts, pipeline),
          ALWAYS },
        { &cmd_serve_kind, "http", offsetof(struct cmd_opts, http),
          offsetof(struct cmd_opts, http_enabled) },
        { &cmd_relay_kind, "relay", offsetof(struct cmd_opts, relay),
          offsetof(struct cmd_opts, relay_enabled) },
        { &cmd_reconcile_kind, "reconciler",
          offsetof(struct cmd_opts, reconcile),
          offsetof(struct cmd_opts, reconcile_enabled) },
};
#define N_ENGINES (sizeof(engines) / sizeof(*engines))

struct consume {
        const struct cmd_opts *o;
        void *e[N_ENGINES];                     /* made; NULL: not */
        struct cmd_engine_thread *t[N_ENGINES]; /* started; [0] unused */
};

static bool enabled(const struct consume *c, size_t i)
{
        return engines[i].enabled == ALWAYS ||
               *(const bool *)((const char *)c->o + engines[i].enabled);
}

static const void *opts_of(const struct consume *c, size_t i)
{
        return (const char *)c->o + engines[i].opts;
}

/* Runs the pipeline (engine 0) on this thread, making it again after a
 * fenced rejoin; its exit status. */
static int run_pipeline(struct consume *c, const atomic_int *sig,
                        struct log_ctx *lc)
{
        struct kconsumer_rejoins rejoins = { .n = 0 };

        for (;;) {
                int rc = cmd_engine_run(engines[0].kind->run, c->e[0], sig);
                char err[1024];

                if (rc != PIPELINE_REJOIN)
                        return rc;
                if (flow_stop_level(sig) != FLOW_RUN)
                        return 1;
                if (!kconsumer_rejoin_budget(&rejoins, time_mono_ms())) {
                        log_error(lc,
                                  "fenced for the %dth time in %d minutes: "
                                  "stopping (does another process run "
                                  "under this group.instance.id?)",
                                  KCONSUMER_REJOIN_MAX + 1,
                                  KCONSUMER_REJOIN_WINDOW_MS / 60000);
                        return 1;
                }
                metrics_inc(c->o->metrics, METRIC_CONSUMER_REJOINS, 0);
                engines[0].kind->destroy(c->e[0]);
                c->e[0] =
                    engines[0].kind->make(opts_of(c, 0), err, sizeof(err));
                if (!c->e[0]) {
                        log_error(lc, "%s: %s", engines[0].thread, err);
                        return 1;
                }
        }
}

/* Judges, makes and starts the engines: 0, 2 (configuration) or 1. */
static int consume_start(struct consume *c, struct log_ctx *lc)
{
        char err[1024];

        for (size_t i = 0; i < N_ENGINES; i++) {
                if (enabled(c, i) && engines[i].kind->check &&
                    engines[i].kind->check(opts_of(c, i), err, sizeof(err))) {
                        log_error(lc, "%s", err);
                        return 2;
                }
        }
        for (size_t i = 0; i < N_ENGINES; i++) {
                if (!enabled(c, i))
                        continue;
                if (!(c->e[i] = engines[i].kind->make(opts_of(c, i), err,
                                                      sizeof(err)))) {
                        int why = errno;

                        log_error(lc, "%s: %s", engines[i].thread, err);
                        return why == EINVAL ? 2 : 1; /* configuration: 2 */
                }
                if (i > 0 && !(c->t[i] = cmd_engine_start(
                                   engines[i].thread, engines[i].kind->run,
                                   c->e[i], err, sizeof(err)))) {
                        log_error(lc, "%s: %s", engines[i].thread, err);
                        return 1;
                }
        }
        return 0;
}

/* The main thread's engine first, then the threads in reverse order. */
static void consume_stop(struct consume *c, const atomic_int *sig)
{
        for (size_t k = 0; k < N_ENGINES; k++) {
                size_t i = k == 0 ? 0 : N_ENGINES - k;

                /* the exit status is the pipeline's; the others log their
                 * own fatal errors */
                CO_IGNORE(cmd_engine_stop(c->t[i], sig));
                if (c->e[i])
                        engines[i].kind->destroy(c->e[i]);
        }
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
                               config_settings(cfg)->topic_intents);
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
        c.o = &o;
        rc  = consume_start(&c, &lc);
        if (rc == 0)
                rc = run_pipeline(&c, sig, &lc);
        consume_stop(&c, sig);
        cmd_opts_free(&o);
        return rc;
}
