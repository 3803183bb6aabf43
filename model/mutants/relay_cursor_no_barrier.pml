/* SPDX-License-Identifier: Apache-2.0 */
/*
 * mutant relay_cursor_no_barrier
 * drops:          store_relay_advance's barrier (ADVANCE_RESOLVED_SQL, src/store/relay_sql.c): the cursor moves without waiting for the transactions that held a RowExclusiveLock on outbox when the last sequence value was read, so it passes an id drawn by a transaction still open, whose row commits below it and is never published
 * must violate:   P8
 * scenario:       relay
 */
#define G_BARRIER_ENDED(w) 1
#include "../relay_cursor.pml"
