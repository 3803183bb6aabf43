/* SPDX-License-Identifier: Apache-2.0 */
/*
 * mutant relay_cursor_no_gen
 * drops:          ADVANCE_SQL's "c.gen = $2" (src/store/relay_sql.c): an advance whose snapshot of the outbox (3a) was read before a parked row was unparked still updates the cursor; its snapshot has the row parked, so the cursor moves over it, unparked and unpublished now (since 0027 only an unpark needs gen: a republished row leaves done, which the advance reads on the latest cursor row)
 * must violate:   P9
 * scenario:       relay_reopen
 */
#define G_ADVANCE_CHECKS_GEN 0
#include "../relay_cursor.pml"
