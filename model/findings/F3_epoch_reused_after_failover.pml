/* SPDX-License-Identifier: Apache-2.0 */
/*
 * finding F3_epoch_reused_after_failover
 * src today:      lease_epoch counts from the row: a grant lost in a failover is given again with the same epoch, and its old holder's settle matches it (src/store/settle.c, src/store/lease.c)
 * must violate:   P3
 * scenario:       failover
 */
#define P3_STRICT 1
#include "../chargeonce.pml"
