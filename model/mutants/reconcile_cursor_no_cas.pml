/* SPDX-License-Identifier: Apache-2.0 */
/*
 * mutant reconcile_cursor_no_cas
 * drops:          ADV's compare-and-swap (WHERE barrier_at IS NOT DISTINCT FROM the value CHK read): an ADV whose CHK saw an older barrier end updates the row after another reconciler's ADV took a new barrier, and as its SET reads barrier_at on the row, it moves the cursor to that new barrier, whose transactions nobody waited for
 * must violate:   P11
 * scenario:       reconcile
 */
#define G_ADV_CAS 1
#include "../reconcile_cursor.pml"
