/* SPDX-License-Identifier: Apache-2.0 */
/* intent/peek: see peek.h. */
#include "intent/peek.h"

#include <string.h>

struct cursor {
        const unsigned char *p, *end;
};

static void skip_ws(struct cursor *c)
{
        while (c->p < c->end && (*c->p == ' ' || *c->p == '\t' ||
                                 *c->p == '\n' || *c->p == '\r'))
                c->p++;
}

/* At a '"': past the closing quote; *plain: no escape, no control
 * character inside. False when the string does not end. */
static bool skip_string(struct cursor *c, const unsigned char **s, size_t *len,
                        bool *plain)
{
        const unsigned char *q = c->p + 1;

        *plain = true;
        while (q < c->end && *q != '"') {
                if (*q == '\\') {
                        *plain = false;
                        q++; /* the escaped byte cannot end the string */
                } else if (*q < 0x20) {
                        *plain = false;
                }
                q++;
        }
        if (q >= c->end)
                return false;
        *s   = c->p + 1;
        *len = (size_t)(q - (c->p + 1));
        c->p = q + 1;
        return true;
}

/* Past one value of any kind, strings inside honoured; no validation. */
static bool skip_value(struct cursor *c)
{
        const unsigned char *start = c->p, *s;
        size_t len;
        bool plain;
        int depth = 0;

        while (c->p < c->end) {
                unsigned char ch = *c->p;

                if (ch == '"') {
                        if (!skip_string(c, &s, &len, &plain))
                                return false;
                        if (depth == 0)
                                return true;
                } else if (ch == '{' || ch == '[') {
                        if (++depth > INTENT_PEEK_MAX_DEPTH)
                                return false;
                        c->p++;
                } else if (ch == '}' || ch == ']') {
                        if (depth == 0) /* the end of a scalar */
                                return c->p > start;
                        c->p++;
                        if (--depth == 0)
                                return true;
                } else if (depth == 0 &&
                           (ch == ',' || ch == ' ' || ch == '\t' ||
                            ch == '\n' || ch == '\r')) {
                        return c->p > start;
                } else {
                        c->p++;
                }
        }
        return false;
}

static bool tenant_char(unsigned char ch)
{
        return (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') ||
               (ch >= '0' && ch <= '9') || ch == '.' || ch == '_' || ch == '-';
}

static bool key_is(const unsigned char *k, size_t len, const char *name)
{
        return len == strlen(name) && memcmp(k, name, len) == 0;
}

bool intent_peek(const void *data, size_t len, struct intent_peek *out)
{
        struct cursor c = { data, (const unsigned char *)data + len };
        const unsigned char *tenant = NULL, *event = NULL, *key = NULL;
        size_t tenant_len = 0, event_len = 0, key_len = 0;
        bool key_seen = false;

        if (!data)
                return false;
        skip_ws(&c);
        if (c.p >= c.end || *c.p != '{')
                return false;
        c.p++;
        skip_ws(&c);
        if (c.p < c.end && *c.p == '}')
                return false; /* {}: neither member */
        for (;;) {
                const unsigned char *k, *v;
                size_t klen, vlen;
                bool plain, want_tenant, want_event;

                skip_ws(&c);
                if (c.p >= c.end || *c.p != '"' ||
                    !skip_string(&c, &k, &klen, &plain) || !plain)
                        return false;
                skip_ws(&c);
                if (c.p >= c.end || *c.p != ':')
                        return false;
                c.p++;
                skip_ws(&c);
                want_tenant = key_is(k, klen, "tenant_id");
                want_event  = key_is(k, klen, "event_id");
                if (key_is(k, klen, "idempotency_key")) {
                        if (key_seen)
                                return false; /* twice: decoding refuses */
                        key_seen = true;
                        /* optional: a key that is not a plain string is
                         * skipped, and the first event is not looked for */
                        if (c.p < c.end && *c.p == '"') {
                                if (!skip_string(&c, &v, &vlen, &plain))
                                        return false;
                                if (plain) {
                                        key     = v;
                                        key_len = vlen;
                                }
                        } else if (!skip_value(&c)) {
                                return false;
                        }
                } else if (want_tenant || want_event) {
                        if ((want_tenant && tenant) || (want_event && event))
                                return false; /* twice: decoding refuses */
                        if (c.p >= c.end || *c.p != '"' ||
                            !skip_string(&c, &v, &vlen, &plain) || !plain ||
                            vlen == 0)
                                return false;
                        if (want_tenant) {
                                tenant     = v;
                                tenant_len = vlen;
                        } else {
                                event     = v;
                                event_len = vlen;
                        }
                } else if (!skip_value(&c)) {
                        return false;
                }
                skip_ws(&c);
                if (c.p >= c.end)
                        return false;
                if (*c.p == ',') {
                        c.p++;
                        continue;
                }
                if (*c.p != '}')
                        return false;
                c.p++;
                break;
        }
        skip_ws(&c);
        if (c.p != c.end || !tenant || !event ||
            tenant_len >= INTENT_PEEK_TENANT_SIZE)
                return false;
        for (size_t i = 0; i < tenant_len; i++)
                if (!tenant_char(tenant[i]))
                        return false;
        memcpy(out->tenant_id, tenant, tenant_len);
        out->tenant_id[tenant_len] = '\0';
        intent_event_key((const char *)event, event_len, out->event_key);
        out->idem_key[0] = '\0';
        if (key && key_len > 0 && key_len < INTENT_PEEK_KEY_SIZE) {
                size_t i = 0;

                while (i < key_len && key[i] >= 0x20 && key[i] < 0x7f)
                        i++;
                if (i == key_len) {
                        memcpy(out->idem_key, key, key_len);
                        out->idem_key[key_len] = '\0';
                }
        }
        return true;
}
