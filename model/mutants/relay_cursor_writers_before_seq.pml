/* SPDX-License-Identifier: Apache-2.0 */
/*
 * mutant relay_cursor_writers_before_seq
 * drops:          store_relay_advance's order, the sequence read (ADVANCE_SEQ_SQL) before the writers (RELAY_WRITERS_SQL): a transaction that takes its lock and draws an id between the two reads is in neither, and the cursor later passes its id while it is open
 * must violate:   P8
 * scenario:       relay
 */
#define G_WRITERS_BEFORE_SEQ 1
#include "../relay_cursor.pml"
