/* SPDX-License-Identifier: Apache-2.0 */
/*
 * mutant presend_no_lease_check
 * drops:          gateway_send_check's lease test (src/gateway/presend.c), right before every POST: a frozen consumer posts on a lease it lost
 * must violate:   P4
 * scenario:       gc
 */
#define G_PRESEND_LEASE(held) 1
#include "../chargeonce.pml"
