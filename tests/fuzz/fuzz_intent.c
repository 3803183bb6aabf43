/* SPDX-License-Identifier: Apache-2.0 */
/*
 * fuzz_intent: the intent decoder, validator and redaction on raw bytes
 * (src/intent, through its public headers only).
 *
 * Invariants, for every input:
 *   - intent_parse() sets one of the three verdicts, reason and message
 *     NUL-terminated inside their arrays;
 *   - every string of the intent is valid UTF-8;
 *   - the strings of a REJECTED intent (which are stored, echoed in the
 *     result and logged) hold no card number and no e-mail address, and
 *     neither does its message; event_id, tenant_id, idempotency_key and
 *     order_id are cut to 36, 64, 255 and 64 code points;
 *   - an answered intent has an inbox key (event_key): its event_id when
 *     that is a UUID (then free of card numbers), else "sha256:<hex>";
 *   - intent_peek() (the sift's raw reader) never reads outside the input,
 *     and when it finds an identity in an input that decodes OK, it is
 *     the decoder's: the same tenant_id and event_key (and
 *     idempotency_key, when it read one);
 *   - guard_redact() of the input as a C string: the return value is the
 *     same with no buffer, a big enough one and a short one; the output is
 *     NUL-terminated inside the buffer and valid UTF-8 when the input is;
 *     the whole output holds no card number and no e-mail address, and a
 *     cut output is a prefix of the whole one (it shows nothing the whole
 *     output hides). (A cut inside a digit run that is not a card number
 *     can end in 13+ digits that pass the Luhn check: not checked here,
 *     see docs/testing.md.)
 */
#include <stdbool.h>
#include <string.h>

#include "fuzz.h"
#include "util/guard.h"
#include "intent/intent.h"
#include "intent/peek.h"
#include "util/utf8.h"

static bool has_secret(const char *s)
{
        size_t n = strlen(s);
        return guard_has_card_number(s, n) || guard_has_email(s, n);
}

static void check_string(const struct intent *in, const char *s)
{
        if (!s)
                return;
        FUZZ_CHECK(utf8_valid(s, strlen(s)));
        if (in->verdict == INTENT_REJECTED)
                FUZZ_CHECK(!has_secret(s));
}

static bool all_hex(const char *s, size_t n)
{
        for (size_t i = 0; i < n; i++)
                if (!((s[i] >= '0' && s[i] <= '9') ||
                      (s[i] >= 'a' && s[i] <= 'f')))
                        return false;
        return true;
}

static void check_event_key(const struct intent *in)
{
        const char *k = in->event_key;
        size_t n      = strlen(k);

        if (strncmp(k, "sha256:", 7) == 0) {
                FUZZ_CHECK(n == 7 + 64 && all_hex(k + 7, 64));
                return;
        }
        /* a UUID, the event_id itself */
        FUZZ_CHECK(n == 36 && k[8] == '-' && k[13] == '-' && k[18] == '-' &&
                   k[23] == '-');
        FUZZ_CHECK(in->event_id && strcmp(in->event_id, k) == 0);
        FUZZ_CHECK(!has_secret(k));
}

static void check_intent(const struct intent *in)
{
        const char *strings[] = {
                in->event_id,       in->tenant_id,   in->idempotency_key,
                in->order_id,       in->customer_id, in->currency,
                in->payment_method, in->description, in->occurred_at,
        };

        FUZZ_CHECK(in->verdict == INTENT_OK || in->verdict == INTENT_REJECTED ||
                   in->verdict == INTENT_DLQ);
        FUZZ_CHECK(FUZZ_TERMINATED(in->reason));
        FUZZ_CHECK(FUZZ_TERMINATED(in->message));
        FUZZ_CHECK(utf8_valid(in->reason, strlen(in->reason)));
        FUZZ_CHECK(utf8_valid(in->message, strlen(in->message)));
        for (size_t i = 0; i < sizeof(strings) / sizeof(strings[0]); i++)
                check_string(in, strings[i]);
        /* the inbox key of what is answered: the event_id when it is a
         * UUID, else a digest (whose hex may look like a card number to
         * the guard, and may: it reveals nothing) */
        FUZZ_CHECK(FUZZ_TERMINATED(in->event_key));
        if (in->verdict != INTENT_DLQ)
                check_event_key(in);
        if (in->has_hash)
                FUZZ_CHECK(strlen(in->request_hash_hex) ==
                           INTENT_HASH_HEX_SIZE - 1);
        switch (in->verdict) {
        case INTENT_OK:
                FUZZ_CHECK(in->event_id && in->tenant_id &&
                           in->idempotency_key);
                FUZZ_CHECK(FUZZ_TERMINATED(in->request_hash_hex));
                FUZZ_CHECK(strlen(in->request_hash_hex) ==
                           INTENT_HASH_HEX_SIZE - 1);
                break;
        case INTENT_REJECTED:
                /* answered: the result needs these three, and echoes them
                 * bounded (docs/contract.md §2.1 limits) */
                FUZZ_CHECK(in->event_id && in->tenant_id &&
                           in->idempotency_key);
                FUZZ_CHECK(utf8_count(in->event_id, strlen(in->event_id)) <=
                           36);
                FUZZ_CHECK(utf8_count(in->tenant_id, strlen(in->tenant_id)) <=
                           64);
                FUZZ_CHECK(utf8_count(in->idempotency_key,
                                      strlen(in->idempotency_key)) <= 255);
                FUZZ_CHECK(!in->order_id ||
                           utf8_count(in->order_id, strlen(in->order_id)) <=
                               64);
                FUZZ_CHECK(in->reason[0] != '\0');
                FUZZ_CHECK(!has_secret(in->message));
                break;
        case INTENT_DLQ:
                FUZZ_CHECK(in->reason[0] != '\0');
                break;
        }
}

static void check_peek(const struct intent *in, const uint8_t *data,
                       size_t size)
{
        struct intent_peek p;

        if (!intent_peek(data, size, &p))
                return;
        FUZZ_CHECK(FUZZ_TERMINATED(p.tenant_id) &&
                   FUZZ_TERMINATED(p.event_key) && FUZZ_TERMINATED(p.idem_key));
        if (in->verdict == INTENT_OK)
                FUZZ_CHECK(strcmp(p.tenant_id, in->tenant_id) == 0 &&
                           strcmp(p.event_key, in->event_key) == 0 &&
                           (!p.idem_key[0] ||
                            strcmp(p.idem_key, in->idempotency_key) == 0));
}

/* Redacts s into a heap buffer of exactly outsz bytes (ASan sees any write
 * past it); returns the buffer (NULL when outsz is 0) and sets *need to
 * what guard_redact() returned. */
static char *redact_into(const char *s, size_t outsz, size_t *need)
{
        char *out = outsz ? malloc(outsz) : NULL;

        FUZZ_CHECK(outsz == 0 || out != NULL);
        *need = guard_redact(s, out, outsz);
        if (outsz > 0) {
                FUZZ_CHECK(memchr(out, '\0', outsz) != NULL);
                FUZZ_CHECK(strlen(out) <= *need);
        }
        return out;
}

static void check_redact(const uint8_t *data, size_t size)
{
        char *s = malloc(size + 1), *full, *cut;
        size_t slen, need, n, len;
        bool valid;

        FUZZ_CHECK(s != NULL);
        memcpy(s, data, size);
        s[size] = '\0';
        slen    = strlen(s);
        valid   = utf8_valid(s, slen);
        (void)redact_into(s, 0, &need);

        /* the whole output: the length announced, nothing to hide left */
        full = redact_into(s, need + 1, &n);
        FUZZ_CHECK(n == need && strlen(full) == need);
        if (valid)
                FUZZ_CHECK(utf8_valid(full, need));
        FUZZ_CHECK(!guard_has_card_number(full, need));
        FUZZ_CHECK(!guard_has_email(full, need));

        /* a short buffer (its size taken from the input, so it varies):
         * the same return value, and a prefix of the whole output, so a
         * cut never shows what the whole output hides */
        if (need > 0) {
                cut = redact_into(s, 1 + (size ? data[0] : 0) % need, &n);
                len = strlen(cut);
                FUZZ_CHECK(n == need);
                FUZZ_CHECK(len < need && memcmp(cut, full, len) == 0);
                if (valid)
                        FUZZ_CHECK(utf8_valid(cut, len));
                free(cut);
        }
        free(full);
        free(s);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
        struct intent in;

        intent_init(&in);
        intent_parse(data, size, &in);
        check_intent(&in);
        check_peek(&in, data, size);
        intent_reset(&in);
        check_redact(data, size);
        return 0;
}
