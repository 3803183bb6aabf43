/* SPDX-License-Identifier: Apache-2.0 */
/*
 * mutant relay_reopen_keeps_done
 * drops:          co_relay_reopen's "- own" (sql/0027): the row opened again (republished or unparked) is left in relay_cursor.done, or put there with the ids between it and through, so it still counts as published; no fetch offers it, and the next advance moves the cursor over it
 * must violate:   P9
 * scenario:       relay_reopen
 */
#define G_REOPEN_DROPS_OWN 0
#include "../relay_cursor.pml"
