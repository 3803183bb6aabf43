/* SPDX-License-Identifier: Apache-2.0 */
/*
 * intent: decoding and validation of payment intents (see intent.h and
 * docs/intent-validation.md).
 *
 * Never copies a raw card number or e-mail address into a rejected intent,
 * never puts a value of the intent into a message, and never logs.
 */
#include "intent/intent.h"

#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "intent/arena.h"
#include "intent/currency.h"
#include "util/crypto.h"
#include "util/timeutil.h"
#include "util/utf8.h"
#include "util/uuid.h"
#include "util/xalloc.h"

#define TENANT_MAX         64
#define KEY_MAX            255
#define ID_MAX             64 /* order_id, customer_id */
#define METHOD_MAX         255
#define DESCRIPTION_MAX    500
#define METADATA_PAIRS_MAX 20
#define METADATA_KEY_MAX   40
#define METADATA_VALUE_MAX 500
#define ECHO_EVENT_ID_MAX  36 /* a rejected event_id is echoed up to this */

/* jansson's decoding flags; see docs/intent-validation.md. */
#define DECODE_FLAGS (JSON_DECODE_ANY | JSON_REJECT_DUPLICATES | JSON_ALLOW_NUL)

/* The first broken rule: error.code and a message without any value. */
struct violation {
        const char *code;
        char message[INTENT_MESSAGE_SIZE];
};

static void set_reason(struct intent *in, enum intent_verdict v,
                       const char *reason, const char *message)
{
        in->verdict = v;
        snprintf(in->reason, sizeof(in->reason), "%s", reason);
        snprintf(in->message, sizeof(in->message), "%s",
                 message != NULL ? message : "");
}

void intent_init(struct intent *in)
{
        memset(in, 0, sizeof(*in));
}

void intent_reset(struct intent *in)
{
        free(in->event_id);
        free(in->tenant_id);
        free(in->idempotency_key);
        free(in->order_id);
        free(in->customer_id);
        free(in->currency);
        free(in->payment_method);
        free(in->description);
        free(in->occurred_at);
        intent_init(in);
}

const char *intent_verdict_name(enum intent_verdict v)
{
        switch (v) {
        case INTENT_OK:
                return "ok";
        case INTENT_REJECTED:
                return "rejected";
        case INTENT_DLQ:
                return "dlq";
        }
        return "unknown";
}

/* Code points of valid UTF-8 (jansson guarantees validity). */
static size_t utf8_chars(const char *s, size_t len)
{
        size_t n = 0;

        for (size_t i = 0; i < len; i++)
                if (((unsigned char)s[i] & 0xC0) != 0x80)
                        n++;
        return n;
}

/* A string without U+0000 (the C API needs NUL-terminated strings). */
static bool is_c_string(const json_t *v)
{
        return json_is_string(v) &&
               strlen(json_string_value(v)) == json_string_length(v);
}

/* A string of min..max code points without U+0000. */
static bool chars_ok(const json_t *v, size_t min, size_t max)
{
        size_t n;

        if (!is_c_string(v))
                return false;
        n = utf8_chars(json_string_value(v), json_string_length(v));
        return n >= min && n <= max;
}

/*
 * An exact JSON integer. In lossy mode (an integer elsewhere overflowed,
 * so jansson decoded every number as a real) an integral real stands for
 * the integer; reals are exact up to 2^53, beyond every bound used here.
 */
static bool get_integer(const json_t *v, bool lossy, int64_t *out)
{
        if (json_is_integer(v)) {
                *out = (int64_t)json_integer_value(v);
                return true;
        }
        if (lossy && json_is_real(v)) {
                double d = json_real_value(v);

                if (!(d >= -9007199254740992.0 && d <= 9007199254740992.0) ||
                    (double)(int64_t)d != d)
                        return false;
                *out = (int64_t)d;
                return true;
        }
        return false;
}

/* A non-empty string, the condition for the three fields a DLQ needs. */
static const char *answer_field(json_t *root, const char *name)
{
        json_t *v = json_object_get(root, name);

        if (!json_is_string(v) || json_string_length(v) == 0)
                return NULL;
        return json_string_value(v);
}

static bool tenant_ok(const json_t *v)
{
        const char *s = json_string_value(v);
        size_t len    = json_string_length(v);

        if (len < 1 || len > TENANT_MAX)
                return false;
        for (size_t i = 0; i < len; i++) {
                unsigned char c = (unsigned char)s[i];

                if (!((c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') ||
                      (c >= '0' && c <= '9') || c == '.' || c == '_' ||
                      c == '-'))
                        return false;
        }
        return true;
}

static bool key_ok(const json_t *v)
{
        const char *s = json_string_value(v);
        size_t len    = json_string_length(v);

        if (len < 1 || len > KEY_MAX)
                return false;
        for (size_t i = 0; i < len; i++)
                if ((unsigned char)s[i] < 0x20 || (unsigned char)s[i] > 0x7E)
                        return false;
        return true;
}

/* Records a violation: "<field> <what>". Never gets a value to print. */
static bool violate(struct violation *vi, const char *code, const char *field,
                    const char *what)
{
        vi->code = code;
        snprintf(vi->message, sizeof(vi->message), "%s %s", field, what);
        return true;
}

/* Card number, then e-mail, in one string; `field` names it, never shows. */
static bool guard_string(const char *s, size_t len, const char *field,
                         struct violation *vi)
{
        if (guard_has_card_number(s, len))
                return violate(vi, "card_number_in_field", field,
                               "contains a card number");
        if (guard_has_email(s, len))
                return violate(vi, "email_in_field", field,
                               "contains an e-mail address");
        return false;
}

/* The string fields the guard scans, besides idempotency_key and metadata. */
static const char *const guarded[] = { "payment_method", "order_id",
                                       "customer_id", "description" };

/* The guard runs before the other rules: it is the one to fix first. */
static bool check_guard(json_t *root, struct violation *vi)
{
        json_t *v = json_object_get(root, "idempotency_key");
        json_t *meta;
        const char *k;
        json_t *mv;

        if (guard_string(json_string_value(v), json_string_length(v),
                         "idempotency_key", vi))
                return true;
        for (size_t i = 0; i < sizeof(guarded) / sizeof(*guarded); i++) {
                v = json_object_get(root, guarded[i]);
                if (json_is_string(v) &&
                    guard_string(json_string_value(v), json_string_length(v),
                                 guarded[i], vi))
                        return true;
        }
        meta = json_object_get(root, "metadata");
        if (!json_is_object(meta))
                return false;
        json_object_foreach(meta, k, mv)
        {
                if (guard_string(k, strlen(k), "a metadata key", vi))
                        return true;
                if (json_is_string(mv) &&
                    guard_string(json_string_value(mv), json_string_length(mv),
                                 "a metadata value", vi))
                        return true;
        }
        return false;
}

static bool metadata_ok(const json_t *meta)
{
        const char *k;
        json_t *mv;

        if (meta == NULL || json_is_null(meta))
                return true;
        if (!json_is_object(meta) ||
            json_object_size(meta) > METADATA_PAIRS_MAX)
                return false;
        json_object_foreach((json_t *)meta, k, mv)
        {
                if (utf8_chars(k, strlen(k)) > METADATA_KEY_MAX ||
                    !chars_ok(mv, 0, METADATA_VALUE_MAX))
                        return false;
        }
        return true;
}

/* The rules of the hashed fields, in the contract's order. True on a
 * violation. */
static bool check_hashed(json_t *root, bool lossy, struct violation *vi)
{
        json_t *v;
        int64_t n;

        if (!tenant_ok(json_object_get(root, "tenant_id")))
                return violate(vi, "invalid_tenant_id", "tenant_id",
                               "must be 1-64 characters of A-Z a-z 0-9 . _ -");
        if (!key_ok(json_object_get(root, "idempotency_key")))
                return violate(vi, "invalid_idempotency_key", "idempotency_key",
                               "must be 1-255 printable ASCII characters");
        if (!chars_ok(json_object_get(root, "order_id"), 1, ID_MAX))
                return violate(vi, "invalid_order_id", "order_id",
                               "must be a string of 1-64 characters");
        if (!chars_ok(json_object_get(root, "customer_id"), 1, ID_MAX))
                return violate(vi, "invalid_customer_id", "customer_id",
                               "must be a string of 1-64 characters");
        v = json_object_get(root, "amount");
        if (!get_integer(v, lossy, &n) || n < 1 || n > INTENT_AMOUNT_MAX)
                return violate(vi, "invalid_amount", "amount",
                               "must be an integer from 1 to 9007199254740991");
        v = json_object_get(root, "currency");
        if (!json_is_string(v) ||
            !intent_currency_known(json_string_value(v), json_string_length(v)))
                return violate(vi, "invalid_currency", "currency",
                               "must be an active ISO 4217 code, upper case");
        if (!chars_ok(json_object_get(root, "payment_method"), 1, METHOD_MAX))
                return violate(vi, "invalid_payment_method", "payment_method",
                               "must be a string of 1-255 characters");
        return false;
}

/* The rules of docs/contract.md §2.1, in its order. True on a violation. */
static bool check_rules(json_t *root, bool lossy, struct violation *vi)
{
        json_t *v;
        int64_t n;

        v = json_object_get(root, "schema_version");
        if (!get_integer(v, lossy, &n) || n != INTENT_SCHEMA_VERSION)
                return violate(vi, "invalid_schema_version", "schema_version",
                               "must be the integer 1");
        v = json_object_get(root, "event_id");
        if (!is_c_string(v) ||
            !uuid_valid(json_string_value(v), json_string_length(v)))
                return violate(vi, "invalid_event_id", "event_id",
                               "must be a UUID");
        if (check_hashed(root, lossy, vi))
                return true;
        v = json_object_get(root, "description");
        if (v != NULL && !json_is_null(v) && !chars_ok(v, 0, DESCRIPTION_MAX))
                return violate(vi, "invalid_description", "description",
                               "must be a string of at most 500 characters");
        if (!metadata_ok(json_object_get(root, "metadata")))
                return violate(vi, "invalid_metadata", "metadata",
                               "must be at most 20 string pairs, keys <= 40 "
                               "and values <= 500 characters");
        v = json_object_get(root, "occurred_at");
        if (!is_c_string(v) ||
            !rfc3339_valid(json_string_value(v), json_string_length(v)))
                return violate(vi, "invalid_occurred_at", "occurred_at",
                               "must be an RFC 3339 timestamp");
        return false;
}

/* A copy of a string member, or NULL when there is none. */
static char *dup_member(json_t *root, const char *name)
{
        const char *s = json_string_value(json_object_get(root, name));

        return s == NULL ? NULL : xstrdup(s);
}

/*
 * The redacted copy of a string member (see guard_redact()), cut to
 * max_chars code points on a code-point boundary, or NULL. Redacted
 * first, then cut, so a card number is never cut into a part the guard
 * would no longer see.
 */
static char *redact_member(json_t *root, const char *name, size_t max_chars)
{
        const char *s = json_string_value(json_object_get(root, name));
        size_t need, cut;
        char *d;

        if (s == NULL)
                return NULL;
        need = guard_redact(s, NULL, 0);
        d    = xmalloc(need + 1);
        (void)guard_redact(s, d, need + 1);
        cut    = utf8_prefix(d, strlen(d), max_chars, (size_t)-1);
        d[cut] = '\0';
        /* a cut inside a long digit run can leave 13-19 digits that pass
         * the Luhn check: then no digit (nor '@') of it is echoed */
        if (guard_has_card_number(d, cut) || guard_has_email(d, cut))
                guard_mask_all(d);
        return d;
}

/*
 * The inbox key of an event: the event_id itself when it is a UUID, else
 * "sha256:" and the hex SHA-256 of its exact bytes, so that an event id of
 * any length (or none) is a bounded key that still tells events apart and
 * never puts a raw value into an index.
 */
void intent_event_key(const char *s, size_t len,
                      char out[INTENT_EVENT_KEY_SIZE])
{
        static const char prefix[] = "sha256:";
        unsigned char d[CRYPTO_SHA256_LEN];

        if (uuid_valid(s, len)) {
                memcpy(out, s, len);
                out[len] = '\0';
                return;
        }
        crypto_sha256(s, len, d);
        memcpy(out, prefix, sizeof(prefix) - 1);
        crypto_hex(d, sizeof(d), out + sizeof(prefix) - 1);
}

static void event_key_of(json_t *root, struct intent *in)
{
        json_t *v     = json_object_get(root, "event_id");
        const char *s = json_string_value(v);

        /* not a string: the digest of no bytes (a UUID has no NUL) */
        intent_event_key(s != NULL ? s : "",
                         s != NULL ? json_string_length(v) : 0, in->event_key);
}

/*
 * True when every hashed field is valid and free of card numbers and
 * e-mail addresses (tenant_id too: a digit run can be a card), so the
 * request hash of a rejected intent is meaningful and its tenant, key and
 * order id are the sender's exact values.
 */
static bool hashed_fields_ok(json_t *root, bool lossy)
{
        static const char *const names[] = { "tenant_id", "idempotency_key",
                                             "order_id", "customer_id",
                                             "payment_method" };
        struct violation vi;
        json_t *v;

        if (check_hashed(root, lossy, &vi))
                return false;
        for (size_t i = 0; i < sizeof(names) / sizeof(*names); i++) {
                v = json_object_get(root, names[i]);
                if (guard_has_card_number(json_string_value(v),
                                          json_string_length(v)) ||
                    guard_has_email(json_string_value(v),
                                    json_string_length(v)))
                        return false;
        }
        return true;
}

/*
 * The request hash of fields that passed validation: every one present and
 * bounded, so the hash cannot fail; if it did, that is a bug.
 */
static void hash_valid(const struct intent_hash_fields *hf, struct intent *in)
{
        if (intent_hash_compute(hf, in->request_hash, in->request_hash_hex) !=
            0)
                abort(); /* a validated field that cannot be hashed: a bug */
        in->has_hash = true;
}

/* The request hash of a rejected intent whose hashed fields are valid. */
static void hash_rejected(json_t *root, struct intent *in)
{
        struct intent_hash_fields hf;
        char *customer, *method;

        customer          = dup_member(root, "customer_id");
        method            = dup_member(root, "payment_method");
        hf                = intent_hash_fields_of(in);
        hf.customer_id    = customer;
        hf.payment_method = method;
        hash_valid(&hf, in);
        free(customer);
        free(method);
}

static void fill_rejected(json_t *root, bool lossy, struct intent *in)
{
        json_t *v;
        int64_t n;

        event_key_of(root, in);
        in->event_id  = redact_member(root, "event_id", ECHO_EVENT_ID_MAX);
        in->tenant_id = redact_member(root, "tenant_id", TENANT_MAX);
        in->idempotency_key = redact_member(root, "idempotency_key", KEY_MAX);
        in->order_id        = redact_member(root, "order_id", ID_MAX);
        v                   = json_object_get(root, "amount");
        if (get_integer(v, lossy, &n) && n >= 1 && n <= INTENT_AMOUNT_MAX) {
                in->has_amount = true;
                in->amount     = n;
        }
        v = json_object_get(root, "currency");
        if (json_is_string(v) &&
            intent_currency_known(json_string_value(v), json_string_length(v)))
                in->currency = dup_member(root, "currency");
        if (strcmp(in->reason, "invalid_schema_version") != 0 &&
            hashed_fields_ok(root, lossy))
                hash_rejected(root, in);
}

static void fill_ok(json_t *root, bool lossy, struct intent *in)
{
        struct intent_hash_fields hf;

        event_key_of(root, in);
        in->event_id        = dup_member(root, "event_id");
        in->tenant_id       = dup_member(root, "tenant_id");
        in->idempotency_key = dup_member(root, "idempotency_key");
        in->order_id        = dup_member(root, "order_id");
        in->customer_id     = dup_member(root, "customer_id");
        in->currency        = dup_member(root, "currency");
        in->payment_method  = dup_member(root, "payment_method");
        in->description     = dup_member(root, "description");
        in->occurred_at     = dup_member(root, "occurred_at");
        in->has_amount =
            get_integer(json_object_get(root, "amount"), lossy, &in->amount);
        hf = intent_hash_fields_of(in);
        hash_valid(&hf, in);
}

struct intent_hash_fields intent_hash_fields_of(const struct intent *in)
{
        struct intent_hash_fields hf = {
                .tenant_id       = in->tenant_id,
                .idempotency_key = in->idempotency_key,
                .order_id        = in->order_id,
                .customer_id     = in->customer_id,
                .amount          = in->amount,
                .currency        = in->currency,
                .payment_method  = in->payment_method,
        };
        return hf;
}

/* Maps a decoding failure to a dlq-reason; jansson's out of memory ends
 * the process (util/xalloc.h). */
static const char *decode_reason(const json_error_t *jerr)
{
        switch (json_error_code(jerr)) {
        case json_error_out_of_memory:
                xalloc_die();
        case json_error_invalid_utf8:
                return "invalid_utf8";
        case json_error_duplicate_key:
                return "duplicate_key";
        case json_error_numeric_overflow:
                return "number_out_of_range";
        default:
                return "not_json";
        }
}

void intent_parse(const void *data, size_t len, struct intent *in)
{
        struct violation vi = { NULL, { 0 } };
        json_t *root        = NULL;
        json_error_t jerr;
        const char *reason;
        bool lossy = false;

        intent_reset(in);
        intent_arena_begin(); /* the tree is freed below, before the end */
        if (data == NULL || len == 0) {
                set_reason(in, INTENT_DLQ, "not_json", NULL);
                goto out;
        }
        root = json_loadb(data, len, DECODE_FLAGS, &jerr);
        if (root == NULL &&
            json_error_code(&jerr) == json_error_numeric_overflow) {
                /* An integer too big for int64: decode again, lossily, so
                 * an overflowing amount is rejected, not dead-lettered. */
                root = json_loadb(
                    data, len, DECODE_FLAGS | JSON_DECODE_INT_AS_REAL, &jerr);
                lossy = true;
        }
        if (root == NULL) {
                reason = decode_reason(&jerr);
                set_reason(in, INTENT_DLQ, reason, NULL);
                goto out;
        }
        if (!json_is_object(root)) {
                set_reason(in, INTENT_DLQ, "not_object", NULL);
                goto out;
        }
        if (answer_field(root, "event_id") == NULL)
                reason = "missing_event_id";
        else if (answer_field(root, "tenant_id") == NULL)
                reason = "missing_tenant_id";
        else if (answer_field(root, "idempotency_key") == NULL)
                reason = "missing_idempotency_key";
        else
                reason = NULL;
        if (reason != NULL) {
                set_reason(in, INTENT_DLQ, reason, NULL);
                goto out;
        }
        if (check_guard(root, &vi) || check_rules(root, lossy, &vi)) {
                set_reason(in, INTENT_REJECTED, vi.code, vi.message);
                fill_rejected(root, lossy, in);
        } else {
                set_reason(in, INTENT_OK, "", NULL);
                fill_ok(root, lossy, in);
        }
out:
        json_decref(root);
        intent_arena_end();
}
