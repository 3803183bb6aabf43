/* SPDX-License-Identifier: Apache-2.0 */
/*
 * mutant relay_cursor_passes_unpublished
 * drops:          ADVANCE_SQL's "least($1, the first row above through neither in done nor parked - 1)" (src/store/relay_sql.c): the cursor moves to the barrier's sequence value over committed rows not published yet, which no fetch reads again
 * must violate:   P9
 * scenario:       relay
 */
#define G_CURSOR_STOPS_AT_UNPUBLISHED 0
#include "../relay_cursor.pml"
