/* SPDX-License-Identifier: Apache-2.0 */
/*
 * request: charge body and URLs. Pure (jansson only).
 *
 * Must never let anything but the request shape the body (no time, no
 * randomness, no attempt number): a retry sends the same bytes.
 */
#include "gateway/request.h"

#include "util/xalloc.h"

#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define GW_AMOUNT_MAX ((int64_t)9007199254740991LL) /* 2^53 - 1 */

char *gateway_charge_body(const struct gateway_charge_req *req, char *errstr,
                          size_t errstr_size)
{
        json_t *j  = NULL;
        char *body = NULL;
        json_error_t err;

        if (!req->payment_id || !*req->payment_id || !req->tenant_id ||
            !*req->tenant_id || !req->order_id || !*req->order_id ||
            !req->currency || !*req->currency || !req->payment_method ||
            !*req->payment_method) {
                snprintf(errstr, errstr_size,
                         "charge request lacks payment_id, tenant_id, "
                         "order_id, currency or payment_method");
                goto fail;
        }
        if (req->amount < 1 || req->amount > GW_AMOUNT_MAX) {
                snprintf(errstr, errstr_size,
                         "charge amount out of range 1..2^53-1");
                goto fail;
        }
        /* json_pack fails on a string that is not valid UTF-8. */
        j = json_pack_ex(&err, 0, "{s:I, s:s, s:s, s:s, s:{s:s, s:s}}",
                         "amount", (json_int_t)req->amount, "currency",
                         req->currency, "payment_method", req->payment_method,
                         "reference", req->payment_id, "metadata", "tenant_id",
                         req->tenant_id, "order_id", req->order_id);
        if (!j) {
                snprintf(errstr, errstr_size,
                         "charge request field is not valid UTF-8");
                goto fail;
        }
        body = json_dumps(j, JSON_COMPACT | JSON_PRESERVE_ORDER);
        if (!body) /* an object always encodes: NULL is out of memory */
                xalloc_die();
        if (strlen(body) > GW_BODY_MAX) {
                snprintf(errstr, errstr_size, "charge body too large");
                free(body);
                body = NULL;
        }
fail:
        json_decref(j);
        return body;
}

static size_t base_len(const char *base_url)
{
        size_t n = strlen(base_url);

        while (n > 0 && base_url[n - 1] == '/')
                n--;
        return n;
}

char *gateway_charges_url(const char *base_url)
{
        size_t n  = base_len(base_url);
        char *url = xmalloc(n + sizeof("/v1/charges"));

        memcpy(url, base_url, n);
        memcpy(url + n, "/v1/charges", sizeof("/v1/charges"));
        return url;
}

static bool unreserved(unsigned char c)
{
        return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') ||
               (c >= '0' && c <= '9') || c == '-' || c == '.' || c == '_' ||
               c == '~';
}

char *gateway_query_url(const char *base_url, const char *reference)
{
        static const char hex[]  = "0123456789ABCDEF";
        static const char path[] = "/v1/charges?reference=";
        size_t n = base_len(base_url), rl = strlen(reference), o;
        char *url = xmalloc(n + sizeof(path) + 3 * rl);

        memcpy(url, base_url, n);
        memcpy(url + n, path, sizeof(path) - 1);
        o = n + sizeof(path) - 1;
        for (size_t i = 0; i < rl; i++) {
                unsigned char c = (unsigned char)reference[i];

                if (unreserved(c)) {
                        url[o++] = (char)c;
                } else {
                        url[o++] = '%';
                        url[o++] = hex[c >> 4];
                        url[o++] = hex[c & 15];
                }
        }
        url[o] = '\0';
        return url;
}

bool gateway_key_valid(const char *key)
{
        size_t n = 0;

        if (!key)
                return false;
        for (; key[n]; n++) {
                unsigned char c = (unsigned char)key[n];
                if (c < 0x21 || c > 0x7e || n >= 255)
                        return false;
        }
        return n > 0;
}
