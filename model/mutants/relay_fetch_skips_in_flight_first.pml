/* SPDX-License-Identifier: Apache-2.0 */
/*
 * mutant relay_fetch_skips_in_flight_first
 * drops:          store_relay_fetch's order of its two filters (src/store/relay_sql.c): the rows in flight are left out before each key's first unpublished row is taken, so a key whose first row is still in flight offers its next one, which an overlapped round may publish first
 * must violate:   P10
 * scenario:       relay
 */
#define G_FETCH_SKIPS_IN_FLIGHT_FIRST 1
#include "../relay_cursor.pml"
