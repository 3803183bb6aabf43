/* SPDX-License-Identifier: Apache-2.0 */
/*
 * webhook_event: decodes the body of a verified gateway webhook into
 * bounded fields (gateway/webhook_event.h). Pure (jansson), any thread.
 *
 * Every byte is hostile even though it is signed: a leaked secret or a
 * defect at the PSP must not reach the store as an unbounded or invalid
 * string. Must never put a value of the body into an error message
 * (jansson's own error texts quote the input, so they are not used).
 */
#include "gateway/webhook_event.h"

#include "gateway/classify.h"
#include "gateway/webhook.h"
#include "util/utf8.h"
#include "util/xalloc.h"

#include <jansson.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define AMOUNT_MAX 9007199254740991LL /* 2^53 - 1 */

const char *gateway_event_type_name(enum gateway_event_type t)
{
        switch (t) {
        case GATEWAY_EVENT_CHARGE_SUCCEEDED:
                return "charge.succeeded";
        case GATEWAY_EVENT_CHARGE_FAILED:
                return "charge.failed";
        case GATEWAY_EVENT_CHARGE_REFUNDED:
                return "charge.refunded";
        }
        return NULL;
}

/*
 * The string member `name` of obj: valid UTF-8 (jansson checked it),
 * without NUL. NULL with *why set when absent, of another type or
 * holding a NUL.
 */
static const char *get_str(const json_t *obj, const char *name, size_t *len,
                           const char **why)
{
        const json_t *v = json_object_get(obj, name);
        const char *s;

        if (v == NULL) {
                *why = "missing";
                return NULL;
        }
        if (!json_is_string(v)) {
                *why = "not a string";
                return NULL;
        }
        s    = json_string_value(v);
        *len = json_string_length(v);
        if (memchr(s, '\0', *len) != NULL) {
                *why = "holds a NUL";
                return NULL;
        }
        if (!utf8_valid(s, *len)) { /* jansson checks; never trust it alone */
                *why = "not valid UTF-8";
                return NULL;
        }
        return s;
}

/* Copies member `name` (1..max bytes, never cut) into dst[max + 1]. */
static bool take_str(const json_t *obj, const char *name, size_t max, char *dst,
                     const char **why)
{
        size_t len    = 0;
        const char *s = get_str(obj, name, &len, why);

        if (s == NULL)
                return false;
        if (len == 0 || len > max) {
                *why = len == 0 ? "empty" : "too long";
                return false;
        }
        /* U+FFFD: invalid UTF-8 cleaned out of the body (or sent so); an
         * identifier is never guessed from a damaged one */
        if (memmem(s, len, "\xEF\xBF\xBD", 3) != NULL) {
                *why = "holds U+FFFD (invalid UTF-8)";
                return false;
        }
        memcpy(dst, s, len);
        dst[len] = '\0';
        return true;
}

static bool parse_type(const json_t *root, enum gateway_event_type *t,
                       const char **why)
{
        size_t len    = 0;
        const char *s = get_str(root, "type", &len, why);

        if (s == NULL)
                return false;
        for (int i = GATEWAY_EVENT_CHARGE_SUCCEEDED;
             i <= GATEWAY_EVENT_CHARGE_REFUNDED; i++) {
                const char *n = gateway_event_type_name(i);

                if (len == strlen(n) && memcmp(s, n, len) == 0) {
                        *t = (enum gateway_event_type)i;
                        return true;
                }
        }
        *why = "not charge.succeeded, charge.failed or charge.refunded";
        return false;
}

static bool parse_amount(const json_t *data, int64_t *out, const char **why)
{
        const json_t *v = json_object_get(data, "amount");
        json_int_t a;

        if (v == NULL) {
                *why = "missing";
                return false;
        }
        a = json_is_integer(v) ? json_integer_value(v) : 0;
        if (a < 1 || a > AMOUNT_MAX) {
                *why = "not an integer in 1..2^53-1";
                return false;
        }
        *out = (int64_t)a;
        return true;
}

static bool parse_currency(const json_t *data, char out[4], const char **why)
{
        size_t len    = 0;
        const char *s = get_str(data, "currency", &len, why);

        if (s == NULL)
                return false;
        if (len != 3) {
                *why = "not three upper-case letters";
                return false;
        }
        for (size_t i = 0; i < 3; i++)
                if (s[i] < 'A' || s[i] > 'Z') {
                        *why = "not three upper-case letters";
                        return false;
                }
        memcpy(out, s, 3);
        out[3] = '\0';
        return true;
}

/* data.status, when present, must agree with the type. */
static bool parse_status(const json_t *data, enum gateway_event_type t,
                         char out[16], const char **why)
{
        static const char *const ok[][2] = {
                [GATEWAY_EVENT_CHARGE_SUCCEEDED] = { "succeeded", NULL },
                [GATEWAY_EVENT_CHARGE_FAILED]    = { "failed", NULL },
                [GATEWAY_EVENT_CHARGE_REFUNDED]  = { "succeeded", "refunded" },
        };
        size_t len = 0;
        const char *s;

        if (json_object_get(data, "status") == NULL)
                return true;
        if ((s = get_str(data, "status", &len, why)) == NULL)
                return false;
        for (size_t i = 0; i < 2; i++) {
                const char *w = ok[t][i];

                if (w && len == strlen(w) && memcmp(s, w, len) == 0) {
                        memcpy(out, w, len + 1);
                        return true;
                }
        }
        *why = "does not agree with the type";
        return false;
}

/* data.error of a charge.failed: null/absent, or {"code", "message"}. */
static bool parse_error(const json_t *data, struct gateway_event *ev,
                        const char **field, const char **why)
{
        const json_t *e = json_object_get(data, "error");
        const char *s;
        size_t len = 0;

        if (e == NULL || json_is_null(e))
                return true;
        *field = "data.error";
        if (!json_is_object(e)) {
                *why = "not an object or null";
                return false;
        }
        *field = "data.error.code";
        if (!take_str(e, "code", GATEWAY_EVENT_CODE_MAX, ev->error_code, why))
                return false;
        *field = "data.error.message";
        if (json_object_get(e, "message") == NULL)
                return true;
        if ((s = get_str(e, "message", &len, why)) == NULL)
                return false;
        /* informational, never refused: cleaned as a gateway answer's
         * message (no control character, card numbers and e-mail
         * addresses redacted), cut on a code point boundary */
        gateway_text_clean(s, len, ev->error_message,
                           sizeof(ev->error_message));
        return true;
}

static bool parse_data(const json_t *data, struct gateway_event *ev,
                       const char **field, const char **why)
{
        *field = "data.id";
        if (!take_str(data, "id", GATEWAY_EVENT_CHARGE_ID_MAX, ev->charge_id,
                      why))
                return false;
        *field = "data.reference";
        if (!take_str(data, "reference", GATEWAY_EVENT_REFERENCE_MAX,
                      ev->reference, why))
                return false;
        *field = "data.amount";
        if (!parse_amount(data, &ev->amount, why))
                return false;
        *field = "data.currency";
        if (!parse_currency(data, ev->currency, why))
                return false;
        *field = "data.status";
        if (!parse_status(data, ev->type, ev->charge_status, why))
                return false;
        if (ev->type == GATEWAY_EVENT_CHARGE_FAILED)
                return parse_error(data, ev, field, why);
        return true;
}

int gateway_event_parse(const void *body, size_t len, struct gateway_event *ev,
                        char *errstr, size_t errstr_size)
{
        json_error_t jerr;
        json_t *root = NULL;
        char *clean  = NULL;
        const json_t *data;
        const char *field = "body", *why = NULL;

        memset(ev, 0, sizeof(*ev));
        if (body == NULL || len == 0) {
                why = "empty";
                goto fail;
        }
        if (len > GATEWAY_WEBHOOK_BODY_MAX) {
                why = "over the body limit";
                goto fail;
        }
        /* A gateway may send a decline text that is not valid UTF-8 (one
         * cut in the middle of a character): the body is cleaned first
         * (each invalid sequence becomes U+FFFD, as classify.c does with
         * answers), so the informational message survives and a damaged
         * identifier is refused by take_str. The signature was checked
         * over the raw bytes before this. NULs are allowed by the parser
         * so the field checks can name the field. */
        if (!utf8_valid(body, len)) {
                size_t cap = len * 3 + 1;

                clean = xmalloc(cap);
                len   = utf8_clean(body, len, SIZE_MAX, clean, cap, NULL);
                body  = clean;
        }
        root = json_loadb(
            body, len,
            JSON_DECODE_ANY | JSON_REJECT_DUPLICATES | JSON_ALLOW_NUL, &jerr);
        if (root == NULL) {
                snprintf(errstr, errstr_size,
                         "body: not one JSON document (duplicate member, "
                         "invalid UTF-8 or syntax) at byte %d",
                         jerr.position);
                goto out;
        }
        if (!json_is_object(root)) {
                why = "not a JSON object";
                goto fail;
        }
        field = "type";
        if (!parse_type(root, &ev->type, &why))
                goto fail;
        field = "data";
        data  = json_object_get(root, "data");
        if (!json_is_object(data)) {
                why = data ? "not an object" : "missing";
                goto fail;
        }
        if (!parse_data(data, ev, &field, &why))
                goto fail;
        json_decref(root);
        free(clean);
        return 0;
fail:
        snprintf(errstr, errstr_size, "%s: %s", field, why);
out:
        json_decref(root);
        free(clean);
        memset(ev, 0, sizeof(*ev));
        return -1;
}
