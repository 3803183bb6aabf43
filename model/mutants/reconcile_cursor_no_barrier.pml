/* SPDX-License-Identifier: Apache-2.0 */
/*
 * mutant reconcile_cursor_no_barrier
 * drops:          the reconciler's barrier (CHK: barrier_vxids IS NULL OR none of them in pg_locks): the cursor moves to the barrier's time while a transaction that was open when the barrier was taken (its vxid in barrier_vxids) still runs; it commits a lease from its own now(), long before (a claim's now() + lease, a release's now() - 1 ms), below the cursor
 * must violate:   P11
 * scenario:       reconcile
 */
#define G_BARRIER_ENDED(t) 1
#include "../reconcile_cursor.pml"
