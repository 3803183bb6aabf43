/* SPDX-License-Identifier: Apache-2.0 */
/*
 * mutant reconcile_cursor_no_margin
 * drops:          the barrier's margin (barrier_at = ADV's now() - 1 s): barrier_at = ADV's now(), so a release that starts after the barrier was taken writes its lease (its now() - 1 ms) below it, and an ADV that does not see it yet moves the cursor over it
 * must violate:   P11
 * scenario:       reconcile
 */
#define MARGIN 0
#include "../reconcile_cursor.pml"
