/* SPDX-License-Identifier: Apache-2.0 */
/*
 * mutant settle_no_status_guard
 * drops:          store_settle_batch's "AND p.status = 'processing'" (src/store/settle.c): a settle repeated after a lost answer writes again
 * must violate:   P5
 * scenario:       race
 */
#define G_SETTLE_PROCESSING(st) 1
#include "../chargeonce.pml"
