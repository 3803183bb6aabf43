/* SPDX-License-Identifier: Apache-2.0 */
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
 * gateway, batching); pipeline_new() starts the database worker threads
 * (dbpool). cmd/consume.c runs the relay and the reconciler beside it.
 */
#ifndef CO_PIPELINE_H
#define CO_PIPELINE_H

#include "util/compiler.h"

#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

struct gateway_opts;
struct kafka_opts;
struct metrics;
struct pipeline;

/* The pipeline's options, filled by cmd/ from the configuration
 * (consumer.*, db.*, topic.*, group.id, lease.duration, gateway.*,
 * provider_key.secret, idempotency.retention, worker.id, kafka.*).
 * Borrowed for the pipeline's life. */
struct pipeline_opts {
        const char *conninfo;
        int db_connections;
        /* the lease owner: this process's instance of owner_name,
         * "<name>#<nonce>" (store_lease_owner_instance); at start the
         * leases of owner_name's other instances, a predecessor's, are
         * released. owner_name NULL: owner only. */
        const char *owner, *owner_name;
        const char *topic, *topic_dlq, *group;
        const struct kafka_opts *kafka;
        const struct gateway_opts *gateway;
        const unsigned char *pk_secret; /* provider_key.secret */
        size_t pk_secret_len;
        size_t max_in_flight, batch_size, max_per_key, max_message_bytes;
        int decode_threads; /* besides the loop's (decode.h) */
        int64_t linger_us, lease_ms, deadline_ms, key_retention_ms;
        /* counts intents, settles, in flight, lag, the group; may be NULL */
        struct metrics *metrics;
};

/*
 * Connects everything (gateway client, database pool, DLQ producer, the
 * group's consumer). NULL with the reason in errstr and errno EINVAL when
 * the options are wrong (a configuration error), EIO when a service
 * refused. Owned by the caller:
 * pipeline_destroy(). o's strings must outlive the pipeline.
 */
struct pipeline *pipeline_new(const struct pipeline_opts *o, char *errstr,
                              size_t errstr_size) CO_MUST_CHECK;

/*
 * Runs the loop on the calling thread until *stop asks (flow/flow.h):
 * FLOW_DRAIN stops fetching, finishes what is in flight (at most
 * gateway.deadline + 10 s) and returns 0; FLOW_EXIT returns FLOW_EXIT_NOW
 * at once, leaving everything as it is (redelivery and the reconciler
 * recover it); a fatal consumer error returns 1, or PIPELINE_REJOIN when
 * it is the broker fencing the member's own rejoin after its session ran
 * out (kconsumer_fenced_by_own_rejoin): the caller destroys the pipeline
 * and makes a new one, whose new consumer joins again.
 */
int pipeline_run(struct pipeline *pl, const atomic_int *stop) CO_MUST_CHECK;
#define PIPELINE_REJOIN 75

/*
 * Finishes what safely can be without starting anything new (database
 * jobs in flight, up to 10 s), stores the offsets of what is done, leaves
 * the group after a final commit and frees pl. NULL is ignored.
 */
void pipeline_destroy(struct pipeline *pl);

#endif
