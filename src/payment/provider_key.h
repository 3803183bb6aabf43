/* SPDX-License-Identifier: Apache-2.0 */
/*
 * provider_key: the idempotency key sent to the payment provider with
 * every charge of a payment (its Idempotency-Key header). Pure, any
 * thread.
 *
 * The derivation is a contract with every charge ever sent: the provider
 * deduplicates by this key, so a payment taken over after a crash must
 * send exactly the key it sent before. Never change the bytes it produces
 * (tests/payment/test_provider_key.c pins them with fixed vectors), and
 * never log the secret.
 */
#ifndef CO_PAYMENT_PROVIDER_KEY_H
#define CO_PAYMENT_PROVIDER_KEY_H

#include <stddef.h>

#define PAYMENT_PROVIDER_KEY_LEN 65 /* 64 hex digits and the NUL */

/*
 * Writes the provider key of a payment into out: the lower-case hex of
 * HMAC-SHA256 keyed with secret[0..secret_len) (any bytes, NULs included;
 * secret may be NULL when secret_len is 0) over the bytes of the
 * NUL-terminated payment_id, normally its 36-character uuid text.
 */
void payment_provider_key(const unsigned char *secret, size_t secret_len,
                          const char *payment_id,
                          char out[PAYMENT_PROVIDER_KEY_LEN]);

#endif
