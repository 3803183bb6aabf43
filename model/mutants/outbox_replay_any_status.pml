/* SPDX-License-Identifier: Apache-2.0 */
/*
 * mutant outbox_replay_any_status
 * drops:          store_outbox_batch's check that a replay's payment still holds the replayed status (cur, ok: src/store/settle.c; claim_again in src/pipeline/jobs.c): the replay is written whatever the payment holds by then (finding F1, fixed in 7724dd1)
 * must violate:   P2
 * scenario:       gc
 */
#define G_REPLAY_CURRENT(p, st) 1
#include "../chargeonce.pml"
