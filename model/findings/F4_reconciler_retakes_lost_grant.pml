/* SPDX-License-Identifier: Apache-2.0 */
/*
 * finding F4_reconciler_retakes_lost_grant
 * src today:      the settle is fenced by (lease_owner, lease_epoch), and the reconciler writes one owner name for every item: its takeover round takes over again a payment its own item still holds (store_takeover_expired does not skip it), and after a failover that lost the first takeover the second one gets the same epoch, so the first item's late settle passes both fences (src/store/lease.c, src/store/settle.c, src/reconcile/reconcile.c)
 * must violate:   P3
 * scenario:       live_failover
 */
#define NR 2
#include "../chargeonce.pml"
