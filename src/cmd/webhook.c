/* SPDX-License-Identifier: Apache-2.0 */
/*
 * cmd/webhook: `chargeonce webhook`. Wiring only: the http engine alone
 * (src/http): the gateway's signed webhooks, /metrics, /healthz and
 * /readyz (the database only: this process consumes nothing). A secret
 * (webhook.secret or webhook.secret_file) is required. SIGTERM stops
 * taking connections, lets answers in progress finish and exits 0.
 */
#include "cmd/cmd.h"
#include "cmd/opts.h"
#include "cmd/serve.h"
#include "util/metrics.h"

#include <stdio.h>
#include <string.h>

int cmd_webhook(struct config *cfg, int argc, char **argv)
{
        struct cmd_opts o;
        int rc;

        if (argc > 1) {
                if (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h")) {
                        printf("usage: chargeonce webhook\n"
                               "Serves POST /webhooks/gateway (the "
                               "gateway's signed webhooks, verified with "
                               "webhook.secret),\nGET /metrics, /healthz "
                               "and /readyz on http.listen. SIGTERM exits "
                               "0.\n");
                        return 0;
                }
                return cmd_usage_error("webhook", "unexpected argument %s",
                                       argv[1]);
        }
        cmd_opts_fill(&o, cfg);
        /* no consumer here: no "joined" gauge for an alert to read */
        metrics_hide(o.metrics, METRIC_CONSUMER_JOINED);
        metrics_hide(o.metrics, METRIC_CONSUMER_REJOINS);
        o.http.webhooks             = HTTP_WEBHOOKS_REQUIRED;
        o.http.ready_needs_consumer = false;
        rc                          = cmd_engine_main(&cmd_serve_kind, &o.http);
        cmd_opts_free(&o);
        return rc;
}
