/* SPDX-License-Identifier: Apache-2.0 */
/*
 * mutant webhook_finishes_final
 * drops:          payment_webhook_rule's status test (src/payment/webhook_rule.c): a webhook finishes a payment whatever its status
 * must violate:   P5
 * scenario:       race
 */
#define G_WEBHOOK_OPEN(st) 1
#include "../chargeonce.pml"
