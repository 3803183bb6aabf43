/* SPDX-License-Identifier: Apache-2.0 */
/*
 * sim_webhook_sign: Standard Webhooks signatures (docs/contract.md §5.1).
 * Pure. Never logs or returns the secret.
 */
#ifndef SIM_WEBHOOK_SIGN_H
#define SIM_WEBHOOK_SIGN_H

#include <stddef.h>
#include <stdint.h>

/* "v1," + base64 of 32 bytes + NUL */
#define SIM_WEBHOOK_SIG_SIZE 48

/*
 * Writes "v1,<base64 HMAC-SHA256(key, "<id>.<timestamp>.<body>")>" into
 * out. key is the decoded secret (the bytes after "whsec_"). Returns 0, or
 * -1 if the signed text cannot be built (allocation failure).
 */
int sim_webhook_sign(const unsigned char *key, size_t key_len, const char *id,
                     int64_t timestamp, const char *body, size_t body_len,
                     char out[SIM_WEBHOOK_SIG_SIZE])
    __attribute__((warn_unused_result));

#endif
