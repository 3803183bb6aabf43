/* SPDX-License-Identifier: Apache-2.0 */
/*
 * payment/key_retention: may expired idempotency keys become tombstones?
 * The rule of `chargeonce gc` (docs/operations.md, "Retention"), pure so
 * that it is tested without a broker.
 *
 * A tombstone still answers a copy of its intent (replayed, never a new
 * charge), but it no longer knows which event ids it answered (the inbox
 * rows go): a redelivery of an old message would then get a replayed
 * result instead of nothing. So keys are kept at least as long as the
 * intents topic keeps messages (retention.ms; -1, or a compact-only
 * topic, keeps them forever: always refused), and at least as long as
 * the gateway keeps its keys (gateway.key_retention: while the gateway
 * may still answer for a provider key, the evidence of that payment
 * stays).
 *
 * Must never: allow a topic retention it could not read (unknown is a
 * refusal of another kind: the caller's runtime failure).
 */
#ifndef CO_PAYMENT_KEY_RETENTION_H
#define CO_PAYMENT_KEY_RETENTION_H

#include "util/compiler.h"

#include <stddef.h>
#include <stdint.h>

/* The topic keeps its messages forever (retention.ms = -1, or compacted
 * without deletion). */
#define KEY_RETENTION_FOREVER (-1)

/*
 * 0 when keys older than key_ms may become tombstones; -1 when not, with
 * the reason in errstr naming both numbers and both keys (e.g.
 * "idempotency.retention 7d (604800000 ms) is shorter than retention.ms
 * of topic payments.intents, 14d (1209600000 ms)"). topic_ms is the
 * intents topic's retention.ms or KEY_RETENTION_FOREVER; topic its name.
 */
int payment_key_retention_check(int64_t key_ms, int64_t topic_ms,
                                const char *topic, int64_t gateway_ms,
                                char *errstr, size_t errstr_size) CO_MUST_CHECK;

#endif
