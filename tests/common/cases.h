/* SPDX-License-Identifier: Apache-2.0 */
/*
 * cases: the named cases of an integration test binary, so that each case
 * is a ctest test of its own (co_case_tests in cmake/chargeonce.cmake) and
 * a failure names its case. A binary lists its cases in a table and hands
 * argv to cases_main():
 *
 *   BINARY                   every case, in the table's order
 *   BINARY NAME [ARG...]     the case NAME; ARGs are its own (cases_args)
 *   BINARY --list            the names, one a line (needs no service)
 *
 * Each case run prints "ok NAME" or "FAIL NAME" on stdout, and the run
 * ends with "N passed, M failed". A case fails when one of its checks
 * exits the process (SC_CHECK, REQUIRE: "FAIL NAME" is printed on the way
 * out) or, for a suite with a failure counter, when the counter grew.
 *
 * Never used by the program itself.
 */
#ifndef CO_TESTS_CASES_H
#define CO_TESTS_CASES_H

#include <stdbool.h>
#include <stddef.h>

struct test_case {
        const char *name; /* [a-z0-9_.]: the ctest name's suffix */
        /* one of the two: a case of its own, or a shared body run on arg */
        void (*fn)(void);
        void (*fn_arg)(const char *arg);
        const char *arg;
};

struct test_suite {
        const char *name; /* for messages: "store_claim", "test_crash" */
        const struct test_case *cases;
        size_t n_cases;
        /*
         * Before the first case (never for --list): 0 to go on,
         * TESTENV_SKIP (77) to skip the run (it says why), anything else
         * fails it. NULL: nothing to set up.
         */
        int (*setup)(void);
        /* After the last case that ran (not after an exit). May be NULL. */
        void (*teardown)(void);
        /*
         * Checks failed so far, for a suite whose checks count failures and
         * go on (storetest's CHECK); NULL when every failed check exits.
         */
        int (*failures)(void);
        /*
         * The cases form one sequence on shared state (one database): a
         * case run alone first runs the cases before it, each reported.
         */
        bool chained;
};

/* Runs what argv asks for (see above). Returns main()'s exit status: 0,
 * 1 (a case failed), 2 (usage: an unknown case) or TESTENV_SKIP. */
int cases_main(const struct test_suite *suite, int argc, char **argv)
    __attribute__((warn_unused_result));

/* The arguments after the case's name, for the case running now. */
char **cases_args(int *argc);

#endif
