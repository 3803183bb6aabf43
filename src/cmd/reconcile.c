/* SPDX-License-Identifier: Apache-2.0 */
/*
 * cmd/reconcile: `chargeonce reconcile`, the reconciler alone. Wiring
 * only: failpoints, signals and the engine (src/reconcile/). The first
 * SIGTERM/SIGINT stops taking payments over and finishes what is at the
 * gateway, then exits 0; a second one exits at once, which is safe: a
 * payment in hand stays processing under our lease and is taken over
 * again when it expires.
 */
#include "cmd/cmd.h"
#include "cmd/engine.h"
#include "cmd/opts.h"
#include "cmd/serve.h"
#include "util/metrics.h"
#include "reconcile/reconcile.h"
#include "util/failpoint.h"
#include "util/log.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

int cmd_reconcile(struct config *cfg, int argc, char **argv)
{
        struct cmd_opts o;
        int rc;

        if (argc > 1) {
                if (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h")) {
                        printf("usage: chargeonce reconcile\n"
                               "Finishes payments left processing by an "
                               "owner whose lease expired: settled from the "
                               "gateway's evidence, posted again with the "
                               "same provider key, or sent to review (never "
                               "failed without a refusal). SIGTERM finishes "
                               "what is in hand and exits 0; a second "
                               "SIGTERM exits at once.\n");
                        return 0;
                }
                return cmd_usage_error("reconcile", "unexpected argument %s",
                                       argv[1]);
        }
        cmd_opts_fill(&o, cfg);
        o.http.webhooks = HTTP_WEBHOOKS_OFF;
        /* no consumer here: no "joined" gauge for an alert to read */
        metrics_hide(o.metrics, METRIC_CONSUMER_JOINED);
        metrics_hide(o.metrics, METRIC_CONSUMER_REJOINS);
        rc = cmd_serve_beside(&cmd_reconcile_kind, &o.reconcile, &o.http,
                              o.http_enabled);
        cmd_opts_free(&o);
        return rc;
}
