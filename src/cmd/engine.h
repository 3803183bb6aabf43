/* SPDX-License-Identifier: Apache-2.0 */
/*
 * cmd/engine: runs any engine (pipeline, relay, reconciler) the same way.
 *
 * Every engine has one lifecycle: x_new(opts, errstr, errstr_size),
 * x_run(x, stop), x_destroy(x). x_new() fails with NULL, the reason in
 * errstr, and errno EINVAL when the options are wrong (the command exits
 * 2, a configuration error) or another errno (exits 1). x_run() loops until
 * *stop (a C11 atomic, see flow/flow.h) asks: FLOW_DRAIN finishes the work in
 * hand and returns 0; FLOW_EXIT returns FLOW_EXIT_NOW at once; a fatal error
 * returns 1.
 *
 * The signal policy lives here once: the first SIGTERM/SIGINT drains, a
 * second one ends the process at once (still safe: every step is durable
 * and idempotent, and what was in flight is redelivered or reconciled).
 */
#ifndef CO_CMD_ENGINE_H
#define CO_CMD_ENGINE_H

#include "util/compiler.h"

#include <stdatomic.h>
#include <stddef.h>

/* An engine's x_run(), behind a void pointer (each engine has a one-line
 * adapter in cmd/). */
typedef int (*cmd_engine_fn)(void *engine, const atomic_int *stop);

/*
 * SIGTERM/SIGINT handlers counting signals (up to 2) into the flag
 * returned; SIGPIPE ignored. Main thread, once.
 */
atomic_int *cmd_signals_install(void);

/*
 * Runs run(engine, signals) on the calling thread. FLOW_EXIT_NOW (second
 * signal) ends the process at once with status 1, without teardown;
 * otherwise returns run()'s answer.
 */
int cmd_engine_run(cmd_engine_fn run, void *engine,
                   const atomic_int *signals) CO_MUST_CHECK;

/* An engine, as a command runs it (alone: `chargeonce relay`; or in
 * the table of `chargeonce consume`): its adapters around x_new, x_run
 * and x_destroy. */
struct cmd_engine_kind {
        const char *component; /* for the log */
        /* the options judged before any engine is made (a configuration
         * error, exit 2), or NULL when make() judges them */
        int (*check)(const void *opts, char *errstr, size_t errstr_size);
        void *(*make)(const void *opts, char *errstr, size_t errstr_size);
        cmd_engine_fn run;
        void (*destroy)(void *engine);
};

/* The engines of src/ (cmd/kinds.c; the http server: cmd/serve.c). */
extern const struct cmd_engine_kind cmd_pipeline_kind;
extern const struct cmd_engine_kind cmd_relay_kind;
extern const struct cmd_engine_kind cmd_reconcile_kind;

/*
 * A command's whole life with one engine: failpoints, signals, make (a
 * configuration error, errno EINVAL, returns 2; another failure 1), run
 * on this thread until the signals stop it, destroy. Returns the command's
 * exit status. Main thread.
 */
int cmd_engine_main(const struct cmd_engine_kind *k,
                    const void *opts) CO_MUST_CHECK;

struct cmd_engine_thread;

/* Starts run(engine, its own stop flag) on a thread of its own; NULL
 * with a reason when the thread cannot start. */
struct cmd_engine_thread *cmd_engine_start(const char *name, cmd_engine_fn run,
                                           void *engine, char *errstr,
                                           size_t errstr_size) CO_MUST_CHECK;

/*
 * Asks the engine to drain and waits for its thread; a second signal
 * (signals reaching FLOW_EXIT) meanwhile ends the process at once.
 * Returns run()'s answer and frees t. NULL t: returns 0.
 */
int cmd_engine_stop(struct cmd_engine_thread *t,
                    const atomic_int *signals) CO_MUST_CHECK;

#endif
