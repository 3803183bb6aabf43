/* SPDX-License-Identifier: Apache-2.0 */
/*
 * ops/gc: what `chargeonce gc` does (docs/operations.md, "Retention").
 * Expired idempotency keys become tombstones and their bulky rows go
 * (store/gc.h), in batches of batch_size keys, each one short
 * transaction, batch_pause_ms apart.
 *
 * Before anything is read or written, the retention rule
 * (payment/key_retention.h): the key retention must be at least the
 * intents topic's retention.ms (read from the broker) and the gateway's
 * key retention, else a refusal naming both numbers.
 *
 * Must never: remove anything in a dry run, print an idempotency key,
 * keep a transaction open across the pause, or go on after a refusal.
 */
#ifndef CO_OPS_GC_H
#define CO_OPS_GC_H

#include "kafka/kconf.h"
#include "util/compiler.h"

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

/* What gc runs with (cmd/gc.c fills it from the configuration). */
struct ops_gc_opts {
        const char *conninfo;             /* db.conninfo */
        const struct kafka_opts *kafka;   /* to read the topic's retention */
        const char *topic;                /* topic.intents */
        int64_t key_retention_ms;         /* idempotency.retention */
        int64_t gateway_key_retention_ms; /* gateway.key_retention */
        int64_t batch_size;               /* gc.batch_size */
        int64_t batch_pause_ms;           /* gc.batch_pause */
};

/* What the operator asked for. */
struct ops_gc_args {
        bool dry_run, json;
        int64_t limit; /* tombstones at most in this run; 0: no limit */
};

/*
 * One run: the retention rule, then the count (dry run) or the batches,
 * then the report on stdout (a table, or one JSON document) and the
 * progress on stderr. *stop non-zero (a signal) ends the run between two
 * batches: what was done is committed and reported. Returns the exit
 * status: 0 done; 1 runtime failure (database or broker unreachable, or
 * stopped); 2 refused by the retention rule (nothing read or written).
 * Main thread.
 */
int ops_gc_run(const struct ops_gc_opts *o, const struct ops_gc_args *a,
               const atomic_int *stop) CO_MUST_CHECK;

#endif
