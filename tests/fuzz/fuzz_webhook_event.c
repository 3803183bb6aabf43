/* SPDX-License-Identifier: Apache-2.0 */
/*
 * fuzz_webhook_event: gateway_event_parse() on any body
 * (src/gateway/webhook_event.h).
 *
 * Invariants, for every input:
 *   - it returns 0 or -1; on -1 the event is all zero and the reason is a
 *     non-empty C string;
 *   - on 0 the type is one of the three, every string is NUL-terminated
 *     within its bound, valid UTF-8 and non-empty where required, the
 *     amount is in 1..2^53-1, the currency three upper-case letters, the
 *     status "" or one that agrees with the type, and an error only on a
 *     charge.failed;
 *   - when the body holds no escape ('\\'), each decoded string is a run
 *     of the body's bytes (never invented) — the error message only when
 *     nothing in it can have been cleaned or redacted (no card number or
 *     e-mail address in the whole body, no control character, no '*' in
 *     the message);
 *   - the error message holds no card number and no e-mail address;
 *   - parsing again gives the same bytes and the same reason.
 */
#include <stdbool.h>
#include <string.h>

#include "fuzz.h"
#include "gateway/webhook_event.h"
#include "util/guard.h"
#include "util/utf8.h"

static void check_str(const char *s, size_t cap, bool nonempty)
{
        size_t n = strnlen(s, cap);

        FUZZ_CHECK(n < cap);
        FUZZ_CHECK(!nonempty || n > 0);
        FUZZ_CHECK(utf8_valid(s, n));
}

static void check_in_body(const char *s, const uint8_t *data, size_t size)
{
        size_t n = strlen(s);

        if (n)
                FUZZ_CHECK(memmem(data, size, s, n) != NULL);
}

/* Whether s[0..n) holds a character gateway_text_clean() replaces by a
 * space (DEL, C1, U+2028/9, bidi controls; C0 cannot be raw in JSON). */
static bool has_text_control(const uint8_t *s, size_t n)
{
        for (size_t i = 0; i < n; i++) {
                if (s[i] == 0x7F || s[i] < 0x20)
                        return true;
                if (i + 1 < n && s[i] == 0xC2 && s[i + 1] >= 0x80 &&
                    s[i + 1] <= 0x9F)
                        return true;
                if (i + 2 < n && s[i] == 0xE2 &&
                    (s[i + 1] == 0x80 || s[i + 1] == 0x81))
                        return true;
        }
        return false;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
        struct gateway_event ev, ev2, zero;
        char err[256], err2[256];
        int rc, rc2;

        memset(&zero, 0, sizeof(zero));
        rc  = gateway_event_parse(data, size, &ev, err, sizeof(err));
        rc2 = gateway_event_parse(data, size, &ev2, err2, sizeof(err2));
        FUZZ_CHECK(rc == 0 || rc == -1);
        FUZZ_CHECK(rc == rc2);
        FUZZ_CHECK(memcmp(&ev, &ev2, sizeof(ev)) == 0);
        if (rc != 0) {
                FUZZ_CHECK(memcmp(&ev, &zero, sizeof(ev)) == 0);
                FUZZ_CHECK(strnlen(err, sizeof(err)) > 0);
                FUZZ_CHECK(strcmp(err, err2) == 0);
                return 0;
        }
        FUZZ_CHECK(gateway_event_type_name(ev.type) != NULL);
        check_str(ev.reference, sizeof(ev.reference), true);
        check_str(ev.charge_id, sizeof(ev.charge_id), true);
        check_str(ev.error_code, sizeof(ev.error_code), false);
        check_str(ev.error_message, sizeof(ev.error_message), false);
        check_str(ev.charge_status, sizeof(ev.charge_status), false);
        FUZZ_CHECK(ev.amount >= 1 && ev.amount <= 9007199254740991LL);
        FUZZ_CHECK(strlen(ev.currency) == 3);
        for (int i = 0; i < 3; i++)
                FUZZ_CHECK(ev.currency[i] >= 'A' && ev.currency[i] <= 'Z');
        switch (ev.type) {
        case GATEWAY_EVENT_CHARGE_SUCCEEDED:
                FUZZ_CHECK(!*ev.charge_status ||
                           !strcmp(ev.charge_status, "succeeded"));
                break;
        case GATEWAY_EVENT_CHARGE_FAILED:
                FUZZ_CHECK(!*ev.charge_status ||
                           !strcmp(ev.charge_status, "failed"));
                break;
        case GATEWAY_EVENT_CHARGE_REFUNDED:
                FUZZ_CHECK(!*ev.charge_status ||
                           !strcmp(ev.charge_status, "succeeded") ||
                           !strcmp(ev.charge_status, "refunded"));
                break;
        }
        if (ev.type != GATEWAY_EVENT_CHARGE_FAILED)
                FUZZ_CHECK(!*ev.error_code && !*ev.error_message);
        FUZZ_CHECK(*ev.error_code || !*ev.error_message);
        if (memchr(data, '\\', size) == NULL) {
                check_in_body(ev.reference, data, size);
                check_in_body(ev.charge_id, data, size);
                check_in_body(ev.error_code, data, size);
                check_in_body(ev.currency, data, size);
                /* a body that was not valid UTF-8 was cleaned first: the
                 * message may hold U+FFFD the body does not; and a message
                 * may have been cleaned or redacted */
                if (utf8_valid((const char *)data, size) &&
                    !guard_has_card_number((const char *)data, size) &&
                    !guard_has_email((const char *)data, size) &&
                    !has_text_control(data, size) &&
                    !strchr(ev.error_message, '*'))
                        check_in_body(ev.error_message, data, size);
        }
        FUZZ_CHECK(
            !guard_has_card_number(ev.error_message, strlen(ev.error_message)));
        FUZZ_CHECK(
            !guard_has_email(ev.error_message, strlen(ev.error_message)));
        /* identifiers are never taken from a damaged body */
        FUZZ_CHECK(!strstr(ev.reference, "\xEF\xBF\xBD") &&
                   !strstr(ev.charge_id, "\xEF\xBF\xBD") &&
                   !strstr(ev.error_code, "\xEF\xBF\xBD"));
        return 0;
}
