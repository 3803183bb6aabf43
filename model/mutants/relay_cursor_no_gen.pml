/* SPDX-License-Identifier: Apache-2.0 */
/*
 * mutant relay_cursor_no_gen
 * drops:          ADVANCE_SQL's "c.gen = $2" (src/store/relay_sql.c): an advance whose snapshot was read before a row was opened again (republished or unparked) still updates the cursor, with the first unpublished row as its snapshot saw it, and moves it back over the row the trigger had just let below it
 * must violate:   P9
 * scenario:       relay_reopen
 */
#define G_ADVANCE_CHECKS_GEN 0
#include "../relay_cursor.pml"
