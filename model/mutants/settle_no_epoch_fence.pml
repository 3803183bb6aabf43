/* SPDX-License-Identifier: Apache-2.0 */
/*
 * mutant settle_no_epoch_fence
 * drops:          store_settle_batch's "AND p.lease_epoch = i.lease_epoch" (src/store/settle.c): a settle fenced by its owner name alone, which the reconciler's items of one payment share
 * must violate:   P3
 * scenario:       retake
 */
#define G_SETTLE_EPOCH(row, held) 1
#include "../chargeonce.pml"
