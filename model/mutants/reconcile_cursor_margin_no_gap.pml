/* SPDX-License-Identifier: Apache-2.0 */
/*
 * mutant reconcile_cursor_margin_no_gap
 * drops:          the part of the barrier's margin beyond the release's 1 ms: barrier_at = ADV's now() - R, which does not cover the gap between a transaction's now() and its vxid in pg_locks; a release that took its now() before ADV read pg_locks, and is not in the barrier, writes its lease below barrier_at
 * must violate:   P11
 * scenario:       reconcile
 */
#define MARGIN R
#include "../reconcile_cursor.pml"
