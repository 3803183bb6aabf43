/* SPDX-License-Identifier: Apache-2.0 */
/*
 * identity: the ids chargeonce derives instead of drawing at random, so
 * that doing the same work twice produces the same ids. Pure, any thread.
 *
 * A database that loses its last commits (a failover to an asynchronous
 * standby, a restore) forgets claims and settles that the gateway and the
 * result topic still remember; the runbook then rewinds the consumer group
 * and the intents are claimed again. Had the payment id been random, the
 * re-claim would get a new payment id, hence a new provider key, and the
 * gateway would charge again. Derived from the intent's own identity, the
 * re-claimed payment has the same id and the same provider key, and the
 * gateway answers it with the charge it already made; the result written
 * again carries the same event id, so a listener that saw the first one
 * can tell it is the same.
 *
 * The derivations are contracts with what is already stored and sent:
 * never change the bytes they produce (tests/payment/test_identity.c pins
 * them with vectors computed by another tool). Every id is a UUID of
 * version 8 (RFC 9562, "custom"), lower-case 8-4-4-4-12 text.
 */
#ifndef CO_PAYMENT_IDENTITY_H
#define CO_PAYMENT_IDENTITY_H

#include "util/crypto.h"
#include "util/uuid.h"

#include <stdbool.h>
#include <stddef.h>

/*
 * The payment id of an intent: the first 16 bytes of
 * HMAC-SHA256(secret, "chargeonce/payment-id/v1" NUL tenant_id NUL
 * idem_key NUL request_hash[32]) with the version (8) and variant (10)
 * bits set. Keyed with provider_key.secret so that nobody who knows a key
 * can compute its payment id. tenant_id and idem_key hold no NUL (contract
 * section 2), so the input is unambiguous.
 */
void payment_id_derive(const unsigned char *secret, size_t secret_len,
                       const char *tenant_id, const char *idem_key,
                       const unsigned char request_hash[CRYPTO_SHA256_LEN],
                       char out[UUID_STR_LEN]);

/*
 * The event id of a payment's result with that status: SHA-256(
 * "chargeonce/result/v1" NUL "payment" NUL payment_id NUL status) cut to a
 * version 8 UUID. A payment has at most one result per status (it moves
 * processing -> final, review -> succeeded | failed), so the id is unique;
 * no secret: the payment id is unguessable already, and every engine
 * (consumer, reconciler, webhooks, review) can compute it.
 */
void payment_result_event_id(const char *payment_id, const char *status,
                             char out[UUID_STR_LEN]);

/*
 * The event id of the answer to one intent event that has no payment of
 * its own (a replay of a finished intent, a conflict, a rejection):
 * SHA-256("chargeonce/result/v1" NUL "answer" NUL tenant_id NUL event_key
 * NUL status NUL replayed ? "1" : "0") as above. An event is answered once
 * (the inbox), so the id is unique.
 */
void payment_answer_event_id(const char *tenant_id, const char *event_key,
                             const char *status, bool replayed,
                             char out[UUID_STR_LEN]);

#endif
