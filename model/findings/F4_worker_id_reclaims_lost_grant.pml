/* SPDX-License-Identifier: Apache-2.0 */
/*
 * finding F4_worker_id_reclaims_lost_grant
 * src today:      the settle is fenced by (lease_owner, lease_epoch) and a consumer's owner name is its worker.id, which change 3's successor shares with a frozen predecessor: after a failover that lost the predecessor's claim, the successor claims the intent again at epoch 1 under the same name, and the predecessor's late settle passes both fences (src/store/claim.c, src/store/settle.c, src/cmd/opts.c fill_owner)
 * must violate:   P3
 * scenario:       failover
 */
#define SHARED_WORKER_ID 1
#include "../chargeonce.pml"
