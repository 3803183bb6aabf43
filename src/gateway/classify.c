/* SPDX-License-Identifier: Apache-2.0 */
/*
 * classify: gateway answer -> outcome, as in the table of docs/gateway.md.
 * Pure (jansson only, no curl).
 *
 * Must never report a timeout, reset, refused connection, 5xx or a
 * malformed 2xx as FAILED; only a well-formed refusal is FAILED.
 */
#include "gateway/classify.h"

#include "util/crypto.h"
#include "util/guard.h"
#include "util/utf8.h"
#include "util/xalloc.h"

#include <jansson.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
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

int64_t gateway_parse_retry_after(const char *v)
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

bool gateway_ident_valid(const char *s, size_t len, size_t max_len)
{
        if (!s || len == 0 || len > max_len)
                return false;
        for (size_t i = 0; i < len; i++)
                if ((unsigned char)s[i] < 0x21 || (unsigned char)s[i] > 0x7E)
                        return false;
        return true;
}

/* Length of a code point of s[0..len) (valid UTF-8) that must not reach a
 * log line or a reviewer's screen as is, or 0. */
static size_t control_len(const unsigned char *s, size_t len)
{
        if (s[0] < 0x20 || s[0] == 0x7F)
                return 1;
        if (len >= 2 && s[0] == 0xC2 && s[1] >= 0x80 && s[1] <= 0x9F)
                return 2; /* C1 */
        if (len >= 3 && s[0] == 0xE2 && s[1] == 0x80 &&
            (s[2] == 0xA8 || s[2] == 0xA9 || (s[2] >= 0xAA && s[2] <= 0xAE)))
                return 3; /* U+2028, U+2029, U+202A..U+202E */
        if (len >= 3 && s[0] == 0xE2 && s[1] == 0x81 && s[2] >= 0xA6 &&
            s[2] <= 0xA9)
                return 3; /* U+2066..U+2069 */
        return 0;
}

/* s[0..len) into out (outsz bytes, > 0): valid UTF-8 (utf8_clean), each
 * control character one space; the text only shrinks in place. */
static size_t text_clean_raw(const char *s, size_t len, char *out, size_t outsz)
{
        size_t n = utf8_clean(s, len, SIZE_MAX, out, outsz, NULL);
        size_t r = 0, w = 0;

        while (r < n) {
                size_t c = control_len((const unsigned char *)out + r, n - r);

                if (c) {
                        out[w++] = ' ';
                        r += c;
                } else {
                        out[w++] = out[r++];
                }
        }
        out[w] = '\0';
        return w;
}

size_t gateway_text_clean(const char *s, size_t len, char *out, size_t outsz)
{
        size_t cap = len * 3 + 1, rcap = 0, n;
        char *all, *red                = NULL;
        const char *src;

        if (outsz == 0)
                return 0;
        if (!s)
                len = 0, cap = 1;
        /* the whole text first (an invalid byte becomes 3 bytes of U+FFFD),
         * redacted before it is cut: a card number cut in two would leave a
         * part the guard no longer sees */
        all = xmalloc(cap);
        n   = text_clean_raw(s ? s : "", len, all, cap);
        src = all;
        if (guard_has_card_number(all, n) || guard_has_email(all, n)) {
                rcap = guard_redact(all, NULL, 0) + 1;
                red  = xmalloc(rcap);
                n    = guard_redact(all, red, rcap);
                src  = red;
        }
        n = utf8_clean(src, n, SIZE_MAX, out, outsz, NULL);
        /* the cut itself can make one (a 25-digit run cut to 16 digits, a
         * number cut off the hex digit it was glued to): the last resort */
        if (guard_has_card_number(out, n) || guard_has_email(out, n))
                guard_mask_all(out);
        crypto_wipe(all, cap); /* it may have held a card number */
        free(all);
        if (red) {
                crypto_wipe(red, rcap);
                free(red);
        }
        return n;
}

/*
 * Parses the body as one JSON object, duplicates rejected, "\u0000"
 * allowed (strings are read with their length, never as C strings). A
 * body that is not valid UTF-8 is cleaned first (U+FFFD), so text in
 * another encoding cannot turn a refusal into an unreadable answer. NULL
 * if it is not an object.
 */
static json_t *parse_object(const struct gw_answer *a)
{
        json_error_t err;
        json_t *j;
        char *clean      = NULL;
        const char *body = a->body;
        size_t len       = a->body_len;

        if (!a->body || a->body_len == 0)
                return NULL;
        if (!utf8_valid(body, len)) {
                size_t cap = len * 3 + 1;

                if (len > SIZE_MAX / 4)
                        return NULL;
                clean = xmalloc(cap);
                len   = utf8_clean(body, len, SIZE_MAX, clean, cap, NULL);
                body  = clean;
        }
        j = json_loadb(body, len, JSON_REJECT_DUPLICATES | JSON_ALLOW_NUL,
                       &err);
        free(clean);
        if (j && !json_is_object(j)) {
                json_decref(j);
                return NULL;
        }
        return j;
}

/* A string member of obj with its length; false if absent or no string. */
static bool str_field(const json_t *obj, const char *name, const char **s,
                      size_t *len)
{
        const json_t *f = json_object_get(obj, name);

        if (!json_is_string(f))
                return false;
        *s   = json_string_value(f);
        *len = json_string_length(f);
        return true;
}

/* True if the string member name of obj is exactly want[0..strlen). */
static bool str_field_is(const json_t *obj, const char *name, const char *want)
{
        const char *s;
        size_t len;

        return str_field(obj, name, &s, &len) && len == strlen(want) &&
               memcmp(s, want, len) == 0;
}

/* Copies an identifier member into dst (dstsz - 1 bytes at most, never
 * cut); false if it is absent or not an identifier. */
static bool take_ident(const json_t *obj, const char *name, char *dst,
                       size_t dstsz)
{
        const char *s;
        size_t len;

        if (!str_field(obj, name, &s, &len) ||
            !gateway_ident_valid(s, len, dstsz - 1))
                return false;
        memcpy(dst, s, len);
        dst[len] = '\0';
        return true;
}

enum code_state { CODE_NONE, CODE_INVALID, CODE_OK };

/* error.code / error.message of an object into v (the message cleaned,
 * the code only when it is an identifier). */
static enum code_state take_error(const json_t *obj, struct gw_verdict *v)
{
        const json_t *e = json_object_get(obj, "error");
        const char *s;
        size_t len;

        if (!json_is_object(e))
                return CODE_NONE;
        if (str_field(e, "message", &s, &len))
                gateway_text_clean(s, len, v->error_message,
                                   sizeof(v->error_message));
        if (!str_field(e, "code", &s, &len) || len == 0)
                return CODE_NONE;
        if (!take_ident(e, "code", v->error_code, sizeof(v->error_code)))
                return CODE_INVALID;
        return CODE_OK;
}

enum match { MATCH_OK, MATCH_MISSING, MATCH_OTHER };

/* ISO 4217 codes are case-insensitive ("vnd" is VND); bytes otherwise. */
static bool same_currency(const char *s, size_t len, const char *want)
{
        if (len != strlen(want))
                return false;
        for (size_t i = 0; i < len; i++) {
                unsigned char x = (unsigned char)s[i];
                unsigned char y = (unsigned char)want[i];

                if (x >= 'a' && x <= 'z')
                        x = (unsigned char)(x - 'a' + 'A');
                if (y >= 'a' && y <= 'z')
                        y = (unsigned char)(y - 'a' + 'A');
                if (x != y)
                        return false;
        }
        return true;
}

/*
 * Does the charge object carry the reference, amount and currency we
 * sent? MATCH_OTHER if it names another value for any of them (whatever
 * else is missing), MATCH_MISSING if one is absent, of another JSON type
 * (an amount that is not an integer: "1250000", 1250000.0, 1.25e6), or
 * not expected by the caller; else MATCH_OK.
 */
static enum match charge_match(const json_t *ch, const struct gw_answer *a)
{
        const json_t *amt = json_object_get(ch, "amount");
        const char *s;
        size_t len;
        bool missing = false;

        if (!str_field(ch, "reference", &s, &len) || !a->expect_reference)
                missing = true;
        else if (len != strlen(a->expect_reference) ||
                 memcmp(s, a->expect_reference, len) != 0)
                return MATCH_OTHER;
        if (!str_field(ch, "currency", &s, &len) || !a->expect_currency)
                missing = true;
        else if (!same_currency(s, len, a->expect_currency))
                return MATCH_OTHER;
        if (!json_is_integer(amt) || a->expect_amount < 0)
                missing = true;
        else if (json_integer_value(amt) != a->expect_amount)
                return MATCH_OTHER;
        return missing ? MATCH_MISSING : MATCH_OK;
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
        enum match m;

        if (!ch) {
                set(v, GW_UNKNOWN, "2xx body is not a JSON charge object");
                return;
        }
        if (!json_is_string(json_object_get(ch, "status"))) {
                set(v, GW_UNKNOWN, "2xx charge without status");
        } else if (!str_field_is(ch, "status", "succeeded")) {
                set(v, GW_UNKNOWN, "2xx charge whose status is not succeeded");
        } else if (!take_ident(ch, "id", v->charge_id, sizeof(v->charge_id))) {
                set(v, GW_UNKNOWN, "2xx succeeded charge without usable id");
        } else if ((m = charge_match(ch, a)) == MATCH_OTHER) {
                snprintf(v->error_code, sizeof(v->error_code), "%s",
                         "charge_mismatch");
                set(v, GW_DEFECT,
                    "charge names another reference, amount or currency");
        } else if (m == MATCH_MISSING) {
                v->charge_id[0] = '\0';
                set(v, GW_UNKNOWN,
                    "2xx succeeded charge without the reference, amount "
                    "and currency we sent");
        } else {
                set(v, GW_SUCCEEDED,
                    a->replayed ? "charged (replayed)" : "charged");
        }
        json_decref(ch);
}

static void classify_402(const struct gw_answer *a, struct gw_verdict *v)
{
        json_t *ch          = parse_object(a);
        bool is_failure     = ch && str_field_is(ch, "status", "failed");
        enum code_state cst = ch ? take_error(ch, v) : CODE_NONE;

        if (is_failure && cst == CODE_OK &&
            charge_match(ch, a) != MATCH_OTHER) {
                /* the id of a refusal is optional: kept only when valid */
                (void)take_ident(ch, "id", v->charge_id, sizeof(v->charge_id));
                set(v, GW_FAILED, "final refusal");
        } else {
                if (cst != CODE_OK)
                        snprintf(v->error_code, sizeof(v->error_code),
                                 "http_402");
                if (is_failure && cst == CODE_INVALID)
                        /* not the documented refusal, so not evidence of
                         * one: a person reads the message */
                        set(v, GW_DEFECT,
                            "402 refusal whose error.code is not an "
                            "identifier");
                else
                        set(v, GW_DEFECT,
                            is_failure && cst == CODE_OK
                                ? "402 refusal names another reference, "
                                  "amount or currency"
                                : "402 without a failed charge and "
                                  "error.code");
        }
        json_decref(ch);
}

static void classify_4xx(const struct gw_answer *a, struct gw_verdict *v)
{
        json_t *body   = parse_object(a);
        bool have_code = body && take_error(body, v) == CODE_OK;
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

void gateway_classify_charge(const struct gw_answer *a, struct gw_verdict *v)
{
        int s = a->http_status;

        verdict_init(v);
        v->retry_after_ms = gateway_parse_retry_after(a->retry_after);
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

/* What a query's list held, charge by charge (gateway_classify_query). */
struct list_tally {
        int failed;   /* failed charges of ours with a valid code */
        int unclear;  /* ours, or without a reference, and no evidence */
        int foreign;  /* of other references */
        int mismatch; /* ours with another amount or currency */
};

/* Counts one listed charge ch into t; a succeeded one of ours (the first
 * id) and the first failed one of ours (its code) go into v. */
static void tally_charge(const json_t *ch, const struct gw_answer *a,
                         struct gw_verdict *v, struct list_tally *t)
{
        const char *ref;
        size_t ref_len;
        struct gw_verdict tmp;
        enum match m;

        if (!json_is_object(ch) ||
            !str_field(ch, "reference", &ref, &ref_len)) {
                t->unclear++;
                return;
        }
        if (!a->expect_reference || ref_len != strlen(a->expect_reference) ||
            memcmp(ref, a->expect_reference, ref_len) != 0) {
                t->foreign++;
                return;
        }
        m = charge_match(ch, a);
        if (m == MATCH_OTHER) {
                t->mismatch++;
                return;
        }
        verdict_init(&tmp);
        if (str_field_is(ch, "status", "succeeded")) {
                /* a charge is proven by its id, amount and
                 * currency; anything less is no evidence */
                if (m != MATCH_OK || !take_ident(ch, "id", tmp.charge_id,
                                                 sizeof(tmp.charge_id))) {
                        t->unclear++;
                        return;
                }
                if (v->succeeded_charges++ == 0)
                        memcpy(v->charge_id, tmp.charge_id,
                               sizeof(v->charge_id));
                return;
        }
        if (str_field_is(ch, "status", "failed") &&
            take_error(ch, &tmp) == CODE_OK) {
                if (t->failed++ == 0) {
                        memcpy(v->error_code, tmp.error_code,
                               sizeof(v->error_code));
                        memcpy(v->error_message, tmp.error_message,
                               sizeof(v->error_message));
                }
                return;
        }
        t->unclear++;
}

/* The verdict on a whole list from its tally; v keeps only the strings
 * its outcome carries. */
static void list_verdict(struct gw_verdict *v, const struct list_tally *t)
{
        if (t->mismatch) {
                snprintf(v->error_code, sizeof(v->error_code), "%s",
                         "charge_mismatch");
                set(v, GW_DEFECT,
                    "listed charge has another amount or currency");
        } else if (v->succeeded_charges > 1) {
                set(v, GW_SUCCEEDED,
                    "several succeeded charges listed for one reference");
        } else if (v->succeeded_charges == 1) {
                set(v, GW_SUCCEEDED, "succeeded charge listed");
        } else if (t->unclear) {
                set(v, GW_UNKNOWN,
                    "listed charge neither succeeded nor "
                    "failed with a code");
        } else if (t->failed) {
                set(v, GW_FAILED, "only failed charges listed");
        } else if (t->foreign) {
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
}

void gateway_classify_query(const struct gw_answer *a, struct gw_verdict *v)
{
        json_t *body        = NULL, *data;
        struct list_tally t = { 0 };
        size_t i, n;

        verdict_init(v);
        v->retry_after_ms = gateway_parse_retry_after(a->retry_after);
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
        for (i = 0; i < n; i++)
                tally_charge(json_array_get(data, i), a, v, &t);
        list_verdict(v, &t);
out:
        json_decref(body);
}

enum retry_class gateway_outcome_retry_class(enum gw_outcome o)
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

const char *gateway_outcome_name(enum gw_outcome o)
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

const char *gateway_transport_name(enum gw_transport t)
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
