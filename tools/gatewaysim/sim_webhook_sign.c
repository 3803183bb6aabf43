/* SPDX-License-Identifier: Apache-2.0 */
/*
 * sim_webhook_sign: builds the signed content and its HMAC. Pure; any
 * thread. Must never sign anything but exactly "<id>.<timestamp>.<body>".
 */
#include "sim_webhook_sign.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util/crypto.h"

int sim_webhook_sign(const unsigned char *key, size_t key_len, const char *id,
                     int64_t timestamp, const char *body, size_t body_len,
                     char out[SIM_WEBHOOK_SIG_SIZE])
{
        unsigned char mac[CRYPTO_SHA256_LEN];
        char prefix[320];
        char *msg = NULL;
        int n;
        int ret = -1;

        n = snprintf(prefix, sizeof(prefix), "%s.%" PRId64 ".", id, timestamp);
        if (n < 0 || (size_t)n >= sizeof(prefix))
                goto out;
        msg = malloc((size_t)n + body_len + 1);
        if (!msg)
                goto out;
        memcpy(msg, prefix, (size_t)n);
        memcpy(msg + n, body, body_len);
        crypto_hmac_sha256(key, key_len, msg, (size_t)n + body_len, mac);
        memcpy(out, "v1,", 3);
        crypto_base64_encode(mac, sizeof(mac), out + 3);
        ret = 0;
out:
        free(msg);
        return ret;
}
