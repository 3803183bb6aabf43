/* SPDX-License-Identifier: Apache-2.0 */
/*
 * mutant settle_no_owner_fence
 * drops:          store_settle_batch's "AND p.lease_owner = ($10::text[])[i.ord]" (src/store/settle.c): a settle fenced by its epoch alone, which a grant lost in a failover shares with the next one (finding F3, fixed in 7724dd1)
 * must violate:   P3
 * scenario:       failover
 */
#define G_SETTLE_OWNER(row, own) 1
#include "../chargeonce.pml"
