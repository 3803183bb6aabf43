/* SPDX-License-Identifier: Apache-2.0 */
/*
 * mutant reconciler_retakes_held
 * drops:          store_takeover_expired's "AND payment_id <> ALL ($4)", the payments the reconciler's items hold (take_over in src/reconcile/reconcile.c, src/store/lease.c): its next round takes over again a payment whose takeover a failover lost while its item still holds it (finding F4, fixed in 717a663)
 * must violate:   P3
 * scenario:       retake_failover
 */
#define G_TAKEOVER_NOT_HELD(held) 1
#include "../chargeonce.pml"
