/* SPDX-License-Identifier: Apache-2.0 */
/*
 * hash: canonical serialization and SHA-256 of the request fields.
 *
 * The byte form is a contract with other languages (docs/request-hash.md):
 * a change here changes every stored hash and turns every retry of an
 * in-flight intent into a conflict. Never change it without a new
 * schema_version. Never hashes a field outside the seven listed.
 */
#include "intent/hash.h"

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "util/buf.h"
#include "util/crypto.h"

/*
 * The most bytes a canonical form may take. Validated fields give well
 * under 8 KiB (64 + 255 + 64 + 64 + 3 + 255 code points, six bytes at
 * most each once escaped), so only a caller passing unvalidated fields can
 * reach it; it gets -1.
 */
#define CANON_MAX (1024 * 1024)

/* The escape of c, a byte RFC 8785 section 3.2.2.2 escapes ('"', '\\'
 * and the control bytes): the short form where it has one, else \u00XX. */
static void canon_put_escape(struct buf *b, unsigned char c)
{
        static const char hex[] = "0123456789abcdef";
        char esc[6] = { '\\', 'u', '0', '0', hex[c >> 4], hex[c & 0xf] };

        switch (c) {
        case '"':
                buf_append(b, "\\\"", 2);
                return;
        case '\\':
                buf_append(b, "\\\\", 2);
                return;
        case '\b':
                buf_append(b, "\\b", 2);
                return;
        case '\t':
                buf_append(b, "\\t", 2);
                return;
        case '\n':
                buf_append(b, "\\n", 2);
                return;
        case '\f':
                buf_append(b, "\\f", 2);
                return;
        case '\r':
                buf_append(b, "\\r", 2);
                return;
        default:
                buf_append(b, esc, sizeof(esc));
                return;
        }
}

/* A JSON string literal, escaped exactly as RFC 8785 section 3.2.2.2;
 * runs of bytes that need no escape are appended at once. */
static void canon_put_string(struct buf *b, const char *s)
{
        const char *run = s;

        buf_append(b, "\"", 1);
        for (;; s++) {
                unsigned char c = (unsigned char)*s;

                if (c >= 0x20 && c != '"' && c != '\\')
                        continue;
                buf_append(b, run, (size_t)(s - run));
                if (c == '\0')
                        break;
                canon_put_escape(b, c);
                run = s + 1;
        }
        buf_append(b, "\"", 1);
}

int intent_hash_canonical(const struct intent_hash_fields *f, char **out,
                          size_t *out_len)
{
        struct buf b;

        *out     = NULL;
        *out_len = 0;
        if (f->tenant_id == NULL || f->idempotency_key == NULL ||
            f->order_id == NULL || f->customer_id == NULL ||
            f->currency == NULL || f->payment_method == NULL)
                return -1;
        buf_init(&b, CANON_MAX);

        /* Keys in code point order; all are ASCII, so byte order is it. */
        buf_appendf(&b, "{\"amount\":%" PRId64, f->amount);
        buf_append_str(&b, ",\"currency\":");
        canon_put_string(&b, f->currency);
        buf_append_str(&b, ",\"customer_id\":");
        canon_put_string(&b, f->customer_id);
        buf_append_str(&b, ",\"idempotency_key\":");
        canon_put_string(&b, f->idempotency_key);
        buf_append_str(&b, ",\"order_id\":");
        canon_put_string(&b, f->order_id);
        buf_append_str(&b, ",\"payment_method\":");
        canon_put_string(&b, f->payment_method);
        buf_append_str(&b, ",\"tenant_id\":");
        canon_put_string(&b, f->tenant_id);
        buf_append_str(&b, "}");
        /* an append that failed made the buffer fail: checked once here */
        *out = buf_detach(&b, out_len);
        return *out ? 0 : -1;
}

int intent_hash_compute(const struct intent_hash_fields *f,
                        unsigned char out[INTENT_HASH_LEN],
                        char hex[INTENT_HASH_HEX_SIZE])
{
        char *canon = NULL;
        size_t len;

        if (intent_hash_canonical(f, &canon, &len) != 0)
                return -1;
        crypto_sha256(canon, len, out);
        if (hex != NULL)
                crypto_hex(out, INTENT_HASH_LEN, hex);
        free(canon);
        return 0;
}
