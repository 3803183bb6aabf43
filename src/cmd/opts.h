/* SPDX-License-Identifier: Apache-2.0 */
/*
 * cmd/opts: every engine's and adapter's typed options, filled once from
 * the configuration. The only place below main.c that reads configuration
 * keys: no module under cmd/ includes util/config.h.
 */
#ifndef CO_CMD_OPTS_H
#define CO_CMD_OPTS_H

#include "gateway/client.h"
#include "http/http.h"
#include "kafka/kconf.h"
#include "pipeline/pipeline.h"
#include "reconcile/reconcile.h"
#include "relay/relay.h"

#include <stdbool.h>
#include <stddef.h>

struct config;

/* Everything one process runs with. Strings point into the configuration,
 * which must outlive it; owner names live here. */
struct cmd_opts {
        /* The lease owner names: the name (worker.id, else "<host>:<pid>";
         * "/reconcile" appended for the reconciler) and this process's
         * instance of it, "<name>#<16 hex>" (a random nonce per start). A
         * lease is granted to the instance: a successor under the same
         * worker.id, or a predecessor frozen past a failover that lost its
         * grant, holds another owner name, which the settle and the
         * renewal fence out. */
        char owner_name[128];
        char owner[160];
        char rec_owner_name[144];
        char rec_owner[176];
        struct kafka_prop *kprops; /* owned */
        char instance_id[256];     /* the member's group.instance.id */
        char instance_note[256];   /* why it is dynamic (see kconf.h) */
        struct metrics *metrics;   /* owned: this run's registry */
        struct kafka_opts kafka;
        struct gateway_opts gateway;
        struct pipeline_opts pipeline;
        struct relay_opts relay;
        struct reconcile_opts reconcile;
        bool relay_enabled, reconcile_enabled;
        /* the http server's options; http.listen empty: off. Each
         * command sets http.webhooks and http.ready_needs_consumer. */
        struct http_opts http;
        bool http_enabled;
};

/* Fills o from cfg (every value was checked when set). Free with
 * cmd_opts_free(). */
void cmd_opts_fill(struct cmd_opts *o, const struct config *cfg);
void cmd_opts_free(struct cmd_opts *o);

#endif
