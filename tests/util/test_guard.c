/* SPDX-License-Identifier: Apache-2.0 */
/*
 * test_guard: card-number and e-mail detection, and redaction that never
 * lets a raw card number or e-mail address through.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "util/guard.h"

static bool card(const char *s)
{
        return guard_has_card_number(s, strlen(s));
}

static bool email(const char *s)
{
        return guard_has_email(s, strlen(s));
}

static void test_luhn_lengths(void **state)
{
        (void)state;
        assert_true(card("4222222222222"));       /* 13 */
        assert_true(card("30569309025904"));      /* 14 */
        assert_true(card("378282246310005"));     /* 15 */
        assert_true(card("4111111111111111"));    /* 16 */
        assert_true(card("5555555555554444"));    /* 16 */
        assert_true(card("6304000000000000000")); /* 19 */
}

static void test_luhn_negative(void **state)
{
        (void)state;
        assert_false(card("4111111111111112"));     /* checksum */
        assert_false(card("378282246310006"));      /* checksum */
        assert_false(card("411111111117"));         /* 12 digits, Luhn ok */
        assert_false(card("41111111111111111115")); /* 20 digits */
        assert_false(card("4111--1111-1111-1111")); /* double separator */
        assert_false(card("4111 _1111 1111 1111"));
        assert_false(card("4111..1111.1111.1111"));
        assert_false(card("4111__1111_1111_1111"));
        assert_false(card("4111._1111.1111.1111"));
        assert_false(card("4111/1111/1111/1111"));   /* not a separator */
        assert_false(card("4111.1111.1111.1112"));   /* checksum */
        assert_false(card("411.111.111.111.111.1")); /* not fours */
        assert_false(card("1.2.3.4 10.0.0.1 2026.11.29 v1.2.3"));
        assert_false(card(""));
        assert_false(card("ord-10063-pay-1"));
        assert_false(card("2026-11-29T10:47:03Z"));
        assert_false(card("6f1c2a8e-3b4d-4e5f-9a0b-1c2d3e4f5a6b"));
}

static void test_separated_and_embedded(void **state)
{
        (void)state;
        assert_true(card("4111 1111 1111 1111"));
        assert_true(card("4111-1111-1111-1111"));
        assert_true(card("3782 822463 10005"));
        assert_true(card("key-4111111111111111"));
        assert_true(card("x4111111111111111y"));
        assert_true(card("2024-4111111111111111")); /* a group inside */
        assert_true(card("12 4111 1111 1111 1111 z"));
        assert_true(card("pay 4111-1111 1111-1111 now"));
}

/* Spaces, dashes, dots and underscores between groups; mixed too. */
static void test_separators(void **state)
{
        static const char *const seps = " -._";

        (void)state;
        for (const char *p = seps; *p; p++) {
                char visa[32], amex[32], amex4[32], in[64];
                char c = *p;

                snprintf(visa, sizeof(visa), "4111%c1111%c1111%c1111", c, c, c);
                snprintf(amex, sizeof(amex), "3782%c822463%c10005", c, c);
                snprintf(amex4, sizeof(amex4), "3056%c930902%c5904", c, c);
                assert_true(card(visa));
                assert_true(card(amex));
                assert_true(card(amex4)); /* Diners 4-6-4 */
                snprintf(in, sizeof(in), "pay %s now", visa);
                assert_true(card(in));
                snprintf(in, sizeof(in), "ord_%s_x", amex);
                assert_true(card(in));
                snprintf(in, sizeof(in), "%s%c12%c26", visa, c, c);
                assert_true(card(in)); /* followed by its expiry date */
                /* four groups of four with a wrong checksum: no card */
                snprintf(in, sizeof(in), "4111%c1111%c1111%c1112", c, c, c);
                assert_false(card(in));
                /* not how cards are grouped: 8-8, 4-4-8 */
                snprintf(in, sizeof(in), "41111111%c11111111", c);
                assert_false(card(in));
                snprintf(in, sizeof(in), "4111%c1111%c11111111", c, c);
                assert_false(card(in));
        }
        assert_true(card("4111.1111_1111-1111"));
        assert_true(card("4111 1111.1111_1111"));
}

/*
 * UUID v4 keys (what clients are told to use) are never card numbers, even
 * when digit-only groups chain into a Luhn-valid run of 16: 12345678-1234-
 * 4129 gives 1234567812344129, which passes Luhn. A card number's groups
 * are fours (or 4-6-5 / 4-6-4), never 8-4-4.
 */
static void test_uuid_keys_are_not_cards(void **state)
{
        uint64_t x = 0x9e3779b97f4a7c15ULL;
        char u[37];
        static const char hex[] = "0123456789abcdef";

        (void)state;
        assert_false(card("12345678-1234-4129-8123-123456789012"));
        assert_false(card("12345678-1234-4129"));
        assert_false(card("12345678.1234.4129.8123.123456789012"));
        assert_false(card("12345678_1234_4129_8123_123456789012"));
        assert_false(card("12345678 1234 4129 8123 123456789012"));
        /* and the guard still finds what it must */
        assert_true(card("card 4111 1111 1111 1111 12/26"));
        assert_true(card("x4111-1111-1111-1111y"));
        for (int n = 0; n < 200000; n++) {
                for (int i = 0; i < 36; i++) {
                        x ^= x << 13;
                        x ^= x >> 7;
                        x ^= x << 17;
                        /* digits far more often than in real UUIDs, to
                         * make all-digit groups common */
                        u[i] = (x & 7) ? (char)('0' + (x >> 8) % 10)
                                       : hex[(x >> 8) & 15];
                }
                u[8] = u[13] = u[18] = u[23] = '-';
                u[14]                        = '4';
                u[19]                        = "89ab"[(x >> 20) & 3];
                u[36]                        = '\0';
                /* the same groups with each separator the guard knows */
                for (const char *sep = "-._ "; *sep; sep++) {
                        u[8] = u[13] = u[18] = u[23] = *sep;
                        if (card(u))
                                fail_msg("a UUID taken for a card number: %s",
                                         u);
                }
        }
}

static void test_emails(void **state)
{
        (void)state;
        assert_true(email("bob@example.com"));
        assert_true(email("key-bob.smith+tag@mail.example.co.uk-1"));
        assert_true(email("a@b.co"));
        assert_true(email("bob@example.com-4111"));
        assert_true(email("\xc3\xbc@ex\xc3\xa4mple.de"));
        assert_false(email("a@b.c"));
        assert_false(email("a@localhost"));
        assert_false(email("@example.com"));
        assert_false(email("a@.com"));
        assert_false(email("x@@y"));
        assert_false(email("ord-10063@1"));
        assert_false(email("no at sign.com"));
}

/* Redacts s and checks that the output equals want. */
static void redacts_to(const char *s, const char *want)
{
        char out[256];
        size_t n = guard_redact(s, out, sizeof(out));

        assert_string_equal(out, want);
        assert_int_equal(n, strlen(want));
}

static void test_redact(void **state)
{
        (void)state;
        redacts_to("", "");
        redacts_to("ord-10063-pay-1", "ord-10063-pay-1");
        redacts_to("4111111111111111", "************1111");
        redacts_to("4111 1111 1111 1111", "**** **** **** 1111");
        redacts_to("k-4111-1111-1111-1111-x", "k-****-****-****-1111-x");
        redacts_to("k.4111.1111.1111.1111.x", "k.****.****.****.1111.x");
        redacts_to("k_4111_1111_1111_1111_x", "k_****_****_****_1111_x");
        redacts_to("3782.822463.10005", "****.******.*0005");
        redacts_to("3782_822463_10005 and 4111 1111.1111-1111",
                   "****_******_*0005 and **** ****.****-1111");
        redacts_to("4111111111111112", "4111111111111112");
        redacts_to("bob@example.com", "[email]");
        redacts_to("to bob@example.com.", "to [email].");
        redacts_to("a@b.co and 378282246310005", "[email] and ***********0005");
        redacts_to("4111111111111111@x.com", "[email]");
        redacts_to("x 4111 1111 1111 1111@a.co", "x **** **** **** [email]");
        redacts_to("bob@example.com-4111111111111111",
                   "[email]-************1111");
        redacts_to("\xc4\x91\xc6\xa1n 4111111111111111",
                   "\xc4\x91\xc6\xa1n ************1111");
}

static void test_redact_truncation(void **state)
{
        char out[8];
        size_t n;

        (void)state;
        /* A cut never shows more than the mask does. */
        n = guard_redact("4111111111111111", out, sizeof(out));
        assert_int_equal(n, 16);
        assert_string_equal(out, "*******");
        n = guard_redact("ab bob@example.com", out, sizeof(out));
        assert_int_equal(n, 10);
        assert_string_equal(out, "ab ");
        /* Never cuts inside a UTF-8 character. */
        n = guard_redact("abcdef\xc4\x91", out, sizeof(out));
        assert_int_equal(n, 8);
        assert_string_equal(out, "abcdef");
        n = guard_redact("abc", NULL, 0);
        assert_int_equal(n, 3);
        n = guard_redact("abc", out, 1);
        assert_string_equal(out, "");
}

/* The raw digits and the address never survive, whatever surrounds them. */
static void test_redact_never_leaks(void **state)
{
        static const char *const wraps[][2] = {
                { "", "" },   { "k-", "" },   { "", "-k" },    { "a ", " b" },
                { "x", "y" }, { "1 ", " 2" }, { "", "@a.co" }, { "b@", "" },
        };
        static const char *const secrets[] = {
                "4111111111111111",    "4111 1111 1111 1111",
                "4111-1111-1111-1111", "378282246310005",
                "4111.1111.1111.1111", "4111_1111_1111_1111",
                "3782 822463 10005",   "3782.822463.10005",
                "3782_822463_10005",   "3782-822463-10005",
                "6304000000000000000", "bob@example.com"
        };
        (void)state;
        for (size_t w = 0; w < sizeof(wraps) / sizeof(wraps[0]); w++) {
                for (size_t i = 0; i < sizeof(secrets) / sizeof(secrets[0]);
                     i++) {
                        char in[128] = "", out[256], digits[32];
                        size_t nd    = 0;

                        strcat(in, wraps[w][0]);
                        strcat(in, secrets[i]);
                        strcat(in, wraps[w][1]);
                        (void)guard_redact(in, out, sizeof(out));
                        assert_null(strstr(out, secrets[i]));
                        assert_null(strstr(out, "41111111"));
                        /* not even a card's first group survives */
                        for (const char *q = secrets[i]; *q && nd < 4; q++)
                                if (*q >= '0' && *q <= '9')
                                        digits[nd++] = *q;
                        digits[nd] = '\0';
                        if (nd > 0)
                                assert_null(strstr(out, digits));
                        assert_null(strstr(out, "bob@"));
                        assert_false(guard_has_card_number(out, strlen(out)));
                        assert_false(guard_has_email(out, strlen(out)));
                }
        }
}

/*
 * Work per input byte that a linear scan stays under on every input below;
 * the most any of them needs is printed. A quadratic scan would need about
 * n / (pattern length) times more on 1 MB, thousands of times this bound.
 */
#define STEPS_PER_BYTE 16
/* Redaction is up to three passes, each followed by both searches on its
 * output (guard_redact in guard.h): a constant factor, still linear. */
#define REDACT_STEPS_PER_BYTE (4 * STEPS_PER_BYTE)

/* 1 MB (plus the tail) of `pattern` repeated, then `tail`. */
static char *repeat(const char *pattern, const char *tail)
{
        size_t pl = strlen(pattern), tl = strlen(tail), n = 0;
        size_t size = (1u << 20) + pl + tl + 1;
        char *s     = malloc(size);

        assert_non_null(s);
        while (n + pl <= (1u << 20)) {
                memcpy(s + n, pattern, pl);
                n += pl;
        }
        memcpy(s + n, tail, tl + 1);
        return s;
}

/*
 * The guard's three scans on adversarial 1 MB inputs: many cards and no
 * e-mail, many e-mails and no card, runs of '@', long local parts and
 * domains, digit runs with every separator. Counted, not timed: the step
 * counter of guard.c counts every character examined.
 */
static void test_linear(void **state)
{
        static const struct {
                const char *pattern, *tail;
        } inputs[] = {
                { "4111 1111 1111 1111 ", "" },
                { "4111111111111111-", "" },
                { "x4111.1111.1111.1111_", "" },
                { "3782_822463_10005 ", "" },
                { "bob@example.com ", "" },
                { "a@b.co,", "" },
                { "a@", "" },
                { "@", "a.co" },
                { "a.", "@" },
                { "a.", "@b.co" },
                { ".a", "" },
                { "a@b.co.x", "" },
                { "bob@example.com4111111111111111 ", "" },
                { "4111111111111111@a.co ", "" },
                { "1-", "1" },
                { "1 ", "1" },
                { "1.", "1" },
                { "1_", "1" },
                { "4444-", "4" },
                { "4444.4444.", "x" },
                { "4111.1111.1111.1112.", "" },
                { "1111", "" },
                { "0", "@a.co" },
                { "12345678-1234-4129-8123-123456789012 ", "" },
                { "\xc4\x91", "" },
                { "\x80", "" },
        };
        size_t worst    = 0;
        const char *who = "";

        (void)state;
        for (size_t i = 0; i < sizeof(inputs) / sizeof(inputs[0]); i++) {
                char *s   = repeat(inputs[i].pattern, inputs[i].tail);
                size_t n  = strlen(s);
                char *out = malloc(2 * n + 16);
                size_t steps[3], need;
                unsigned long long t;

                assert_non_null(out);
                t = guard_steps_count();
                (void)guard_has_card_number(s, n);
                steps[0] = (size_t)(guard_steps_count() - t);
                t        = guard_steps_count();
                (void)guard_has_email(s, n);
                steps[1] = (size_t)(guard_steps_count() - t);
                t        = guard_steps_count();
                need     = guard_redact(s, out, 2 * n + 16);
                steps[2] = (size_t)(guard_steps_count() - t);
                assert_int_equal(strlen(out), need);
                for (int k = 0; k < 3; k++) {
                        /* redaction reads every byte: the count is real */
                        if (k == 2)
                                assert_true(steps[k] >= n);
                        if (steps[k] >
                            (k == 2 ? REDACT_STEPS_PER_BYTE : STEPS_PER_BYTE) *
                                n)
                                fail_msg("%s on \"%s\"...: %zu steps for "
                                         "%zu bytes",
                                         k == 0   ? "has_card"
                                         : k == 1 ? "has_email"
                                                  : "redact",
                                         inputs[i].pattern, steps[k], n);
                        if (steps[k] / (n / 1000) > worst) {
                                worst = steps[k] / (n / 1000);
                                who   = inputs[i].pattern;
                        }
                }
                free(out);
                free(s);
        }
        print_message("most work: %zu.%03zu steps per byte (\"%s\")\n",
                      worst / 1000, worst % 1000, who);
}

/* A second card starting in the four digits a card keeps, and digits
 * that stand alone once the address before them is "[email]", are
 * redacted too (found by fuzz_intent; corpus/intent/guard-*). */
static void test_redact_again(void **state)
{
        static const char *const in[] = {
                "5556-5555-5555 5556-5555-5555-5556",
                "x@ex.cafe4111 1111 1111 1111",
                "4111111111111111 1111 1111 1111 1111",
        };
        char out[128];

        (void)state;
        for (size_t i = 0; i < sizeof(in) / sizeof(*in); i++) {
                size_t n = guard_redact(in[i], out, sizeof(out));

                assert_int_equal(strlen(out), n);
                assert_false(guard_has_card_number(out, n));
                assert_false(guard_has_email(out, n));
        }
        (void)guard_redact("x@ex.cafe4111 1111 1111 1111", out, sizeof(out));
        assert_string_equal(out, "[email]**** **** **** 1111");
}

int main(void)
{
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_redact_again),
                cmocka_unit_test(test_luhn_lengths),
                cmocka_unit_test(test_luhn_negative),
                cmocka_unit_test(test_separated_and_embedded),
                cmocka_unit_test(test_separators),
                cmocka_unit_test(test_uuid_keys_are_not_cards),
                cmocka_unit_test(test_emails),
                cmocka_unit_test(test_redact),
                cmocka_unit_test(test_redact_truncation),
                cmocka_unit_test(test_redact_never_leaks),
                cmocka_unit_test(test_linear),
        };

        return cmocka_run_group_tests(tests, NULL, NULL);
}
