/* SPDX-License-Identifier: Apache-2.0 */
/*
 * mutant owner_shared_by_worker_id
 * drops:          the lease's owner instance (fill_owner in src/cmd/opts.c, store_lease_owner_instance in src/store/lease.c): a lease is granted to the owner name, the worker.id, which a successor shares with a predecessor that hangs (finding F4, fixed in 717a663)
 * must violate:   P3
 * scenario:       failover_shared
 */
#define G_OWNER_INSTANCE 0
#include "../chargeonce.pml"
