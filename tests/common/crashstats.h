/* SPDX-License-Identifier: Apache-2.0 */
/*
 * crashstats: the one line a crash case prints for the crash campaign
 * (scripts/crash-campaign.sh):
 *
 *   crash-stats point=P seed=S kills=K intents=N violations=V
 *
 * printed once per run: by crashstats_done() when the checks ran to the
 * end, or on the way out when a check exits the process. A check that
 * fails after crashstats_checking() is a broken invariant (violations at
 * least 1: such checks stop at the first); one that fails before is a
 * failure of the run (violations 0: nothing was checked). The campaign
 * counts failures from the exit status, not from this line.
 *
 * Never used by the program itself.
 */
#ifndef CO_TESTS_CRASHSTATS_H
#define CO_TESTS_CRASHSTATS_H

/* The run of point (a case name) with seed begins. */
void crashstats_begin(const char *point, unsigned seed);
/* A chargeonce process was killed with SIGKILL (by a failpoint or the
 * test). */
void crashstats_kill(void);
/* Intents (or, for the relay, outbox rows) the run checks. */
void crashstats_intents(int n);
/* From now on the run checks its invariants. */
void crashstats_checking(void);
/* The checks ran to the end and found `violations` broken invariants:
 * prints the line. */
void crashstats_done(long violations);

#endif
