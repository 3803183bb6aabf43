/* SPDX-License-Identifier: Apache-2.0 */
/*
 * cmd/serve: the http engine (src/http) as the commands run it: alone
 * (`chargeonce webhook`) or on a thread beside the process's other
 * engines (consume, relay, reconcile), so that every long-running
 * process answers /metrics, /healthz and /readyz.
 */
#ifndef CO_CMD_SERVE_H
#define CO_CMD_SERVE_H

#include "cmd/engine.h"
#include "http/http.h"
#include "util/compiler.h"

#include <stdatomic.h>
#include <stddef.h>

/* The http engine on a thread of its own. */
struct cmd_serve {
        struct http *http;
        struct cmd_engine_thread *t;
};

/*
 * Makes the server from o and starts its loop on a thread. Returns 0,
 * 2 on a configuration error, 1 when it cannot listen (logged). On
 * failure s holds nothing to stop. Main thread.
 */
int cmd_serve_start(struct cmd_serve *s,
                    const struct http_opts *o) CO_MUST_CHECK;

/* Stops the loop, then the server (answers in progress finish). A
 * second signal meanwhile ends the process. Nothing started: nothing. */
void cmd_serve_stop(struct cmd_serve *s, const atomic_int *signals);

/*
 * cmd_engine_main(k, opts), with the server beside the engine when
 * enabled: started first (so the probes answer while the engine comes
 * up), stopped last. Returns the command's exit status.
 */
int cmd_serve_beside(const struct cmd_engine_kind *k, const void *opts,
                     const struct http_opts *o, bool enabled) CO_MUST_CHECK;

/* `chargeonce webhook`'s engine kind: the server alone. */
extern const struct cmd_engine_kind cmd_serve_kind;

#endif
