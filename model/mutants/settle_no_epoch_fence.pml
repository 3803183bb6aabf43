/* SPDX-License-Identifier: Apache-2.0 */
/*
 * mutant settle_no_epoch_fence
 * drops:          store_settle_batch's "AND p.lease_epoch = i.lease_epoch" (src/store/settle.c): a settle fenced by its owner instance alone, which one process's grants of a payment share: a failover restores the reconciler's earlier takeover while a later item of it holds the next one
 * must violate:   P3
 * scenario:       live_failover
 */
#define G_SETTLE_EPOCH(row, held) 1
#include "../chargeonce.pml"
