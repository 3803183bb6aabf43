/* SPDX-License-Identifier: Apache-2.0 */
/*
 * sim_webhook: the webhook sender. Events are queued by request handlers
 * (never blocking them) and sent by one thread with libcurl, each at its
 * due time, retried a few times on failure. Duplicates share one
 * webhook-id. Must never block a request handler on the network and never
 * send an unsigned event when a secret is configured.
 */
#ifndef SIM_WEBHOOK_H
#define SIM_WEBHOOK_H

#include <stdbool.h>
#include <stdint.h>

#include "sim_store.h"

struct sim_webhook;

/* A sender whose counters go to st (borrowed); its thread is running.
 * NULL on failure. */
struct sim_webhook *sim_webhook_new(struct sim_store *st);
/* Stops the thread (pending events are dropped) and frees everything. */
void sim_webhook_destroy(struct sim_webhook *wh);

/*
 * Queues the event body (copied) for url, signed with secret ("whsec_..."
 * or empty for no signature header), due after delay_ms; when dup, a second
 * copy with the same webhook-id is due after dup_delay_ms. Any thread.
 */
void sim_webhook_enqueue(struct sim_webhook *wh, const char *url,
                         const char *secret, const char *body, int64_t delay_ms,
                         bool dup, int64_t dup_delay_ms, int attempts);
/* Drops every queued event. Any thread. */
void sim_webhook_clear(struct sim_webhook *wh);

#endif
