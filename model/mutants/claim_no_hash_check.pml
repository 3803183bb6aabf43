/* SPDX-License-Identifier: Apache-2.0 */
/*
 * mutant claim_no_hash_check
 * drops:          store_claim_batch's "WHEN k.request_hash <> f.request_hash THEN 'conflict'" (src/store/claim.c): another request under the key is judged as a copy
 * must violate:   P2
 * scenario:       conflict
 */
#define G_CLAIM_HASH(keyreq, req) 1
#include "../chargeonce.pml"
