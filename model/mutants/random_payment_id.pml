/* SPDX-License-Identifier: Apache-2.0 */
/*
 * mutant random_payment_id
 * drops:          change 1: the payment id derived from the intent (src/store/claim.c); a fresh uuid per claim, as before
 * must violate:   P1
 * scenario:       failover
 */
#define PID_FRESH 1
#include "../chargeonce.pml"
