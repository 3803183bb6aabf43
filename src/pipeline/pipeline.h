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
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

struct config;
struct gateway_opts;
struct kafka_opts;
struct pipeline;

/* The pipeline's options, filled by cmd/ from the configuration
 * (consumer.*, db.*, topic.*, group.id, lease.duration, gateway.*,
 * provider_key.secret, idempotency.retention, worker.id, kafka.*).
 * Borrowed for the pipeline's life. */
struct pipeline_opts {
        const char *conninfo;
        int db_connections;
        const char *owner; /* lease owner name, e.g. "host:pid" */
        const char *topic, *topic_dlq, *group;
        const struct kafka_opts *kafka;
        const struct gateway_opts *gateway;
        const unsigned char *pk_secret; /* provider_key.secret */
        size_t pk_secret_len;
        size_t max_in_flight, batch_size, max_per_key, max_message_bytes;
        int64_t linger_us, lease_ms, deadline_ms, key_retention_ms;
};

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
