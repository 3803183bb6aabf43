/* SPDX-License-Identifier: Apache-2.0 */
/* Unit tests of util/utf8: validation, cleaning and cutting. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdlib.h>
#include <string.h>

#include "util/utf8.h"

/* Cases from RFC 3629 and Markus Kuhn's UTF-8 stress test. */
static void test_valid(void **state)
{
        static const struct {
                const char *s;
                size_t len;
                bool ok;
        } cases[] = {
                { "", 0, true },
                { "abc", 3, true },
                { "\0", 1, true },
                { "Thanh to\xC3\xA1n b\xE1\xBB\x8B t\xE1\xBB\xAB "
                  "ch\xE1\xBB\x91i",
                  29, true },
                { "\xF0\x9F\x92\xB3", 4, true },  /* U+1F4B3 */
                { "\xF4\x8F\xBF\xBF", 4, true },  /* U+10FFFF */
                { "\xF4\x90\x80\x80", 4, false }, /* U+110000 */
                { "\xC0\xAF", 2, false },         /* overlong '/' */
                { "\xE0\x80\xAF", 3, false },     /* overlong */
                { "\xF0\x80\x80\xAF", 4, false }, /* overlong */
                { "\xED\xA0\x80", 3, false },     /* U+D800 */
                { "\xED\xBF\xBF", 3, false },     /* U+DFFF */
                { "\x80", 1, false },             /* lone continuation */
                { "\xC3", 1, false },             /* truncated */
                { "\xE1\xBB", 2, false },         /* truncated */
                { "\xFE", 1, false },
                { "\xFF", 1, false },
                { "a\xC3(", 3, false },
        };

        (void)state;
        for (size_t i = 0; i < sizeof(cases) / sizeof(*cases); i++)
                assert_int_equal(utf8_valid(cases[i].s, cases[i].len),
                                 cases[i].ok);
}

static void test_clean(void **state)
{
        char out[64];
        bool cut;
        size_t n;

        (void)state;
        n = utf8_clean("abc", 3, 10, out, sizeof(out), &cut);
        assert_int_equal(n, 3);
        assert_string_equal(out, "abc");
        assert_false(cut);
        /* invalid bytes and NUL become U+FFFD */
        n = utf8_clean("a\xFF"
                       "b\0c",
                       5, 10, out, sizeof(out), &cut);
        assert_string_equal(out, "a" UTF8_REPLACEMENT "b" UTF8_REPLACEMENT "c");
        assert_true(cut);
        assert_int_equal(n, 9);
        /* cut by code points */
        n = utf8_clean("\xC3\xA1\xC3\xA1\xC3\xA1", 6, 2, out, sizeof(out),
                       &cut);
        assert_int_equal(n, 4);
        assert_true(cut);
        /* cut by the buffer: never inside a character */
        n = utf8_clean("a\xE1\xBB\x8B", 4, 10, out, 4, &cut);
        assert_int_equal(n, 1);
        assert_string_equal(out, "a");
        assert_true(cut);
        assert_true(utf8_valid(out, n));
        n = utf8_clean("abc", 3, 10, out, 0, &cut);
        assert_int_equal(n, 0);
        assert_true(cut);
}

/* A long Vietnamese text cut at every size is always valid UTF-8. */
static void test_cut_everywhere(void **state)
{
        static const char vi[] =
            "Giao d\xE1\xBB\x8B"
            "ch b\xE1\xBB\x8B t\xE1\xBB\xAB ch\xE1\xBB\x91i";
        char big[4096], out[600];
        size_t len = 0;

        (void)state;
        while (len + sizeof(vi) < sizeof(big)) {
                memcpy(big + len, vi, sizeof(vi) - 1);
                len += sizeof(vi) - 1;
        }
        for (size_t sz = 1; sz < sizeof(out); sz++) {
                bool cut;
                size_t n = utf8_clean(big, len, (size_t)-1, out, sz, &cut);

                assert_true(n < sz);
                assert_true(utf8_valid(out, n));
                assert_true(cut);
        }
        for (size_t m = 0; m < 300; m++) {
                size_t p = utf8_prefix(big, len, m, (size_t)-1);

                assert_int_equal(utf8_count(big, p), m);
                assert_true(utf8_valid(big, p));
                p = utf8_prefix(big, len, (size_t)-1, m);
                assert_true(p <= m);
                assert_true(utf8_valid(big, p));
        }
}

/* Every byte string of length <= 2, checked against a naive decoder. */
static void test_exhaustive_short(void **state)
{
        (void)state;
        for (unsigned a = 0; a < 256; a++) {
                char s[2] = { (char)a, 0 };

                assert_int_equal(utf8_valid(s, 1), a < 0x80);
                for (unsigned b = 0; b < 256; b++) {
                        bool two;

                        s[1] = (char)b;
                        two  = (a < 0x80 && b < 0x80) ||
                              (a >= 0xC2 && a <= 0xDF && (b & 0xC0) == 0x80);
                        assert_int_equal(utf8_valid(s, 2), two);
                }
        }
}

int main(void)
{
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_valid),
                cmocka_unit_test(test_clean),
                cmocka_unit_test(test_cut_everywhere),
                cmocka_unit_test(test_exhaustive_short),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
