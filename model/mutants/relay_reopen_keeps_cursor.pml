/* SPDX-License-Identifier: Apache-2.0 */
/*
 * mutant relay_reopen_keeps_cursor
 * drops:          co_relay_reopen's "through = least(through, lo - 1)" (sql/0027; the trigger of 0021 before it), and with it the move into done of the ids between: a republished or unparked row stays at or below the cursor, where no fetch reads it
 * must violate:   P9
 * scenario:       relay_reopen
 */
#define G_REOPEN_LOWERS_CURSOR 0
#include "../relay_cursor.pml"
