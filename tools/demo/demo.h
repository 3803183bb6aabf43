/* SPDX-License-Identifier: Apache-2.0 */
/*
 * chargeonce-demo: the parts of the README's demo that are easier in C
 * than in shell. The workload is a pure function of (intents, seed,
 * decline rate), so `publish`, `wait` and `report` each rebuild it from
 * the same options instead of passing a file around.
 */
#ifndef CO_DEMO_H
#define CO_DEMO_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* What a payment intent should end as. */
enum wl_expect { EX_SUCCEEDED, EX_FAILED, EX_REJECTED };

struct wl_intent {
        char tenant[16];
        char key[40]; /* idempotency key: a UUID, one per intent */
        char order[32];
        char customer[32];
        long long amount;
        char currency[4];
        char method[40];
        char event_id[37]; /* of its first publish */
        enum wl_expect expect;
};

enum wl_kind {
        MK_ORIGINAL,   /* the first publish of an intent */
        MK_REDELIVERY, /* the same message again: same event_id */
        MK_RETRY,      /* a client retry: same intent, new event_id */
        MK_CONCURRENT, /* a copy produced at once with others, own partition */
        MK_REUSE,      /* the intent's key with another amount: a conflict */
        MK_POISON,     /* cannot be answered: goes to the DLQ */
};

struct wl_msg {
        enum wl_kind kind;
        int intent;    /* index into intents, -1 for poison */
        int partition; /* -1: by key */
        int group;     /* > 1: this and the next group-1 go out at once */
        char event_id[37];
        char *key;   /* message key (NULL: none) */
        char *value; /* the bytes published */
};

struct workload {
        size_t n_intents, n_msgs;
        struct wl_intent *in;
        struct wl_msg *msgs;
        /* what the workload holds */
        size_t redeliveries, retries, concurrent, reuses, poison;
        size_t expect_succeeded, expect_failed, expect_rejected;
};

struct wl_opts {
        size_t intents;
        uint64_t seed;
        double p_decline;
        int partitions;
};

int workload_build(struct workload *w, const struct wl_opts *o);
void workload_free(struct workload *w);
/* The message whose event_id is ev (first one), or -1. */
long workload_find_event(const struct workload *w, const char *ev);

/* splitmix64 */
uint64_t prng_next(uint64_t *state);
double prng_unit(uint64_t *state);

/* publish.c */
struct pub_opts {
        const char *bootstrap, *topic;
        double rate; /* messages per second, 0: as fast as possible */
};
int publish_run(const struct workload *w, const struct pub_opts *o);

/* collect.c */
struct col_opts {
        const char *bootstrap, *intents, *results, *dlq;
        const char *sim_url;  /* for progress and ground truth */
        const char *conninfo; /* report: the database */
        bool from_outbox;     /* results from the outbox table, not the
                               * topic (a chargeonce without a relay) */
        double fraction;      /* wait: stop at this share of intents */
        int timeout_s;
        const char *watch; /* wait: "pid,pid": fail when one is gone */
};
int collect_wait(const struct workload *w, const struct col_opts *o);
int collect_report(const struct workload *w, const struct col_opts *o);

/* admin.c */
int admin_topics(const char *bootstrap, const char *intents,
                 const char *results, const char *dlq, int partitions);
int admin_db(const char *conninfo, const char *action, const char *name);
int admin_exec(char **argv);

double now_s(void);
void sleep_s(double s);

#endif
