/* SPDX-License-Identifier: Apache-2.0 */
/* failpoint: see failpoint.h. Thread-safe: hits are counted atomically. */
#include "util/failpoint.h"

#ifdef CHARGEONCE_FAILPOINTS
#include "util/log.h"
#include "util/xalloc.h"

#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define FP_MAX 32

enum fp_action { FP_KILL, FP_ERROR, FP_DELAY };

static struct fp {
        char name[64];
        enum fp_action action;
        long delay_ms;
        long on_hit; /* fire on this hit (1-based); 0: every hit */
        atomic_long hits;
} fps[FP_MAX];
static int n_fps;
static int fp_log;

static int fp_parse_one(char *entry)
{
        char *eq = strchr(entry, '='), *act, *star;
        struct fp *f;

        if (!eq || n_fps == FP_MAX)
                return -1;
        *eq = '\0';
        f   = &fps[n_fps];
        snprintf(f->name, sizeof(f->name), "%s", entry);
        act       = eq + 1;
        f->on_hit = 1;
        if ((star = strchr(act, '*'))) {
                *star     = '\0';
                f->on_hit = atol(act);
                if (f->on_hit < 1)
                        return -1;
                act = star + 1;
        }
        if (!strcmp(act, "kill")) {
                f->action = FP_KILL;
        } else if (!strcmp(act, "error")) {
                f->action = FP_ERROR;
                f->on_hit = star ? f->on_hit : 0; /* error: every hit */
        } else if (!strncmp(act, "delay(", 6)) {
                f->action   = FP_DELAY;
                f->delay_ms = atol(act + 6);
                f->on_hit   = star ? f->on_hit : 0;
        } else {
                return -1;
        }
        atomic_init(&f->hits, 0);
        n_fps++;
        return 0;
}

int failpoint_init(void)
{
        const char *env = getenv("CHARGEONCE_FAILPOINTS");
        char *copy, *save = NULL, *tok;
        int r = 0;

        fp_log = getenv("CHARGEONCE_FAILPOINTS_LOG") != NULL;
        if (!env || !*env)
                return 0;
        copy = xstrdup(env);
        for (tok = strtok_r(copy, ",", &save); tok;
             tok = strtok_r(NULL, ",", &save)) {
                char shown[128];
                snprintf(shown, sizeof(shown), "%s", tok);
                if (fp_parse_one(tok) < 0) {
                        fprintf(stderr,
                                "CHARGEONCE_FAILPOINTS: bad entry \"%s\" "
                                "(want name=[N*]kill|error|delay(MS))\n",
                                shown);
                        r = -1;
                        break;
                }
        }
        free(copy);
        return r;
}

int failpoint_hit(const char *name)
{
        for (int i = 0; i < n_fps; i++) {
                struct fp *f = &fps[i];
                long hit;
                if (strcmp(f->name, name) != 0)
                        continue;
                hit = atomic_fetch_add(&f->hits, 1) + 1;
                if (f->on_hit && hit != f->on_hit)
                        return 0;
                if (fp_log)
                        log_warn(NULL, "failpoint %s hit %ld", name, hit);
                switch (f->action) {
                case FP_KILL:
                        log_warn(NULL, "failpoint %s: kill -9", name);
                        kill(getpid(), SIGKILL);
                        pause();
                        return 0;
                case FP_ERROR:
                        return -1;
                case FP_DELAY: {
                        struct timespec ts = { f->delay_ms / 1000,
                                               (f->delay_ms % 1000) *
                                                   1000000L };
                        nanosleep(&ts, NULL);
                        return 0;
                }
                }
        }
        return 0;
}
#else
/* ISO C forbids an empty translation unit. */
typedef int failpoint_unused;
#endif
