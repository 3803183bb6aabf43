/* SPDX-License-Identifier: Apache-2.0 */
/*
 * offsets: which offset of each partition may be stored. A message's
 * offset is committable only when it and every earlier message of its
 * partition are durably handled, so a crash re-delivers at most what was
 * not finished (at least once). Pure: no librdkafka.
 *
 * A partition's messages are added in offset order (as a consumer gets
 * them); done() may come in any order. Each assignment of a partition gets
 * a new generation, so a late done() from a revoked assignment is ignored.
 *
 * Threads: one owner thread.
 */
#ifndef CO_OFFSETS_H
#define CO_OFFSETS_H

#include "util/compiler.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct offsets;

struct offsets *offsets_new(void);
void offsets_destroy(struct offsets *ot);

/* Starts tracking partition p (after an assignment): a new generation,
 * nothing pending. Returns the generation. */
uint32_t offsets_assign(struct offsets *ot, int32_t p);
/* Stops tracking p (revoked or lost): pending entries are forgotten. */
void offsets_revoke(struct offsets *ot, int32_t p);

/* Adds a message. Returns 0, or -1 if p is not assigned with gen or the
 * offset is not above the last one added. */
int offsets_add(struct offsets *ot, int32_t p, uint32_t gen,
                int64_t offset) CO_MUST_CHECK;
/* Marks a message handled. Ignored for a stale generation. */
void offsets_done(struct offsets *ot, int32_t p, uint32_t gen, int64_t offset);

/*
 * The offset to store for p (the next one to read: last handled
 * contiguous offset + 1) if it moved since the last call, else -1.
 */
int64_t offsets_take_committable(struct offsets *ot, int32_t p);
/* Messages added and not yet done, in all partitions / in p. */
size_t offsets_pending(const struct offsets *ot);
size_t offsets_pending_in(const struct offsets *ot, int32_t p);
/* The highest partition number seen + 1 (for iteration). */
int32_t offsets_partition_count(const struct offsets *ot);

#endif
