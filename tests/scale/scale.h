/* SPDX-License-Identifier: Apache-2.0 */
/*
 * scale: the checks and the rebalance report of test_scale (see the top of
 * test_scale.c). Never used by the program itself.
 */
#ifndef CO_TESTS_SCALE_H
#define CO_TESTS_SCALE_H

#include "scenario.h"

#include <stdint.h>

#define SCALE_MAX_SENT   4096
#define SCALE_MAX_POISON 16
#define SCALE_MAX_LIVES  8

enum scale_kind {
        SK_ORIGINAL, /* the first message of an intent (tenant, key) */
        SK_COPY,     /* same key and amount, a new event id */
        SK_CONFLICT, /* same key, another amount */
        SK_REJECTED, /* invalid: a rejected result of its own */
};

/* One message sent with an event id of its own (a redelivery of the same
 * event id is not recorded: it must add nothing). */
struct scale_sent {
        char tenant[16];
        char key[32];
        char event_id[40];
        enum scale_kind kind;
};

/* One consumer process, from its start to its end (kill or exit). */
struct scale_life {
        char name[16];
        char log[300];
        int64_t start_ms, end_ms; /* wall clock; end INT64_MAX: running */
};

/* A moment of the run that may cause a rebalance. */
struct scale_event {
        char what[48];
        int64_t at_ms; /* wall clock */
};

/* Wall clock in ms (the clock of chargeonce's log time stamps). */
int64_t scale_now_ms(void);

/* Every check at the end of the run; exits on the first failure. */
void scale_check(struct scenario *sc, struct sim *s,
                 const struct scale_sent *sent, int n_sent, char (*poison)[48],
                 int n_poison);

/* Prints, for each event, how long the group took to own every partition
 * again, from the consumers' "assigned" / "revoking" log lines. */
void scale_rebalance_report(const struct scale_life *lives, int n_lives,
                            const struct scale_event *ev, int n_ev,
                            int partitions);

#endif
