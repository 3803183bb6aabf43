/* SPDX-License-Identifier: Apache-2.0 */
/*
 * mutant reconcile_cursor_no_min
 * drops:          ADV's least(barrier_at, the least lease of a processing payment in [through, barrier_at)): through = barrier_at, over a processing payment whose lease expired below the barrier and that no TAKE has found yet
 * must violate:   P11
 * scenario:       reconcile
 */
#define G_ADV_MIN 0
#include "../reconcile_cursor.pml"
