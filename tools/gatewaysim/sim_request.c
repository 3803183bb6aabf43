/* SPDX-License-Identifier: Apache-2.0 */
/*
 * sim_request: charge request validation. Pure; any thread. Must never
 * let a malformed request reach the charge path: everything the charge
 * object and the ground-truth counters read is checked here.
 */
#include "sim_request.h"

#include <stdlib.h>
#include <string.h>

static const char *get_str(json_t *obj, const char *name, const char **code)
{
        json_t *v = json_object_get(obj, name);

        if (!v || json_is_null(v)) {
                *code = "parameter_missing";
                return NULL;
        }
        if (!json_is_string(v) || json_string_length(v) == 0) {
                *code = "parameter_invalid";
                return NULL;
        }
        return json_string_value(v);
}

int sim_request_parse(const char *body, size_t len, struct sim_request *req,
                      const char **code, const char **param)
{
        json_t *root = NULL, *amount, *canon = NULL;
        json_error_t jerr;
        char *text = NULL;
        int ret    = -1;

        memset(req, 0, sizeof(*req));
        *code  = NULL;
        *param = NULL;
        root   = json_loadb(body, len, JSON_REJECT_DUPLICATES, &jerr);
        if (!root || !json_is_object(root)) {
                *code = "invalid_json";
                goto out;
        }
        amount = json_object_get(root, "amount");
        *param = "amount";
        if (!amount || json_is_null(amount)) {
                *code = "parameter_missing";
                goto out;
        }
        if (!json_is_integer(amount) || json_integer_value(amount) <= 0) {
                *code = "parameter_invalid";
                goto out;
        }
        req->amount = json_integer_value(amount);
        *param      = "currency";
        if (!(req->currency = get_str(root, "currency", code)))
                goto out;
        *param = "payment_method";
        if (!(req->payment_method = get_str(root, "payment_method", code)))
                goto out;
        *param = "reference";
        if (!(req->reference = get_str(root, "reference", code)))
                goto out;
        *param        = "metadata";
        req->metadata = json_object_get(root, "metadata");
        if (!req->metadata || json_is_null(req->metadata)) {
                *code = "parameter_missing";
                goto out;
        }
        if (!json_is_object(req->metadata)) {
                *code = "parameter_invalid";
                goto out;
        }
        *param = "metadata.tenant_id";
        if (!(req->tenant_id = get_str(req->metadata, "tenant_id", code)))
                goto out;
        *param = "metadata.order_id";
        if (!(req->order_id = get_str(req->metadata, "order_id", code)))
                goto out;
        *param = NULL;

        canon = json_pack("{sIsssssssO}", "amount", (json_int_t)req->amount,
                          "currency", req->currency, "payment_method",
                          req->payment_method, "reference", req->reference,
                          "metadata", req->metadata);
        if (canon)
                text = json_dumps(canon, JSON_SORT_KEYS | JSON_COMPACT);
        if (!text) {
                *code = "invalid_json";
                goto out;
        }
        crypto_sha256(text, strlen(text), req->fingerprint);
        req->root = root;
        root      = NULL;
        ret       = 0;
out:
        free(text);
        json_decref(canon);
        json_decref(root);
        if (ret < 0)
                memset(req, 0, sizeof(*req));
        return ret;
}

void sim_request_release(struct sim_request *req)
{
        json_decref(req->root);
        memset(req, 0, sizeof(*req));
}
