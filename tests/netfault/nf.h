/* SPDX-License-Identifier: Apache-2.0 */
/*
 * nf: the history of a network-fault or failover run (tests/netfault).
 *
 * A loader thread produces intents at a steady, seeded rate (with client
 * retries and redeliveries among them); a reader thread reads the result
 * topic from the beginning on loopback for the whole run and keeps every
 * message with its broker append time (the result topic is made
 * LogAppendTime, so a result's time is when it reached the log). The test
 * asks the history when results flow again after a heal, and checks it
 * whole at the end (nf_check).
 *
 * Never used by the program itself.
 */
#ifndef CO_TESTS_NF_H
#define CO_TESTS_NF_H

#include "scenario.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#define NF_TENANT "nf"

struct nf_intent {
        int64_t produced_ms; /* wall clock ms, when handed to the producer */
        /* broker append time of its first non-replayed final result,
         * 0 while it has none */
        int64_t answered_ts;
        int copies; /* more messages of it: client retries, redeliveries */
};

struct nf_result {
        char key[32], event_id[40], status[16], payment_id[40];
        char charge_id[96];
        bool replayed;
        int32_t partition;
        int64_t offset;
        int64_t ts;  /* LogAppendTime, ms */
        int intent;  /* index of the intent it answers, -1: none of ours */
        bool parsed; /* JSON with every field read */
};

struct nf_run {
        struct scenario sc;
        unsigned seed;
        int rate; /* intents per second */

        pthread_mutex_t mu;
        struct nf_intent *intents; /* under mu */
        int n_intents, cap_intents;
        struct nf_result *results; /* under mu, in the order read */
        size_t n_results, cap_results;

        pthread_t loader, reader;
        atomic_int load_stop, read_stop;
        bool loading, reading;
        unsigned load_rand;
        long unknown_results; /* under mu: not JSON, not ours */
};

/* Wall clock in ms (the broker's append times are on the same clock). */
int64_t nf_now_ms(void);
void nf_sleep_ms(int ms);

/* The result topic's timestamps become the broker's append times. */
void nf_log_append_time(const char *topic);

void nf_init(struct nf_run *run, unsigned seed, int rate);
void nf_load_start(struct nf_run *run);
void nf_load_stop(struct nf_run *run); /* and flushes the producer */
void nf_read_start(struct nf_run *run);
/* Stops the reader once it read nothing new for idle_ms. */
void nf_read_stop(struct nf_run *run, int idle_ms);

int nf_intents(struct nf_run *run);
/* Append time of the first non-replayed final result appended after
 * after_ms that answers an intent with index >= min_intent; 0: none yet. */
int64_t nf_first_after(struct nf_run *run, int64_t after_ms, int min_intent);
/* When every intent below upto has its answer: the latest of their answers'
 * append times; 0 while one has none. */
int64_t nf_answered_upto(struct nf_run *run, int upto);
/* Intents below upto still without an answer. */
int nf_unanswered(struct nf_run *run, int upto);
/* Non-replayed final results appended after after_ms and before
 * before_ms (0: no end), of any intent. */
long nf_results_between(struct nf_run *run, int64_t after_ms,
                        int64_t before_ms);

/* The whole history against the simulator and the database. */
struct nf_verdict {
        int intents;
        long messages;       /* result messages read */
        long double_orders;  /* orders the simulator charged more than once */
        long double_charges; /* charges beyond the first of each order */
        long lost;           /* intents without a final result */
        long extra;          /* more than one distinct final result of an
                                intent, all with the same facts */
        long republished;    /* messages repeating an event_id already on
                                the topic (the same result published again) */
        long disagree;       /* intents whose results differ in status,
                                payment_id or provider_charge_id */
        long order;          /* per-key order broken */
        long violations;     /* every broken invariant, these included */
};
/* Checks and prints every violation (the first 20 of each kind). The
 * database is asked only when db is true (it is the run's own). */
void nf_check(struct nf_run *run, struct sim *s, bool db, struct nf_verdict *v);
/* Double charges and lost intents among intents [from, to). */
void nf_range(struct nf_run *run, json_t *stats, int from, int to,
              long *double_charges, long *lost);

#endif
