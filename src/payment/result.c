/* SPDX-License-Identifier: Apache-2.0 */
/*
 * result: the payments.results message value and key.
 *
 * Field order and compact form are fixed (JSON_PRESERVE_ORDER, insertion
 * order below). Never puts a value into an error message, and never emits
 * a result that breaks the contract: it refuses instead.
 */
#include "payment/result.h"

#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util/timeutil.h"
#include "util/uuid.h"
#include "util/xalloc.h"

static bool is_uuid(const char *s)
{
        return s != NULL && uuid_valid(s, strlen(s));
}

static const char *check_contract(const struct payment_result *r)
{
        bool rejected = r->status == PAYMENT_STATUS_REJECTED;

        if (!payment_status_is_result(r->status))
                return "status is not a result status";
        if (!is_uuid(r->event_id))
                return "event_id is not a UUID";
        if (r->intent_event_id == NULL)
                return "intent_event_id is missing";
        if (r->tenant_id == NULL)
                return "tenant_id is missing";
        if (r->idempotency_key == NULL)
                return "idempotency_key is missing";
        if (!rejected &&
            (r->order_id == NULL || r->currency == NULL || !r->has_amount))
                return "order_id, amount and currency are required";
        if (r->payment_id != NULL && !is_uuid(r->payment_id))
                return "payment_id is not a UUID";
        if (r->occurred_at == NULL ||
            !rfc3339_valid(r->occurred_at, strlen(r->occurred_at)))
                return "occurred_at is not RFC 3339";
        if ((r->error_code == NULL) != (r->error_message == NULL))
                return "error needs both code and message";
        if (r->resolves_review &&
            (r->replayed || (r->status != PAYMENT_STATUS_SUCCEEDED &&
                             r->status != PAYMENT_STATUS_FAILED)))
                return "only an original succeeded or failed result "
                       "resolves a review";
        switch (r->status) {
        case PAYMENT_STATUS_SUCCEEDED:
                if (r->error_code != NULL)
                        return "a succeeded result has no error";
                break;
        case PAYMENT_STATUS_FAILED:
        case PAYMENT_STATUS_REJECTED:
                if (r->error_code == NULL)
                        return "this status needs an error";
                break;
        case PAYMENT_STATUS_CONFLICT:
                if (r->error_code == NULL ||
                    strcmp(r->error_code, "idempotency_key_reused") != 0)
                        return "a conflict needs error.code "
                               "idempotency_key_reused";
                break;
        default:
                break;
        }
        return NULL;
}

/* v, a new jansson value whose only failure (NULL) is out of memory. */
static json_t *must(json_t *v)
{
        if (v == NULL)
                xalloc_die();
        return v;
}

/* s, a string made by jansson whose only failure (NULL) is out of memory. */
static char *must_str(char *s)
{
        if (s == NULL)
                xalloc_die();
        return s;
}

/* A string or null; NULL (and *bad set) when s is not valid UTF-8. */
static json_t *str_or_null(const char *s, bool *bad)
{
        json_t *v;

        if (s == NULL)
                return json_null();
        v = json_string(s);
        if (v == NULL)
                *bad = true;
        return v;
}

int payment_result_build(const struct payment_result *r, char **out,
                         size_t *out_len, char *errstr, size_t errstr_size)
{
        json_t *root = NULL, *err = NULL;
        const char *why;
        bool bad = false;
        int rc   = -1;

        *out     = NULL;
        *out_len = 0;
        why      = check_contract(r);
        if (why != NULL) {
                snprintf(errstr, errstr_size, "result: %s", why);
                goto out;
        }
        if (r->error_code != NULL) {
                err = must(json_object());
                if (json_object_set_new(err, "code",
                                        str_or_null(r->error_code, &bad)) ||
                    json_object_set_new(err, "message",
                                        str_or_null(r->error_message, &bad))) {
                        why = "error object";
                        goto fail;
                }
        } else {
                err = json_null();
        }
        root = must(json_object());
        /*
         * The contract's order. json_object_set_new steals the value (even
         * on failure); err is only borrowed here and released at out.
         */
        if (json_object_set_new(
                root, "schema_version",
                must(json_integer(PAYMENT_RESULT_SCHEMA_VERSION))) ||
            json_object_set_new(root, "event_id",
                                str_or_null(r->event_id, &bad)) ||
            json_object_set_new(root, "intent_event_id",
                                str_or_null(r->intent_event_id, &bad)) ||
            json_object_set_new(root, "tenant_id",
                                str_or_null(r->tenant_id, &bad)) ||
            json_object_set_new(root, "idempotency_key",
                                str_or_null(r->idempotency_key, &bad)) ||
            json_object_set_new(root, "order_id",
                                str_or_null(r->order_id, &bad)) ||
            json_object_set_new(root, "payment_id",
                                str_or_null(r->payment_id, &bad)) ||
            json_object_set_new(
                root, "status",
                must(json_string(payment_status_name(r->status)))) ||
            json_object_set_new(root, "amount",
                                r->has_amount ? must(json_integer(r->amount))
                                              : json_null()) ||
            json_object_set_new(root, "currency",
                                str_or_null(r->currency, &bad)) ||
            json_object_set_new(root, "provider_charge_id",
                                str_or_null(r->provider_charge_id, &bad)) ||
            json_object_set(root, "error", err) ||
            json_object_set_new(root, "replayed", json_boolean(r->replayed)) ||
            json_object_set_new(root, "occurred_at",
                                str_or_null(r->occurred_at, &bad))) {
                why = "a string field";
                goto fail;
        }
        /* optional, last, and absent unless true: older bytes unchanged */
        if (r->resolves_review &&
            json_object_set_new(root, "resolves_review", json_true())) {
                why = "resolves_review";
                goto fail;
        }
        /* an object always encodes: NULL is out of memory */
        *out = must_str(json_dumps(root, JSON_COMPACT | JSON_PRESERVE_ORDER));
        *out_len = strlen(*out);
        rc       = 0;
        goto out;
fail:
        if (bad)
                snprintf(errstr, errstr_size,
                         "result: a string field is not valid UTF-8");
        else
                snprintf(errstr, errstr_size, "result: cannot build %s", why);
out:
        json_decref(err);
        json_decref(root);
        return rc;
}

int payment_result_key(const char *tenant_id, const char *idempotency_key,
                       char **out, size_t *out_len)
{
        size_t tl, kl;
        char *p;

        *out     = NULL;
        *out_len = 0;
        if (tenant_id == NULL || idempotency_key == NULL)
                return -1;
        tl = strlen(tenant_id);
        kl = strlen(idempotency_key);
        p  = xmalloc(tl + 1 + kl + 1);
        memcpy(p, tenant_id, tl);
        p[tl] = '/';
        memcpy(p + tl + 1, idempotency_key, kl + 1);
        *out     = p;
        *out_len = tl + 1 + kl;
        return 0;
}
