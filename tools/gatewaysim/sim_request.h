/* SPDX-License-Identifier: Apache-2.0 */
/*
 * sim_request: decoding and validating a POST /v1/charges body, and the
 * fingerprint of its parameters that a reused Idempotency-Key is compared
 * with. Pure (jansson and util/crypto only). Never accepts a request that
 * lacks a field the contract says is always sent.
 */
#ifndef SIM_REQUEST_H
#define SIM_REQUEST_H

#include <stddef.h>
#include <stdint.h>

#include <jansson.h>

#include "util/crypto.h"

struct sim_request {
        int64_t amount;
        const char *currency;       /* borrowed from root */
        const char *payment_method; /* borrowed from root */
        const char *reference;      /* borrowed from root */
        const char *tenant_id;      /* borrowed from root */
        const char *order_id;       /* borrowed from root */
        json_t *metadata;           /* borrowed from root */
        json_t *root;               /* owned: json_decref via release */
        /* SHA-256 of the canonical form of amount, currency,
         * payment_method, reference and metadata */
        unsigned char fingerprint[CRYPTO_SHA256_LEN];
};

/*
 * Parses body[0..len) into req. Returns 0, or -1 with the error code
 * ("invalid_json", "parameter_missing", "parameter_invalid") in *code and
 * the offending parameter (or NULL) in *param; both are static strings.
 * On success the caller must call sim_request_release(req).
 */
int sim_request_parse(const char *body, size_t len, struct sim_request *req,
                      const char **code, const char **param)
    __attribute__((warn_unused_result));

void sim_request_release(struct sim_request *req);

#endif
