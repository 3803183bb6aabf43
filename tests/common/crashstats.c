/* SPDX-License-Identifier: Apache-2.0 */
/* crashstats: the crash campaign's line per run (see crashstats.h). */
#include "crashstats.h"

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/types.h>
#include <unistd.h>

static struct {
        char point[64];
        unsigned seed;
        int kills, intents;
        bool begun, checking, printed;
        pid_t pid; /* a forked child that exits prints nothing */
} run;

static void crashstats_print(long violations)
{
        if (!run.begun || run.printed || getpid() != run.pid)
                return;
        run.printed = true;
        printf("crash-stats point=%s seed=%u kills=%d intents=%d "
               "violations=%ld\n",
               run.point, run.seed, run.kills, run.intents, violations);
        fflush(stdout);
}

/* exit() before crashstats_done(): a check failed */
static void crashstats_exit_hook(void)
{
        crashstats_print(run.checking ? 1 : 0);
}

void crashstats_begin(const char *point, unsigned seed)
{
        static bool hooked;

        snprintf(run.point, sizeof(run.point), "%s", point);
        run.seed     = seed;
        run.kills    = 0;
        run.intents  = 0;
        run.begun    = true;
        run.checking = false;
        run.printed  = false;
        run.pid      = getpid();
        if (!hooked && atexit(crashstats_exit_hook) == 0)
                hooked = true;
}

void crashstats_kill(void)
{
        run.kills++;
}

void crashstats_intents(int n)
{
        run.intents = n;
}

void crashstats_checking(void)
{
        run.checking = true;
}

void crashstats_done(long violations)
{
        crashstats_print(violations);
}
