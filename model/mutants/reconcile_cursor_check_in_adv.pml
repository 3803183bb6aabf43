/* SPDX-License-Identifier: Apache-2.0 */
/*
 * mutant reconcile_cursor_check_in_adv
 * drops:          CHK as a statement of its own before ADV: the barrier checked in ADV's WHERE, whose snapshot of payments was taken before; a barrier transaction that commits after that snapshot and before the check is seen gone, but its lease is not in the snapshot, and the cursor passes it
 * must violate:   P11
 * scenario:       reconcile
 */
#define G_CHECK_IN_ADV 1
#include "../reconcile_cursor.pml"
