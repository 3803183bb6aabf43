/* SPDX-License-Identifier: Apache-2.0 */
/*
 * mutant gc_no_tombstone
 * drops:          store_gc_batch's tombstone (src/store/gc.c): the expired key and its payment are deleted instead of kept as a tombstone
 * must violate:   P7
 * scenario:       gc
 */
#define G_GC_TOMBSTONE 0
#include "../chargeonce.pml"
