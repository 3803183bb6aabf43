/* SPDX-License-Identifier: Apache-2.0 */
/*
 * provider_key: hex(HMAC-SHA256(secret, payment id)) (see provider_key.h).
 * Must never change what it produces for a given secret and payment id.
 */
#include "payment/provider_key.h"

#include "util/crypto.h"

#include <string.h>

_Static_assert(PAYMENT_PROVIDER_KEY_LEN == 2 * CRYPTO_SHA256_LEN + 1,
               "a provider key is the hex of one SHA-256 MAC");

void payment_provider_key(const unsigned char *secret, size_t secret_len,
                          const char *payment_id,
                          char out[PAYMENT_PROVIDER_KEY_LEN])
{
        unsigned char mac[CRYPTO_SHA256_LEN];

        crypto_hmac_sha256(secret, secret_len, payment_id, strlen(payment_id),
                           mac);
        crypto_hex(mac, sizeof(mac), out);
}
