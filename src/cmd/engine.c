/* SPDX-License-Identifier: Apache-2.0 */
/* cmd/engine: one way to run an engine, here or on a thread (engine.h). */
#include "cmd/engine.h"
#include "flow/flow.h"
#include "util/failpoint.h"
#include "util/log.h"
#include "util/xalloc.h"

#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

/* A signal handler may write a lock-free atomic (C11 7.14.1.1). */
_Static_assert(ATOMIC_INT_LOCK_FREE == 2, "atomic_int must be lock-free");

static atomic_int signals;

static void on_signal(int sig)
{
        int n = atomic_load_explicit(&signals, memory_order_relaxed);

        (void)sig;
        if (n < FLOW_EXIT)
                atomic_store_explicit(&signals, n + 1, memory_order_relaxed);
}

atomic_int *cmd_signals_install(void)
{
        struct sigaction sa;

        memset(&sa, 0, sizeof(sa));
        sa.sa_handler = on_signal;
        sigemptyset(&sa.sa_mask);
        sigaction(SIGTERM, &sa, NULL);
        sigaction(SIGINT, &sa, NULL);
        signal(SIGPIPE, SIG_IGN);
        return &signals;
}

static _Noreturn void exit_now(void)
{
        struct log_ctx lc = LOG_CTX_INIT;

        lc.component = "main";
        log_warn(&lc, "second signal: exiting now; unfinished work is "
                      "recovered by redelivery and the reconciler");
        _exit(1); /* no teardown: every step is durable and idempotent */
}

int cmd_engine_run(cmd_engine_fn run, void *engine, const atomic_int *sig)
{
        int rc = run(engine, sig);

        if (rc == FLOW_EXIT_NOW)
                exit_now();
        return rc;
}

struct cmd_engine_thread {
        pthread_t thread;
        cmd_engine_fn run;
        void *engine;
        atomic_int stop;
        pthread_mutex_t mu;
        pthread_cond_t cv; /* signalled when done */
        bool done;         /* under mu */
        int rc;
};

static void *engine_main(void *arg)
{
        struct cmd_engine_thread *t = arg;

        int rc = t->run(t->engine, &t->stop);

        pthread_mutex_lock(&t->mu);
        t->rc   = rc;
        t->done = true;
        pthread_cond_signal(&t->cv);
        pthread_mutex_unlock(&t->mu);
        return NULL;
}

struct cmd_engine_thread *cmd_engine_start(const char *name, cmd_engine_fn run,
                                           void *engine, char *errstr,
                                           size_t errstr_size)
{
        struct cmd_engine_thread *t = xcalloc(1, sizeof(*t));
        int e;

        t->run    = run;
        t->engine = engine;
        atomic_init(&t->stop, FLOW_RUN);
        pthread_mutex_init(&t->mu, NULL);
        pthread_cond_init(&t->cv, NULL);
        if ((e = pthread_create(&t->thread, NULL, engine_main, t)) != 0) {
                snprintf(errstr, errstr_size, "%s: cannot start its thread: %s",
                         name, strerror(e));
                pthread_cond_destroy(&t->cv);
                pthread_mutex_destroy(&t->mu);
                free(t);
                return NULL;
        }
        return t;
}

int cmd_engine_stop(struct cmd_engine_thread *t, const atomic_int *sig)
{
        int rc;

        if (!t)
                return 0;
        atomic_store(&t->stop, FLOW_DRAIN);
        /* the drain may take a while: woken at once when it ends, and at
         * least every 100 ms to see a second signal (a signal handler
         * cannot signal a condition variable) */
        pthread_mutex_lock(&t->mu);
        while (!t->done) {
                struct timespec until;

                if (flow_stop_level(sig) >= FLOW_EXIT)
                        exit_now();
                clock_gettime(CLOCK_REALTIME, &until);
                until.tv_nsec += 100 * 1000000L;
                if (until.tv_nsec >= 1000000000L) {
                        until.tv_sec++;
                        until.tv_nsec -= 1000000000L;
                }
                (void)pthread_cond_timedwait(&t->cv, &t->mu, &until);
        }
        rc = t->rc;
        pthread_mutex_unlock(&t->mu);
        pthread_join(t->thread, NULL);
        pthread_cond_destroy(&t->cv);
        pthread_mutex_destroy(&t->mu);
        free(t);
        return rc == FLOW_EXIT_NOW ? 1 : rc;
}

int cmd_engine_main(const struct cmd_engine_kind *k, const void *opts)
{
        char err[1024];
        struct log_ctx lc = LOG_CTX_INIT;
        const atomic_int *sig;
        void *e;
        int rc;

        lc.component = k->component;
        if (failpoint_init() < 0)
                return 2;
        if (k->check && k->check(opts, err, sizeof(err)) < 0) {
                log_error(&lc, "cannot start: %s", err);
                return 2;
        }
        sig = cmd_signals_install();
        if (!(e = k->make(opts, err, sizeof(err)))) {
                rc = errno == EINVAL ? 2 : 1;
                log_error(&lc, "cannot start: %s", err);
                return rc;
        }
        rc = cmd_engine_run(k->run, e, sig);
        if (rc == 0)
                log_info(&lc, "stopped");
        k->destroy(e);
        return rc;
}
