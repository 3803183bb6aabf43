/* SPDX-License-Identifier: Apache-2.0 */
/*
 * decode: the consume loop's intents decoded on more than its own thread.
 *
 * Decoding (intent_parse: JSON, the rules, the request hash) is pure and
 * is nine tenths of the loop's work per message; in a replay or a backlog
 * it bounds the loop. A poll's messages are cut into contiguous slices,
 * one per thread (the helpers and the calling thread); the call returns
 * when every slice is decoded, so the loop sees its messages in order and
 * nothing else changes hands. Small polls (a quiet stream) are decoded on
 * the calling thread alone: no hand-over, no added latency.
 *
 * Must never: let a helper touch anything but its slice of the messages
 * (read) and of the intents (written); return before every slice is done.
 */
#ifndef CO_PIPELINE_DECODE_H
#define CO_PIPELINE_DECODE_H

#include "intent/intent.h"

#include <librdkafka/rdkafka.h>
#include <stdbool.h>
#include <stddef.h>

struct decoder;

/* A decoder with `helpers` threads besides the caller's (0: the caller
 * alone). A message whose value and key together exceed max_bytes is not
 * parsed: INTENT_DLQ, "message_too_large". NULL with errno if a thread
 * cannot be started. Owned by the caller: decoder_destroy(). */
struct decoder *decoder_new(int helpers, size_t max_bytes);

/* Stops and joins the helpers. NULL is fine. */
void decoder_destroy(struct decoder *d);

/* True when m is over the decoder's size bound (decoded unparsed). */
bool decoder_too_large(const struct decoder *d, const rd_kafka_message_t *m);

/* Decodes msgs[0..n) into in[0..n) (each intent_init'ed or reset before;
 * reset again here). Only one call at a time per decoder. */
void decoder_run(struct decoder *d, rd_kafka_message_t *const *msgs, size_t n,
                 struct intent *in);

#endif
