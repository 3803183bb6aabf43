/* SPDX-License-Identifier: Apache-2.0 */
/*
 * mutant settle_no_epoch_fence
 * drops:          store_settle_batch's "AND p.lease_epoch = i.lease_epoch" (src/store/settle.c): a settle names no epoch
 * must violate:   P3
 * scenario:       race
 */
#define G_SETTLE_EPOCH(row, held) 1
#include "../chargeonce.pml"
