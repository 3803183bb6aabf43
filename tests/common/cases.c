/* SPDX-License-Identifier: Apache-2.0 */
/* cases: the runner of a test binary's named cases (see cases.h). */
#include "cases.h"

#include "testenv.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* The case running now: named by the exit hook when a check exits. */
static const char *current;
static pid_t runner_pid;
/* The case named on the command line and its own arguments. */
static const struct test_case *named;
static int named_argc;
static char **named_argv;
static const struct test_case *running;

static void cases_exit_hook(void)
{
        /* a forked child that exits is no failure of the case */
        if (current && getpid() == runner_pid) {
                printf("FAIL %s\n", current);
                fflush(stdout);
        }
}

char **cases_args(int *argc)
{
        if (running && running == named) {
                *argc = named_argc;
                return named_argv;
        }
        *argc = 0;
        return NULL;
}

static bool cases_run_one(const struct test_suite *s, const struct test_case *c)
{
        int before = s->failures ? s->failures() : 0;
        bool ok;

        printf("== %s\n", c->name);
        running = c;
        current = c->name;
        if (c->fn)
                c->fn();
        else
                c->fn_arg(c->arg);
        current = NULL;
        running = NULL;
        ok      = !s->failures || s->failures() == before;
        printf("%s %s\n", ok ? "ok" : "FAIL", c->name);
        return ok;
}

static void cases_usage(const struct test_suite *s)
{
        fprintf(stderr, "usage: %s [CASE [ARG...] | --list]; cases:", s->name);
        for (size_t i = 0; i < s->n_cases; i++)
                fprintf(stderr, " %s", s->cases[i].name);
        fprintf(stderr, "\n");
}

int cases_main(const struct test_suite *s, int argc, char **argv)
{
        size_t first = 0, last = s->n_cases - 1;
        int passed = 0, failed = 0;

        if (s->n_cases == 0)
                return 2;
        /* a case's lines and its children's logs stay in order */
        setvbuf(stdout, NULL, _IOLBF, 0);
        if (argc >= 2 && !strcmp(argv[1], "--list")) {
                for (size_t i = 0; i < s->n_cases; i++)
                        printf("%s\n", s->cases[i].name);
                return 0;
        }
        if (argc >= 2) {
                size_t i = 0;

                while (i < s->n_cases && strcmp(argv[1], s->cases[i].name))
                        i++;
                if (i == s->n_cases) {
                        fprintf(stderr, "%s: no case %s\n", s->name, argv[1]);
                        cases_usage(s);
                        return 2;
                }
                named      = &s->cases[i];
                named_argc = argc - 2;
                named_argv = argv + 2;
                last       = i;
                first      = s->chained ? 0 : i;
        }
        runner_pid = getpid();
        if (atexit(cases_exit_hook) != 0)
                return 1;
        if (s->setup) {
                int rc = s->setup();

                if (rc == TESTENV_SKIP)
                        return rc;
                if (rc != 0) {
                        printf("FAIL %s: setup failed\n", s->name);
                        return 1;
                }
        }
        for (size_t i = first; i <= last; i++) {
                if (cases_run_one(s, &s->cases[i]))
                        passed++;
                else
                        failed++;
        }
        if (s->teardown)
                s->teardown();
        printf("%d passed, %d failed\n", passed, failed);
        return failed ? 1 : 0;
}
