/* SPDX-License-Identifier: Apache-2.0 */
/*
 * flow: what the loops of the three engines (pipeline, relay, reconcile)
 * share, as pure pieces with no I/O: the stop levels and the drain, a
 * periodic timer, the list of live items, a FIFO that batches by size and
 * linger, and the lease-renewal clock. Each engine owns its instances and
 * uses them from its loop thread only (nothing here locks). Times are
 * monotonic milliseconds or microseconds, always passed in, so every piece
 * is unit-tested without a clock.
 *
 * Must never: read a clock, allocate, or block.
 */
#ifndef CO_FLOW_H
#define CO_FLOW_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* ------------------------------------------------------------------ */
/* stop levels: one C11 atomic per engine, written by cmd/ (signals) */

enum flow_stop {
        FLOW_RUN   = 0, /* go on */
        FLOW_DRAIN = 1, /* take no new work, finish what is in hand */
        FLOW_EXIT  = 2, /* return at once (second signal) */
};

/* x_run()'s answer to FLOW_EXIT: the caller ends the process without any
 * teardown (safe: every step is durable and idempotent). */
#define FLOW_EXIT_NOW (-1)

/* The level *stop asks for now. Any thread; also written from a signal
 * handler (atomic_int is lock-free on every platform we build for). */
static inline int flow_stop_level(const atomic_int *stop)
{
        return atomic_load_explicit(stop, memory_order_relaxed);
}

/* ------------------------------------------------------------------ */
/* the drain: what a loop does with the stop level on each turn        */

struct flow_drain {
        bool draining;
        int64_t deadline_ms;
};

enum flow_step {
        FLOW_STEP_RUN,   /* no stop asked, or draining with work left */
        FLOW_STEP_BEGIN, /* the drain starts now: stop taking work */
        FLOW_STEP_DONE,  /* drained (nothing left) or past the deadline */
        FLOW_STEP_EXIT,  /* second signal: return FLOW_EXIT_NOW */
};

/*
 * One turn: level from flow_stop_level(), now_ms, the drain budget
 * (deadline = start + budget_ms) and how much work is still in hand.
 * The turn the drain starts returns BEGIN when work is in hand and DONE
 * when none is (no caller needs a special case for an idle stop); later
 * turns return DONE once left == 0 or the deadline passed.
 */
enum flow_step flow_drain_step(struct flow_drain *d, int level, int64_t now_ms,
                               int64_t budget_ms, size_t left);

/* ------------------------------------------------------------------ */
/* periodic timer                                                      */

struct flow_tick {
        int64_t every_ms;
        int64_t next_ms; /* 0: due at the first check */
};

/* True (and re-armed for now + every) when the timer is due. */
bool flow_tick_due(struct flow_tick *t, int64_t now_ms);
/* Milliseconds until due (0 when due), at most cap_ms. */
int64_t flow_tick_wait(const struct flow_tick *t, int64_t now_ms,
                       int64_t cap_ms);

/*
 * Periodic counters: true when a stats line is due (force, or the timer
 * is due and cur differs from what was last reported); then copies cur
 * into *last. cur and last are plain structs of size n.
 */
bool flow_stats_due(struct flow_tick *t, int64_t now_ms, bool force,
                    const void *cur, void *last, size_t n);

/* ------------------------------------------------------------------ */
/* the live items: an intrusive doubly-linked list with a count        */

struct flow_link {
        struct flow_link *prev, *next;
};

struct flow_list {
        struct flow_link *head;
        size_t n;
};

void flow_list_add(struct flow_list *l, struct flow_link *k);
void flow_list_remove(struct flow_list *l, struct flow_link *k);

/* The struct holding link k as its member. */
#define FLOW_ENTRY(k, type, member)                                            \
        ((type *)(void *)((char *)(k)-offsetof(type, member)))

/* ------------------------------------------------------------------ */
/* a FIFO of items waiting for a batch (size or linger)                */

struct flow_qnode {
        struct flow_qnode *next;
        int64_t since_us; /* when it joined */
};

struct flow_queue {
        struct flow_qnode *head, *tail; /* head: the oldest */
        size_t n;
};

void flow_queue_push(struct flow_queue *q, struct flow_qnode *x,
                     int64_t now_us);
/* The oldest, or NULL when empty. */
struct flow_qnode *flow_queue_pop(struct flow_queue *q);

/*
 * Whether a batch should leave now: force (draining), the queue holds a
 * full batch, its oldest waited linger_us, or nothing else is running
 * (idle: waiting would only add latency). False when empty.
 */
bool flow_queue_ready(const struct flow_queue *q, size_t batch_size,
                      int64_t linger_us, int64_t now_us, bool force, bool idle);

/* ------------------------------------------------------------------ */
/* the lease-renewal clock                                             */

/*
 * An owner extends the leases it holds every lease/3, so a slow but live
 * owner keeps them and one that died loses them after at most a lease.
 * The loop asks flow_renew_round() on every turn (cheap: at most every
 * half period, and at least once a second) and, when it says yes,
 * collects the items for which flow_renew_due() holds.
 */
struct flow_renew {
        int64_t every_ms; /* lease / 3 */
        int64_t check_ms; /* how often a round looks at the items */
        int64_t last_round_ms;
};

void flow_renew_init(struct flow_renew *r, int64_t lease_ms);
bool flow_renew_round(struct flow_renew *r, int64_t now_ms);
/* Whether an item last renewed at renewed_ms is due in this round. */
bool flow_renew_due(const struct flow_renew *r, int64_t renewed_ms,
                    int64_t now_ms);

#endif
