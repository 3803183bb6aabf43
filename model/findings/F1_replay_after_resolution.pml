/* SPDX-License-Identifier: Apache-2.0 */
/*
 * finding F1_replay_after_resolution
 * src today:      store_outbox_batch writes a replayed result with the outcome the claim read, whatever the key holds when it is written (src/store/settle.c, src/pipeline/jobs.c replay_stored)
 * must violate:   P2
 * scenario:       gc
 */
#define G_REPLAY_CURRENT(st) 1
#include "../chargeonce.pml"
