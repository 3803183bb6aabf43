/* SPDX-License-Identifier: Apache-2.0 */
/*
 * fuzz_classify: the gateway answer classifier (src/gateway/classify.h) on
 * a fuzzed status, headers and body, as the charge and as the query answer.
 *
 * An input is text, so that seeds can be read and written by hand:
 *
 *   402 replayed             status line: the HTTP status (any number),
 *                            optional words "replayed", or a transport
 *                            error instead of an answer: "timeout",
 *                            "reset", "refused", "dns", "tls", "other"
 *   retry-after: 10          header lines until an empty line; also
 *   reference: order-1       what we asked for: reference, amount,
 *   amount: 1000             currency (absent: not checked)
 *   currency: EUR
 *                            an empty line, then the body as raw bytes
 *   {"id":"ch_1", ...}       (no empty line: no body at all)
 *
 * Invariants, for every input:
 *   - every string of the verdict ends inside its array, reason is set;
 *   - the outcome is one of the enum's; the charge is never NOT_FOUND;
 *   - a charge answer is FAILED only on a 402 that arrived in full, a
 *     query answer only on a 200 that arrived in full;
 *   - SUCCEEDED carries a charge id, FAILED an error code, and SUCCEEDED
 *     comes only for a call that said which reference, amount and
 *     currency it sent;
 *   - a charge id and an error code are printable ASCII identifiers that
 *     fit; the message is valid UTF-8 without control, separator or bidi
 *     control characters; so is gateway_text_clean()'s output on the raw body,
 *     which fits its buffer;
 *   - Retry-After is -1 or within 0..RETRY_AFTER_MAX_MS.
 */
#include <stdbool.h>
#include <string.h>

#include "fuzz.h"
#include "gateway/classify.h"
#include "util/guard.h"
#include "util/utf8.h"

#define FIELD_MAX 512

struct input {
        struct gw_answer a;
        char retry_after[FIELD_MAX];
        char reference[FIELD_MAX];
        char currency[FIELD_MAX];
};

/* Next line of data[*pos..size) (without '\n') into line, cut to fit. */
static bool next_line(const uint8_t *data, size_t size, size_t *pos, char *line,
                      size_t linesz)
{
        const uint8_t *nl;
        size_t n, len;

        if (*pos >= size)
                return false;
        nl  = memchr(data + *pos, '\n', size - *pos);
        len = nl ? (size_t)(nl - (data + *pos)) : size - *pos;
        n   = len < linesz - 1 ? len : linesz - 1;
        memcpy(line, data + *pos, n);
        line[n] = '\0';
        *pos += len + (nl ? 1 : 0);
        return true;
}

static long long parse_number(const char *s)
{
        long long n = 0;
        bool neg    = *s == '-';

        if (neg)
                s++;
        for (; *s >= '0' && *s <= '9'; s++)
                n = n < 100000000000000LL ? n * 10 + (*s - '0') : n;
        return neg ? -n : n;
}

static void status_line(const char *line, struct gw_answer *a)
{
        static const struct {
                const char *word;
                enum gw_transport t;
        } words[] = {
                { "timeout", GW_TRANSPORT_TIMEOUT },
                { "reset", GW_TRANSPORT_RESET },
                { "refused", GW_TRANSPORT_REFUSED },
                { "dns", GW_TRANSPORT_DNS },
                { "tls", GW_TRANSPORT_TLS },
                { "other", GW_TRANSPORT_OTHER },
        };
        long long s = parse_number(line);

        a->http_status = s > 99999 ? 99999 : s < -99999 ? -99999 : (int)s;
        a->replayed    = strstr(line, "replayed") != NULL;
        for (size_t i = 0; i < sizeof(words) / sizeof(words[0]); i++) {
                if (strstr(line, words[i].word)) {
                        a->transport   = words[i].t;
                        a->http_status = 0;
                }
        }
}

static void decode(const uint8_t *data, size_t size, struct input *in)
{
        char line[FIELD_MAX + 32];
        size_t pos = 0;

        memset(in, 0, sizeof(*in));
        in->a.transport     = GW_TRANSPORT_OK;
        in->a.expect_amount = -1;
        if (next_line(data, size, &pos, line, sizeof(line)))
                status_line(line, &in->a);
        while (next_line(data, size, &pos, line, sizeof(line))) {
                const char *v;
                if (line[0] == '\0' || strcmp(line, "\r") == 0) {
                        in->a.body     = (const char *)data + pos;
                        in->a.body_len = size - pos;
                        break;
                }
                if (!(v = strchr(line, ':')))
                        continue;
                v++;
                while (*v == ' ')
                        v++;
                if (strncmp(line, "retry-after:", 12) == 0) {
                        snprintf(in->retry_after, FIELD_MAX, "%s", v);
                        in->a.retry_after = in->retry_after;
                } else if (strncmp(line, "reference:", 10) == 0) {
                        snprintf(in->reference, FIELD_MAX, "%s", v);
                        in->a.expect_reference = in->reference;
                } else if (strncmp(line, "currency:", 9) == 0) {
                        snprintf(in->currency, FIELD_MAX, "%s", v);
                        in->a.expect_currency = in->currency;
                } else if (strncmp(line, "amount:", 7) == 0) {
                        in->a.expect_amount = parse_number(v);
                }
        }
}

/* The code point of the valid sequence s[0..n). */
static unsigned long code_point(const unsigned char *s, size_t n)
{
        static const unsigned char lead_mask[] = { 0, 0x7F, 0x1F, 0x0F, 0x07 };
        unsigned long cp                       = s[0] & lead_mask[n];

        for (size_t i = 1; i < n; i++)
                cp = cp << 6 | (s[i] & 0x3F);
        return cp;
}

/* Valid UTF-8 without C0/C1 controls, DEL, line and paragraph separators
 * or bidi embedding, override and isolate controls. */
static bool clean_text(const char *s)
{
        size_t len = strlen(s), i = 0;

        while (i < len) {
                size_t n = utf8_seq_len(s + i, len - i);
                unsigned long cp;

                if (n == 0)
                        return false;
                cp = code_point((const unsigned char *)s + i, n);
                if (cp < 0x20 || (cp >= 0x7F && cp <= 0x9F) || cp == 0x2028 ||
                    cp == 0x2029 || (cp >= 0x202A && cp <= 0x202E) ||
                    (cp >= 0x2066 && cp <= 0x2069))
                        return false;
                i += n;
        }
        return true;
}

static void check_verdict(const struct gw_answer *a, const struct gw_verdict *v)
{
        bool full = a->transport == GW_TRANSPORT_OK;

        FUZZ_CHECK(FUZZ_TERMINATED(v->charge_id));
        FUZZ_CHECK(FUZZ_TERMINATED(v->error_code));
        FUZZ_CHECK(FUZZ_TERMINATED(v->error_message));
        /* untrusted text never leaves the classifier unchecked */
        FUZZ_CHECK(!v->charge_id[0] ||
                   gateway_ident_valid(v->charge_id, strlen(v->charge_id),
                                       GW_CHARGE_ID_SIZE - 1));
        FUZZ_CHECK(!v->error_code[0] ||
                   gateway_ident_valid(v->error_code, strlen(v->error_code),
                                       GW_ERROR_CODE_SIZE - 1));
        FUZZ_CHECK(clean_text(v->error_message));
        FUZZ_CHECK(
            !guard_has_card_number(v->error_message,
                                   strlen(v->error_message)) &&
            !guard_has_email(v->error_message, strlen(v->error_message)));
        FUZZ_CHECK(v->reason != NULL && v->reason[0] != '\0');
        FUZZ_CHECK(v->outcome >= GW_SUCCEEDED && v->outcome <= GW_NOT_FOUND);
        FUZZ_CHECK(v->retry_after_ms == -1 ||
                   (v->retry_after_ms >= 0 &&
                    v->retry_after_ms <= RETRY_AFTER_MAX_MS));
        if (!full)
                FUZZ_CHECK(v->outcome != GW_SUCCEEDED &&
                           v->outcome != GW_FAILED);
        /* a success is evidence only for a call that said what it sent */
        if (v->outcome == GW_SUCCEEDED)
                FUZZ_CHECK(v->charge_id[0] != '\0' && a->expect_reference &&
                           a->expect_currency && a->expect_amount >= 0);
        if (v->outcome == GW_FAILED)
                FUZZ_CHECK(v->error_code[0] != '\0');
        (void)gateway_outcome_name(v->outcome);
        (void)gateway_outcome_retry_class(v->outcome);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
        struct input in;
        struct gw_verdict v;

        decode(data, size, &in);

        /* 0xA5, not 0: a string the classifier leaves unterminated shows */
        memset(&v, 0xA5, sizeof(v));
        gateway_classify_charge(&in.a, &v);
        check_verdict(&in.a, &v);
        FUZZ_CHECK(v.outcome != GW_NOT_FOUND);
        if (v.outcome == GW_FAILED)
                FUZZ_CHECK(in.a.http_status == 402);

        memset(&v, 0xA5, sizeof(v));
        gateway_classify_query(&in.a, &v);
        check_verdict(&in.a, &v);
        if (v.outcome == GW_FAILED)
                FUZZ_CHECK(in.a.http_status == 200);

        (void)gateway_parse_retry_after(in.a.retry_after);

        /* the cleaner on the raw body, into a buffer of exactly a size
         * taken from the input (ASan sees a write past it) */
        {
                size_t outsz = 1 + (size ? data[size - 1] : 0);
                char *out    = malloc(outsz);
                size_t n;

                FUZZ_CHECK(out != NULL);
                n = gateway_text_clean(in.a.body, in.a.body_len, out, outsz);
                FUZZ_CHECK(n < outsz && out[n] == '\0' && strlen(out) == n);
                FUZZ_CHECK(clean_text(out));
                /* nothing of a card number or an address survives */
                FUZZ_CHECK(!guard_has_card_number(out, n));
                FUZZ_CHECK(!guard_has_email(out, n));
                free(out);
        }
        return 0;
}
