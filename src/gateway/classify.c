/*
 * classify: gateway answer -> outcome, as in the table of docs/gateway.md.
 * Pure (jansson only, no curl).
 *
 * Must never report a timeout, reset, refused connection, 5xx or a
 * malformed 2xx as FAILED; only a well-formed refusal is FAILED.
 */
#include "gateway/classify.h"

#include <jansson.h>
#include <stdio.h>
#include <string.h>

static void verdict_init(struct gw_verdict *v)
{
        memset(v, 0, sizeof(*v));
        v->outcome        = GW_UNKNOWN;
        v->retry_after_ms = -1;
        v->reason         = "no evidence";
}

static void set(struct gw_verdict *v, enum gw_outcome o, const char *reason)
{
        v->outcome = o;
        v->reason  = reason;
}

int64_t gw_parse_retry_after(const char *v)
{
        int64_t secs = 0;
        int digits   = 0;

        if (!v)
                return -1;
        while (*v == ' ' || *v == '\t')
                v++;
        for (; *v >= '0' && *v <= '9'; v++) {
                if (secs <= RETRY_AFTER_MAX_MS / 1000)
                        secs = secs * 10 + (*v - '0');
                digits++;
        }
        while (*v == ' ' || *v == '\t' || *v == '\r' || *v == '\n')
                v++;
        if (digits == 0 || *v != '\0')
                return -1;
        if (secs > RETRY_AFTER_MAX_MS / 1000)
                return RETRY_AFTER_MAX_MS;
        return secs * 1000;
}

/* Parses the body as one JSON object, duplicates rejected. NULL if not. */
static json_t *parse_object(const struct gw_answer *a)
{
        json_error_t err;
        json_t *j;

        if (!a->body || a->body_len == 0)
                return NULL;
        j = json_loadb(a->body, a->body_len, JSON_REJECT_DUPLICATES, &err);
        if (j && !json_is_object(j)) {
                json_decref(j);
                return NULL;
        }
        return j;
}

static const char *str_field(const json_t *obj, const char *name)
{
        const json_t *f = json_object_get(obj, name);
        return json_is_string(f) ? json_string_value(f) : NULL;
}

/* Copies src into dst; false if it is empty or does not fit. */
static bool copy_str(char *dst, size_t dstsz, const char *src)
{
        size_t n;

        if (!src)
                return false;
        n = strlen(src);
        if (n == 0 || n >= dstsz)
                return false;
        memcpy(dst, src, n + 1);
        return true;
}

/* Copies as much as fits (messages may be cut). */
static void copy_cut(char *dst, size_t dstsz, const char *src)
{
        if (src)
                snprintf(dst, dstsz, "%s", src);
}

/* error.code / error.message of an object into v; true if a code is there */
static bool take_error(const json_t *obj, struct gw_verdict *v)
{
        const json_t *e = json_object_get(obj, "error");

        if (!json_is_object(e))
                return false;
        copy_cut(v->error_message, sizeof(v->error_message),
                 str_field(e, "message"));
        return copy_str(v->error_code, sizeof(v->error_code),
                        str_field(e, "code"));
}

/*
 * True if the charge object names something other than what we asked for.
 * Only fields present on both sides are compared.
 */
static bool charge_mismatch(const json_t *ch, const struct gw_answer *a)
{
        const char *ref = str_field(ch, "reference");
        const char *cur = str_field(ch, "currency");
        const json_t *amt;

        if (a->expect_reference && ref && strcmp(ref, a->expect_reference))
                return true;
        if (a->expect_currency && cur && strcmp(cur, a->expect_currency))
                return true;
        amt = json_object_get(ch, "amount");
        if (a->expect_amount >= 0 && json_is_integer(amt) &&
            json_integer_value(amt) != a->expect_amount)
                return true;
        return false;
}

static const char *transport_reason(enum gw_transport t)
{
        switch (t) {
        case GW_TRANSPORT_TIMEOUT:
                return "timeout: the charge may or may not have been made";
        case GW_TRANSPORT_RESET:
                return "connection reset or closed before a full answer";
        case GW_TRANSPORT_REFUSED:
                return "connection refused";
        case GW_TRANSPORT_DNS:
                return "name resolution failed";
        case GW_TRANSPORT_TLS:
                return "TLS handshake or verification failed";
        default:
                return "transport error";
        }
}

static void classify_2xx(const struct gw_answer *a, struct gw_verdict *v)
{
        json_t *ch = parse_object(a);
        const char *st;

        if (!ch) {
                set(v, GW_UNKNOWN, "2xx body is not a JSON charge object");
                return;
        }
        st = str_field(ch, "status");
        if (!st) {
                set(v, GW_UNKNOWN, "2xx charge without status");
        } else if (strcmp(st, "succeeded") != 0) {
                set(v, GW_UNKNOWN, "2xx charge whose status is not succeeded");
        } else if (!copy_str(v->charge_id, sizeof(v->charge_id),
                             str_field(ch, "id"))) {
                set(v, GW_UNKNOWN, "2xx succeeded charge without usable id");
        } else if (charge_mismatch(ch, a)) {
                snprintf(v->error_code, sizeof(v->error_code), "%s",
                         "charge_mismatch");
                set(v, GW_DEFECT,
                    "charge names another reference, amount or currency");
        } else {
                set(v, GW_SUCCEEDED,
                    a->replayed ? "charged (replayed)" : "charged");
        }
        json_decref(ch);
}

static void classify_402(const struct gw_answer *a, struct gw_verdict *v)
{
        json_t *ch      = parse_object(a);
        const char *st  = ch ? str_field(ch, "status") : NULL;
        bool have_code  = ch && take_error(ch, v);
        bool is_failure = st && strcmp(st, "failed") == 0;

        if (is_failure && have_code && !charge_mismatch(ch, a)) {
                copy_cut(v->charge_id, sizeof(v->charge_id),
                         str_field(ch, "id"));
                set(v, GW_FAILED, "final refusal");
        } else {
                if (!have_code)
                        snprintf(v->error_code, sizeof(v->error_code),
                                 "http_402");
                set(v, GW_DEFECT,
                    is_failure && have_code
                        ? "402 refusal names another reference"
                        : "402 without a failed charge and error.code");
        }
        json_decref(ch);
}

static void classify_4xx(const struct gw_answer *a, struct gw_verdict *v)
{
        json_t *body   = parse_object(a);
        bool have_code = body && take_error(body, v);
        int s          = a->http_status;

        if (s == 409 && have_code &&
            strcmp(v->error_code, "request_in_progress") == 0) {
                set(v, GW_IN_PROGRESS, "same key in progress at the gateway");
        } else {
                if (!have_code)
                        snprintf(v->error_code, sizeof(v->error_code),
                                 "http_%d", s);
                if (s == 422 && have_code &&
                    strcmp(v->error_code, "parameters_mismatch") == 0)
                        set(v, GW_DEFECT, "key was used with other parameters");
                else
                        set(v, GW_DEFECT, "request refused before any charge");
        }
        json_decref(body);
}

void gw_classify_charge(const struct gw_answer *a, struct gw_verdict *v)
{
        int s = a->http_status;

        verdict_init(v);
        v->retry_after_ms = gw_parse_retry_after(a->retry_after);
        if (a->transport != GW_TRANSPORT_OK) {
                set(v, GW_UNKNOWN, transport_reason(a->transport));
                return;
        }
        if (s == 200 || s == 201)
                classify_2xx(a, v);
        else if (s == 402)
                classify_402(a, v);
        else if (s == 429)
                set(v, GW_RETRY_AFTER, "rate limited");
        else if (s == 408 || s == 499)
                /* a timeout or a client-side close seen by an intermediary:
                 * the request may have reached the gateway */
                set(v, GW_UNKNOWN, "request timed out on the way");
        else if (s >= 400 && s <= 499)
                classify_4xx(a, v);
        else if (s >= 500 && s <= 599)
                set(v, GW_UNKNOWN, "gateway error (5xx)");
        else
                set(v, GW_UNKNOWN, "unexpected HTTP status");
}

void gw_classify_query(const struct gw_answer *a, struct gw_verdict *v)
{
        json_t *body = NULL, *data;
        size_t i, n;
        int failed = 0, unclear = 0, foreign = 0, mismatch = 0;

        verdict_init(v);
        v->retry_after_ms = gw_parse_retry_after(a->retry_after);
        if (a->transport != GW_TRANSPORT_OK) {
                set(v, GW_UNKNOWN, transport_reason(a->transport));
                return;
        }
        if (a->http_status == 429) {
                set(v, GW_RETRY_AFTER, "rate limited");
                return;
        }
        if (a->http_status != 200) {
                set(v, GW_UNKNOWN, "query not answered with 200");
                return;
        }
        body = parse_object(a);
        data = body ? json_object_get(body, "data") : NULL;
        if (!json_is_array(data)) {
                set(v, GW_UNKNOWN, "query body without a data list");
                goto out;
        }
        n = json_array_size(data);
        for (i = 0; i < n; i++) {
                const json_t *ch = json_array_get(data, i);
                const char *ref =
                    json_is_object(ch) ? str_field(ch, "reference") : NULL;
                const char *st = ref ? str_field(ch, "status") : NULL;
                struct gw_verdict tmp;

                if (!ref) {
                        unclear++;
                        continue;
                }
                if (a->expect_reference && strcmp(ref, a->expect_reference)) {
                        foreign++;
                        continue;
                }
                if (charge_mismatch(ch, a)) {
                        mismatch++;
                        continue;
                }
                if (st && strcmp(st, "succeeded") == 0 &&
                    (v->succeeded_charges > 0 ||
                     copy_str(v->charge_id, sizeof(v->charge_id),
                              str_field(ch, "id")))) {
                        v->succeeded_charges++;
                        continue;
                }
                verdict_init(&tmp);
                if (st && strcmp(st, "failed") == 0 && take_error(ch, &tmp)) {
                        if (failed++ == 0) {
                                memcpy(v->error_code, tmp.error_code,
                                       sizeof(v->error_code));
                                memcpy(v->error_message, tmp.error_message,
                                       sizeof(v->error_message));
                        }
                        continue;
                }
                unclear++;
        }
        if (mismatch) {
                snprintf(v->error_code, sizeof(v->error_code), "%s",
                         "charge_mismatch");
                set(v, GW_DEFECT,
                    "listed charge has another amount or currency");
        } else if (v->succeeded_charges > 1) {
                set(v, GW_SUCCEEDED,
                    "several succeeded charges listed for one reference");
        } else if (v->succeeded_charges == 1) {
                set(v, GW_SUCCEEDED, "succeeded charge listed");
        } else if (unclear) {
                set(v, GW_UNKNOWN,
                    "listed charge neither succeeded nor "
                    "failed with a code");
        } else if (failed) {
                set(v, GW_FAILED, "only failed charges listed");
        } else if (foreign) {
                set(v, GW_UNKNOWN, "only charges of other references listed");
        } else {
                set(v, GW_NOT_FOUND, "empty list: no charge was made");
        }
        if (v->outcome != GW_SUCCEEDED)
                v->charge_id[0] = '\0';
        if (v->outcome != GW_FAILED && v->outcome != GW_DEFECT) {
                v->error_code[0]    = '\0';
                v->error_message[0] = '\0';
        }
out:
        json_decref(body);
}

enum retry_class gw_outcome_retry_class(enum gw_outcome o)
{
        switch (o) {
        case GW_SUCCEEDED:
        case GW_FAILED:
        case GW_DEFECT:
        case GW_NOT_FOUND:
                return RETRY_CLASS_FINAL;
        case GW_IN_PROGRESS:
                return RETRY_CLASS_BUSY;
        case GW_RETRY_AFTER:
                return RETRY_CLASS_THROTTLED;
        case GW_UNKNOWN:
                break;
        }
        return RETRY_CLASS_UNKNOWN;
}

const char *gw_outcome_name(enum gw_outcome o)
{
        switch (o) {
        case GW_SUCCEEDED:
                return "succeeded";
        case GW_FAILED:
                return "failed";
        case GW_IN_PROGRESS:
                return "in_progress";
        case GW_RETRY_AFTER:
                return "retry_after";
        case GW_UNKNOWN:
                return "unknown";
        case GW_DEFECT:
                return "defect";
        case GW_NOT_FOUND:
                return "not_found";
        }
        return "?";
}

const char *gw_transport_name(enum gw_transport t)
{
        switch (t) {
        case GW_TRANSPORT_OK:
                return "ok";
        case GW_TRANSPORT_TIMEOUT:
                return "timeout";
        case GW_TRANSPORT_RESET:
                return "reset";
        case GW_TRANSPORT_REFUSED:
                return "refused";
        case GW_TRANSPORT_DNS:
                return "dns";
        case GW_TRANSPORT_TLS:
                return "tls";
        case GW_TRANSPORT_OTHER:
                return "other";
        }
        return "?";
}
