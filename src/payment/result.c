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

static json_t *error_member(const struct payment_result *r, bool *bad);

/*
 * amount, currency, provider_charge_id and error (err, stolen: NULL when
 * it could not be made) into root, in the contract's order, as both the
 * message and its compact detail hold them. Non-zero on failure (*bad
 * when a string is not UTF-8).
 */
static int set_charge(json_t *root, const struct payment_result *r, json_t *err,
                      bool *bad)
{
        if (json_object_set_new(root, "amount",
                                r->has_amount ? must(json_integer(r->amount))
                                              : json_null()) ||
            json_object_set_new(root, "currency",
                                str_or_null(r->currency, bad)) ||
            json_object_set_new(root, "provider_charge_id",
                                str_or_null(r->provider_charge_id, bad))) {
                json_decref(err);
                return -1;
        }
        return json_object_set_new(root, "error", err);
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
        err = error_member(r, &bad);
        if (err == NULL) {
                why = "error object";
                goto fail;
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
            set_charge(root, r, json_incref(err), &bad) ||
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

/* The error member of r: an object, or null. NULL (*bad) when not UTF-8. */
static json_t *error_member(const struct payment_result *r, bool *bad)
{
        json_t *err;

        if (r->error_code == NULL)
                return json_null();
        err = must(json_object());
        if (json_object_set_new(err, "code", str_or_null(r->error_code, bad)) ||
            json_object_set_new(err, "message",
                                str_or_null(r->error_message, bad))) {
                json_decref(err);
                return NULL;
        }
        return err;
}

int payment_result_detail(const struct payment_result *r,
                          const char *row_intent_event_id, char **out,
                          size_t *out_len, char *errstr, size_t errstr_size)
{
        json_t *root;
        const char *why;
        bool bad = false;
        int fail;

        *out     = NULL;
        *out_len = 0;
        why      = check_contract(r);
        if (why == NULL && row_intent_event_id == NULL)
                why = "the row's intent_event_id is missing";
        if (why != NULL) {
                snprintf(errstr, errstr_size, "result detail: %s", why);
                return -1;
        }
        root = must(json_object());
        fail = strcmp(r->intent_event_id, row_intent_event_id) != 0 &&
               json_object_set_new(root, "intent_event_id",
                                   str_or_null(r->intent_event_id, &bad));
        fail = fail ||
               json_object_set_new(root, "order_id",
                                   str_or_null(r->order_id, &bad)) ||
               set_charge(root, r, error_member(r, &bad), &bad) ||
               json_object_set_new(root, "occurred_at",
                                   str_or_null(r->occurred_at, &bad));
        if (fail) {
                json_decref(root);
                snprintf(errstr, errstr_size,
                         bad ? "result detail: a string field is not valid "
                               "UTF-8"
                             : "result detail: cannot build it");
                return -1;
        }
        *out = must_str(json_dumps(root, JSON_COMPACT | JSON_PRESERVE_ORDER));
        *out_len = strlen(*out);
        json_decref(root);
        return 0;
}

/* member k of o as a string or null into *s: false when of another type. */
static bool get_str_or_null(json_t *o, const char *k, const char **s)
{
        json_t *v = json_object_get(o, k);

        *s = NULL;
        if (v == NULL)
                return false;
        if (json_is_null(v))
                return true;
        if (!json_is_string(v))
                return false;
        *s = json_string_value(v);
        return true;
}

/* The error member of a detail into r: false when malformed. */
static bool get_error(json_t *o, struct payment_result *r)
{
        json_t *e = json_object_get(o, "error");

        r->error_code    = NULL;
        r->error_message = NULL;
        if (e == NULL)
                return false;
        if (json_is_null(e))
                return true;
        if (!json_is_object(e) || json_object_size(e) != 2)
                return false;
        return get_str_or_null(e, "code", &r->error_code) &&
               get_str_or_null(e, "message", &r->error_message) &&
               r->error_code != NULL && r->error_message != NULL;
}

/* Fills r's members from the detail object d: NULL, or what is wrong. */
static const char *from_detail(json_t *d, struct payment_result *r)
{
        static const char *const known[] = {
                "intent_event_id",    "order_id", "amount",     "currency",
                "provider_charge_id", "error",    "occurred_at"
        };
        const char *k;
        json_t *v;

        if (!json_is_object(d))
                return "the detail is not a JSON object";
        json_object_foreach(d, k, v)
        {
                bool ok = false;

                for (size_t i = 0; i < sizeof(known) / sizeof(known[0]); i++)
                        ok = ok || strcmp(k, known[i]) == 0;
                if (!ok)
                        return "the detail has a member it may not have";
        }
        v = json_object_get(d, "intent_event_id");
        if (v != NULL) {
                if (!json_is_string(v))
                        return "the detail's intent_event_id is not a string";
                r->intent_event_id = json_string_value(v);
        }
        if (!get_str_or_null(d, "order_id", &r->order_id) ||
            !get_str_or_null(d, "currency", &r->currency) ||
            !get_str_or_null(d, "provider_charge_id", &r->provider_charge_id) ||
            !get_str_or_null(d, "occurred_at", &r->occurred_at))
                return "a string member of the detail is missing or not a "
                       "string";
        v = json_object_get(d, "amount");
        if (v == NULL || !(json_is_null(v) || json_is_integer(v)))
                return "the detail's amount is missing or not an integer";
        r->has_amount = json_is_integer(v);
        r->amount     = r->has_amount ? (int64_t)json_integer_value(v) : 0;
        if (!get_error(d, r))
                return "the detail's error is missing or malformed";
        return NULL;
}

int payment_result_compose(const struct payment_result_row *row,
                           const char *detail, size_t detail_len, char **out,
                           size_t *out_len, char *errstr, size_t errstr_size)
{
        struct payment_result r;
        json_error_t jerr;
        json_t *d       = NULL;
        const char *why = NULL;
        char inner[256];
        int rc = -1;

        *out     = NULL;
        *out_len = 0;
        memset(&r, 0, sizeof(r));
        if (detail == NULL || detail_len > PAYMENT_RESULT_DETAIL_MAX)
                why = "the detail is missing or too large";
        else if (!payment_status_parse(row->status ? row->status : "",
                                       &r.status))
                why = "the row's status is not a result status";
        else if (!(d = json_loadb(detail, detail_len, JSON_REJECT_DUPLICATES,
                                  &jerr)))
                why = "the detail is not JSON (or names a member twice)";
        if (why == NULL) {
                r.event_id        = row->event_id;
                r.intent_event_id = row->intent_event_id;
                r.tenant_id       = row->tenant_id;
                r.idempotency_key = row->idempotency_key;
                r.payment_id      = row->payment_id;
                r.replayed        = row->replayed;
                r.resolves_review = row->resolves_review;
                why               = from_detail(d, &r);
        }
        if (why != NULL) {
                snprintf(errstr, errstr_size, "result: %s", why);
                goto out;
        }
        if (payment_result_build(&r, out, out_len, inner, sizeof(inner)) != 0) {
                snprintf(errstr, errstr_size, "%s", inner);
                goto out;
        }
        rc = 0;
out:
        json_decref(d);
        return rc;
}
