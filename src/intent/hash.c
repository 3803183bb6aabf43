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
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util/crypto.h"

/* A growable byte buffer; on allocation failure it remembers and stops. */
struct canon_buf {
        char *p;
        size_t len;
        size_t cap;
        int err;
};

static void buf_put(struct canon_buf *b, const char *s, size_t n)
{
        if (b->err)
                return;
        if (b->len + n + 1 > b->cap) {
                size_t cap = b->cap ? b->cap : 256;
                char *np;

                while (b->len + n + 1 > cap)
                        cap *= 2;
                np = realloc(b->p, cap);
                if (np == NULL) {
                        b->err = -1;
                        return;
                }
                b->p   = np;
                b->cap = cap;
        }
        memcpy(b->p + b->len, s, n);
        b->len += n;
        b->p[b->len] = '\0';
}

static void buf_puts(struct canon_buf *b, const char *s)
{
        buf_put(b, s, strlen(s));
}

/* A JSON string literal, escaped exactly as RFC 8785 section 3.2.2.2. */
static void buf_put_string(struct canon_buf *b, const char *s)
{
        static const char hex[] = "0123456789abcdef";

        buf_put(b, "\"", 1);
        for (; *s != '\0'; s++) {
                unsigned char c = (unsigned char)*s;
                char esc[6]     = { '\\', 'u', '0', '0', 0, 0 };

                switch (c) {
                case '"':
                        buf_put(b, "\\\"", 2);
                        break;
                case '\\':
                        buf_put(b, "\\\\", 2);
                        break;
                case '\b':
                        buf_put(b, "\\b", 2);
                        break;
                case '\t':
                        buf_put(b, "\\t", 2);
                        break;
                case '\n':
                        buf_put(b, "\\n", 2);
                        break;
                case '\f':
                        buf_put(b, "\\f", 2);
                        break;
                case '\r':
                        buf_put(b, "\\r", 2);
                        break;
                default:
                        if (c < 0x20) {
                                esc[4] = hex[c >> 4];
                                esc[5] = hex[c & 0xf];
                                buf_put(b, esc, sizeof(esc));
                        } else {
                                buf_put(b, (const char *)&c, 1);
                        }
                        break;
                }
        }
        buf_put(b, "\"", 1);
}

int intent_hash_canonical(const struct intent_hash_fields *f, char **out,
                          size_t *out_len)
{
        struct canon_buf b = { NULL, 0, 0, 0 };
        char num[32];

        *out     = NULL;
        *out_len = 0;
        if (f->tenant_id == NULL || f->idempotency_key == NULL ||
            f->order_id == NULL || f->customer_id == NULL ||
            f->currency == NULL || f->payment_method == NULL)
                return -1;
        snprintf(num, sizeof(num), "%" PRId64, f->amount);

        /* Keys in code point order; all are ASCII, so byte order is it. */
        buf_puts(&b, "{\"amount\":");
        buf_puts(&b, num);
        buf_puts(&b, ",\"currency\":");
        buf_put_string(&b, f->currency);
        buf_puts(&b, ",\"customer_id\":");
        buf_put_string(&b, f->customer_id);
        buf_puts(&b, ",\"idempotency_key\":");
        buf_put_string(&b, f->idempotency_key);
        buf_puts(&b, ",\"order_id\":");
        buf_put_string(&b, f->order_id);
        buf_puts(&b, ",\"payment_method\":");
        buf_put_string(&b, f->payment_method);
        buf_puts(&b, ",\"tenant_id\":");
        buf_put_string(&b, f->tenant_id);
        buf_puts(&b, "}");
        if (b.err) {
                free(b.p);
                return -1;
        }
        *out     = b.p;
        *out_len = b.len;
        return 0;
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
