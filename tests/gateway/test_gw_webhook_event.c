/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Unit tests of gateway/webhook_event: the body of a verified webhook
 * decoded into bounded fields, and a catalogue of hostile bodies, each
 * refused with a reason that names the field and never repeats a value.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "gateway/webhook.h"
#include "gateway/webhook_event.h"
#include "util/utf8.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define PID "5d6e7f80-9a1b-4c2d-8e3f-405162738495"

static int parse(const char *body, struct gateway_event *ev, char *err,
                 size_t errsz)
{
        return gateway_event_parse(body, strlen(body), ev, err, errsz);
}

static void ok_succeeded(void **state)
{
        struct gateway_event ev;
        char err[256] = "";

        (void)state;
        assert_int_equal(
            parse("{\"type\":\"charge.succeeded\",\"data\":{\"id\":\"ch_1\","
                  "\"status\":\"succeeded\",\"amount\":1250000,"
                  "\"currency\":\"VND\",\"reference\":\"" PID "\","
                  "\"metadata\":{\"tenant_id\":\"shop-1\"},\"error\":null,"
                  "\"extra\":[1,2,{\"x\":null}]},\"more\":true}",
                  &ev, err, sizeof(err)),
            0);
        assert_int_equal(ev.type, GATEWAY_EVENT_CHARGE_SUCCEEDED);
        assert_string_equal(ev.reference, PID);
        assert_string_equal(ev.charge_id, "ch_1");
        assert_string_equal(ev.charge_status, "succeeded");
        assert_int_equal(ev.amount, 1250000);
        assert_string_equal(ev.currency, "VND");
        assert_string_equal(ev.error_code, "");
        assert_string_equal(ev.error_message, "");
        assert_string_equal(gateway_event_type_name(ev.type),
                            "charge.succeeded");
}

static void ok_failed_and_refunded(void **state)
{
        struct gateway_event ev;
        char err[256] = "";

        (void)state;
        assert_int_equal(
            parse("{\"data\":{\"id\":\"ch_2\",\"status\":\"failed\","
                  "\"amount\":9007199254740991,\"currency\":\"USD\","
                  "\"reference\":\"r\",\"error\":{\"code\":"
                  "\"card_declined\",\"message\":\"Th\\u1ebb b\xe1\xbb\x8b "
                  "t\xe1\xbb\xab ch\xe1\xbb\x91i\"}},"
                  "\"type\":\"charge.failed\"}",
                  &ev, err, sizeof(err)),
            0);
        assert_int_equal(ev.type, GATEWAY_EVENT_CHARGE_FAILED);
        assert_int_equal(ev.amount, 9007199254740991LL);
        assert_string_equal(ev.error_code, "card_declined");
        assert_string_equal(ev.error_message, "Th\xe1\xba\xbb "
                                              "b\xe1\xbb\x8b t\xe1\xbb\xab "
                                              "ch\xe1\xbb\x91i");
        /* a card number or an address in the text: redacted, not refused */
        assert_int_equal(
            parse("{\"type\":\"charge.failed\",\"data\":{\"id\":\"ch_2\","
                  "\"amount\":1,\"currency\":\"USD\",\"reference\":\"r\","
                  "\"error\":{\"code\":\"card_declined\",\"message\":"
                  "\"card 4111-1111-1111-1111 of a@b.example\"}}}",
                  &ev, err, sizeof(err)),
            0);
        assert_string_equal(ev.error_message, "card ****-****-****-1111 of "
                                              "[email]");
        /* a failed charge without data.error: "" (the store's fixed code) */
        assert_int_equal(
            parse("{\"type\":\"charge.failed\",\"data\":{\"id\":\"ch_2\","
                  "\"amount\":1,\"currency\":\"USD\",\"reference\":\"r\"}}",
                  &ev, err, sizeof(err)),
            0);
        assert_string_equal(ev.error_code, "");
        assert_string_equal(ev.charge_status, "");
        /* a refund: status succeeded or refunded */
        assert_int_equal(
            parse("{\"type\":\"charge.refunded\",\"data\":{\"id\":\"ch_3\","
                  "\"status\":\"refunded\",\"amount\":5,\"currency\":"
                  "\"EUR\",\"reference\":\"r\"}}",
                  &ev, err, sizeof(err)),
            0);
        assert_int_equal(ev.type, GATEWAY_EVENT_CHARGE_REFUNDED);
        assert_string_equal(ev.charge_status, "refunded");
        /* data.error of a succeeded event is not read */
        assert_int_equal(
            parse("{\"type\":\"charge.succeeded\",\"data\":{\"id\":\"c\","
                  "\"amount\":5,\"currency\":\"EUR\",\"reference\":\"r\","
                  "\"error\":7}}",
                  &ev, err, sizeof(err)),
            0);
}

/* The longest allowed reference / charge id / code pass; one more fails. */
static void bounds(void **state)
{
        char body[2048], ref[80], id[300], code[80], err[256];
        struct gateway_event ev;

        (void)state;
        for (int extra = 0; extra <= 1; extra++) {
                memset(ref, 'r', sizeof(ref));
                ref[GATEWAY_EVENT_REFERENCE_MAX + extra] = '\0';
                memset(id, 'i', sizeof(id));
                id[GATEWAY_EVENT_CHARGE_ID_MAX] = '\0';
                memset(code, 'c', sizeof(code));
                code[GATEWAY_EVENT_CODE_MAX] = '\0';
                snprintf(body, sizeof(body),
                         "{\"type\":\"charge.failed\",\"data\":{\"id\":\"%s\","
                         "\"amount\":1,\"currency\":\"USD\",\"reference\":"
                         "\"%s\",\"error\":{\"code\":\"%s\","
                         "\"message\":\"m\"}}}",
                         id, ref, code);
                assert_int_equal(parse(body, &ev, err, sizeof(err)),
                                 extra ? -1 : 0);
                if (extra) {
                        assert_string_equal(err, "data.reference: too long");
                        continue;
                }
                assert_int_equal(strlen(ev.reference),
                                 GATEWAY_EVENT_REFERENCE_MAX);
                assert_int_equal(strlen(ev.charge_id),
                                 GATEWAY_EVENT_CHARGE_ID_MAX);
                assert_int_equal(strlen(ev.error_code), GATEWAY_EVENT_CODE_MAX);
        }
}

/* An over-long message is cut on a code point boundary, not refused. */
static void message_cut(void **state)
{
        size_t n   = 2000, hdr;
        char *body = malloc(n * 3 + 512);
        struct gateway_event ev;
        char err[256];

        (void)state;
        hdr = (size_t)sprintf(body, "{\"type\":\"charge.failed\",\"data\":{"
                                    "\"id\":\"c\",\"amount\":1,\"currency\":"
                                    "\"VND\",\"reference\":\"r\",\"error\":{"
                                    "\"code\":\"x\",\"message\":\"a");
        /* "a" then 3-byte characters: 1024 falls inside one of them */
        for (size_t i = 0; i < n; i++)
                memcpy(body + hdr + i * 3, "\xe1\xba\xbb", 3);
        strcpy(body + hdr + n * 3, "\"}}}");
        assert_int_equal(
            gateway_event_parse(body, strlen(body), &ev, err, sizeof(err)), 0);
        assert_int_equal(strlen(ev.error_message), 1 + 341 * 3);
        assert_true(utf8_valid(ev.error_message, strlen(ev.error_message)));
        free(body);
}

/* A decline text cut inside a character (the simulator's
 * decline_message_invalid_utf8) is kept, cleaned to U+FFFD; the event is
 * not refused (a PSP would retry a 400 forever). */
static void failed_message_invalid_utf8_cleaned(void **state)
{
        static const char body[] =
            "{\"type\":\"charge.failed\",\"data\":{\"id\":\"ch_1\","
            "\"status\":\"failed\",\"amount\":5,\"currency\":\"VND\","
            "\"reference\":\"r\",\"error\":{\"code\":\"card_declined\","
            "\"message\":\"Th\xe1\xba\"}}}";
        struct gateway_event ev;
        char err[256];

        (void)state;
        assert_int_equal(
            gateway_event_parse(body, sizeof(body) - 1, &ev, err, sizeof(err)),
            0);
        assert_int_equal(ev.type, GATEWAY_EVENT_CHARGE_FAILED);
        assert_string_equal(ev.error_code, "card_declined");
        /* utf8_clean: one U+FFFD per byte of the cut sequence */
        assert_string_equal(ev.error_message, "Th\xef\xbf\xbd\xef\xbf\xbd");
        assert_string_equal(ev.charge_id, "ch_1");
}

struct hostile {
        const char *body;
        const char *reason; /* exact errstr, or prefix when ending in '*' */
};

static const struct hostile hostile_bodies[] = {
        { "", "body: empty" },
        { "null", "body: not a JSON object" },
        { "[]", "body: not a JSON object" },
        { "\"charge.succeeded\"", "body: not a JSON object" },
        { "{\"type\":\"charge.succeeded\",\"data\":{}} trailing",
          "body: not one JSON document*" },
        { "{\"type\":\"charge.succeeded\",\"type\":\"charge.failed\","
          "\"data\":{}}",
          "body: not one JSON document*" },
        { "{\"type\":\"charge.succeeded\",\"data\":{\"id\":\"a\","
          "\"id\":\"b\"}}",
          "body: not one JSON document*" },
        /* invalid UTF-8 is cleaned to U+FFFD, which no identifier holds */
        { "{\"type\":\"charge.succeeded\",\"data\":{\"id\":\"\xff\"}}",
          "data.id: holds U+FFFD (invalid UTF-8)" },
        { "{\"type\":\"charge.succeeded\",\"data\":{\"id\":\"\xed\xa0\x80\"}}",
          "data.id: holds U+FFFD (invalid UTF-8)" },
        { "{\"type\":\"charge.succeeded\",\"data\":{\"id\":\"c\","
          "\"reference\":\"r\xc3\"}}",
          "data.reference: holds U+FFFD (invalid UTF-8)" },
        { "{\"type\":\"charge.succeeded\xff\",\"data\":{}}",
          "type: not charge.succeeded, charge.failed or charge.refunded" },
        { "{\"type\":\"charge.succeeded\",\"data\":{\"id\":\"\\ud800\"}}",
          "body: not one JSON document*" },
        { "{\"data\":{}}", "type: missing" },
        { "{\"type\":1,\"data\":{}}", "type: not a string" },
        { "{\"type\":\"charge.captured\",\"data\":{}}",
          "type: not charge.succeeded, charge.failed or charge.refunded" },
        { "{\"type\":\"charge.succeeded\\u0000x\",\"data\":{}}",
          "type: holds a NUL" },
        { "{\"type\":\"Charge.Succeeded\",\"data\":{}}",
          "type: not charge.succeeded, charge.failed or charge.refunded" },
        { "{\"type\":\"charge.succeeded\"}", "data: missing" },
        { "{\"type\":\"charge.succeeded\",\"data\":[]}",
          "data: not an object" },
        { "{\"type\":\"charge.succeeded\",\"data\":{\"amount\":1}}",
          "data.id: missing" },
        { "{\"type\":\"charge.succeeded\",\"data\":{\"id\":\"\"}}",
          "data.id: empty" },
        { "{\"type\":\"charge.succeeded\",\"data\":{\"id\":null}}",
          "data.id: not a string" },
        { "{\"type\":\"charge.succeeded\",\"data\":{\"id\":\"c\\u0000h\"}}",
          "data.id: holds a NUL" },
        { "{\"type\":\"charge.succeeded\",\"data\":{\"id\":\"c\"}}",
          "data.reference: missing" },
        { "{\"type\":\"charge.succeeded\",\"data\":{\"id\":\"c\","
          "\"reference\":\"r\"}}",
          "data.amount: missing" },
        { "{\"type\":\"charge.succeeded\",\"data\":{\"id\":\"c\","
          "\"reference\":\"r\",\"amount\":0}}",
          "data.amount: not an integer in 1..2^53-1" },
        { "{\"type\":\"charge.succeeded\",\"data\":{\"id\":\"c\","
          "\"reference\":\"r\",\"amount\":-5}}",
          "data.amount: not an integer in 1..2^53-1" },
        { "{\"type\":\"charge.succeeded\",\"data\":{\"id\":\"c\","
          "\"reference\":\"r\",\"amount\":9007199254740992}}",
          "data.amount: not an integer in 1..2^53-1" },
        { "{\"type\":\"charge.succeeded\",\"data\":{\"id\":\"c\","
          "\"reference\":\"r\",\"amount\":1.0}}",
          "data.amount: not an integer in 1..2^53-1" },
        { "{\"type\":\"charge.succeeded\",\"data\":{\"id\":\"c\","
          "\"reference\":\"r\",\"amount\":\"100\"}}",
          "data.amount: not an integer in 1..2^53-1" },
        { "{\"type\":\"charge.succeeded\",\"data\":{\"id\":\"c\","
          "\"reference\":\"r\",\"amount\":99999999999999999999999}}",
          "body: not one JSON document*" },
        { "{\"type\":\"charge.succeeded\",\"data\":{\"id\":\"c\","
          "\"reference\":\"r\",\"amount\":1}}",
          "data.currency: missing" },
        { "{\"type\":\"charge.succeeded\",\"data\":{\"id\":\"c\","
          "\"reference\":\"r\",\"amount\":1,\"currency\":\"vnd\"}}",
          "data.currency: not three upper-case letters" },
        { "{\"type\":\"charge.succeeded\",\"data\":{\"id\":\"c\","
          "\"reference\":\"r\",\"amount\":1,\"currency\":\"VNDX\"}}",
          "data.currency: not three upper-case letters" },
        { "{\"type\":\"charge.succeeded\",\"data\":{\"id\":\"c\","
          "\"reference\":\"r\",\"amount\":1,\"currency\":\"V\\u0000D\"}}",
          "data.currency: holds a NUL" },
        { "{\"type\":\"charge.succeeded\",\"data\":{\"id\":\"c\","
          "\"reference\":\"r\",\"amount\":1,\"currency\":\"VND\","
          "\"status\":\"failed\"}}",
          "data.status: does not agree with the type" },
        { "{\"type\":\"charge.failed\",\"data\":{\"id\":\"c\","
          "\"reference\":\"r\",\"amount\":1,\"currency\":\"VND\","
          "\"status\":\"succeeded\"}}",
          "data.status: does not agree with the type" },
        { "{\"type\":\"charge.succeeded\",\"data\":{\"id\":\"c\","
          "\"reference\":\"r\",\"amount\":1,\"currency\":\"VND\","
          "\"status\":\"refunded\"}}",
          "data.status: does not agree with the type" },
        { "{\"type\":\"charge.succeeded\",\"data\":{\"id\":\"c\","
          "\"reference\":\"r\",\"amount\":1,\"currency\":\"VND\","
          "\"status\":null}}",
          "data.status: not a string" },
        { "{\"type\":\"charge.failed\",\"data\":{\"id\":\"c\","
          "\"reference\":\"r\",\"amount\":1,\"currency\":\"VND\","
          "\"error\":\"card_declined\"}}",
          "data.error: not an object or null" },
        { "{\"type\":\"charge.failed\",\"data\":{\"id\":\"c\","
          "\"reference\":\"r\",\"amount\":1,\"currency\":\"VND\","
          "\"error\":{\"message\":\"m\"}}}",
          "data.error.code: missing" },
        { "{\"type\":\"charge.failed\",\"data\":{\"id\":\"c\","
          "\"reference\":\"r\",\"amount\":1,\"currency\":\"VND\","
          "\"error\":{\"code\":\"x\",\"message\":\"a\\u0000b\"}}}",
          "data.error.message: holds a NUL" },
        { "{\"type\":\"charge.failed\",\"data\":{\"id\":\"c\","
          "\"reference\":\"r\",\"amount\":1,\"currency\":\"VND\","
          "\"error\":{\"code\":\"x\",\"message\":5}}}",
          "data.error.message: not a string" },
};

static void hostile(void **state)
{
        (void)state;
        for (size_t i = 0;
             i < sizeof(hostile_bodies) / sizeof(hostile_bodies[0]); i++) {
                const struct hostile *h = &hostile_bodies[i];
                struct gateway_event ev, zero;
                char err[256] = "";
                size_t rl     = strlen(h->reason);

                memset(&zero, 0, sizeof(zero));
                memset(&ev, 0x5a, sizeof(ev));
                if (parse(h->body, &ev, err, sizeof(err)) != -1)
                        fail_msg("accepted hostile body %zu", i);
                if (h->reason[rl - 1] == '*'
                        ? strncmp(err, h->reason, rl - 1) != 0
                        : strcmp(err, h->reason) != 0)
                        fail_msg("body %zu: reason \"%s\", want \"%s\"", i, err,
                                 h->reason);
                assert_memory_equal(&ev, &zero, sizeof(ev));
        }
}

/* Deep nesting, a body over the cap, a raw NUL and a NULL body. */
static void limits(void **state)
{
        size_t depth = 30000;
        char *deep   = malloc(depth * 2 + 64);
        struct gateway_event ev;
        char err[256];

        (void)state;
        memcpy(deep, "{\"type\":\"charge.succeeded\",\"x\":", 32);
        memset(deep + 32, '[', depth);
        memset(deep + 32 + depth, ']', depth);
        strcpy(deep + 32 + 2 * depth, "}");
        assert_int_equal(parse(deep, &ev, err, sizeof(err)), -1);
        free(deep);

        deep = malloc(GATEWAY_WEBHOOK_BODY_MAX + 1);
        memset(deep, ' ', GATEWAY_WEBHOOK_BODY_MAX + 1);
        assert_int_equal(gateway_event_parse(deep, GATEWAY_WEBHOOK_BODY_MAX + 1,
                                             &ev, err, sizeof(err)),
                         -1);
        assert_string_equal(err, "body: over the body limit");
        free(deep);

        assert_int_equal(
            gateway_event_parse("{\"type\"\0:1}", 11, &ev, err, sizeof(err)),
            -1);
        assert_int_equal(gateway_event_parse(NULL, 0, &ev, err, sizeof(err)),
                         -1);
        assert_string_equal(err, "body: empty");
        /* a small errstr is cut, never overrun */
        assert_int_equal(gateway_event_parse("[]", 2, &ev, err, 5), -1);
        assert_string_equal(err, "body");
}

/* A reason never repeats a value of the body. */
static void reason_has_no_value(void **state)
{
        const char *secretish = "SECRET-VALUE-42";
        char body[512], err[256];
        struct gateway_event ev;

        (void)state;
        snprintf(body, sizeof(body),
                 "{\"type\":\"charge.succeeded\",\"data\":{\"id\":\"c\","
                 "\"reference\":\"r\",\"amount\":1,\"currency\":\"%s\"}}",
                 secretish);
        assert_int_equal(parse(body, &ev, err, sizeof(err)), -1);
        assert_null(strstr(err, secretish));
        snprintf(body, sizeof(body), "{\"type\":\"%s\"}", secretish);
        assert_int_equal(parse(body, &ev, err, sizeof(err)), -1);
        assert_null(strstr(err, secretish));
        snprintf(body, sizeof(body), "{\"%s\" x}", secretish);
        assert_int_equal(parse(body, &ev, err, sizeof(err)), -1);
        assert_null(strstr(err, "SECRET"));
}

int main(void)
{
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(ok_succeeded),
                cmocka_unit_test(ok_failed_and_refunded),
                cmocka_unit_test(bounds),
                cmocka_unit_test(message_cut),
                cmocka_unit_test(failed_message_invalid_utf8_cleaned),
                cmocka_unit_test(hostile),
                cmocka_unit_test(limits),
                cmocka_unit_test(reason_has_no_value),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
