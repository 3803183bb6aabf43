/* SPDX-License-Identifier: Apache-2.0 */
/*
 * mutant review_ignores_gateway
 * drops:          payment_review_decide (src/payment/review_rule.c): an operator's decision is applied whatever the gateway lists
 * must violate:   P4
 * scenario:       gc
 */
#define G_REVIEW_RULE(q, succ) 1
#include "../chargeonce.pml"
