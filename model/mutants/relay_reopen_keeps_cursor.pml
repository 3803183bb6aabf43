/* SPDX-License-Identifier: Apache-2.0 */
/*
 * mutant relay_reopen_keeps_cursor
 * drops:          sql/0021's trigger co_relay_cursor_reopen (through lowered below a row opened again): a republished or unparked row stays at or below the cursor, where no fetch reads it
 * must violate:   P9
 * scenario:       relay_reopen
 */
#define G_REOPEN_LOWERS_CURSOR 0
#include "../relay_cursor.pml"
