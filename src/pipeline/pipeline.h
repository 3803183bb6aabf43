/*
 * pipeline: `chargeonce consume`'s engine. Intents in from Kafka, exactly
 * one charge per (tenant, idempotency key), results into the outbox.
 *
 *   message -> decode (DLQ | rejected | ok) -> per-key queue ->
 *   claim batch (tx 1) -> gateway (same provider key on every try) ->
 *   settle batch (tx 2, fenced by the lease epoch) -> offset stored
 *
 * An offset is stored only when every message up to it is durably
 * handled. A gateway outcome that stays unknown is never reported failed:
 * the payment stays processing and the reconciler finishes it.
 *
 * Threads: pipeline_run() runs the event loop on the calling thread (Kafka,
 * gateway, batching) and starts database worker threads (dbpool).
 */
#ifndef CO_PIPELINE_H
#define CO_PIPELINE_H

#include <signal.h>

struct config;

/* pipeline_run()'s answer to a second signal: the caller ends the process
 * at once, without any teardown (see cmd/consume.c). */
#define PIPELINE_EXIT_NOW (-1)

/*
 * Runs until *stop becomes non-zero (first signal: drain in-flight work,
 * store and commit offsets, return 0), or a fatal error (returns 1).
 * *stop >= 2 (second signal) makes it return PIPELINE_EXIT_NOW at once,
 * leaving everything as it is; whatever was in flight is recovered by
 * redelivery and the reconciler.
 */
int pipeline_run(const struct config *cfg, volatile sig_atomic_t *stop);

#endif
