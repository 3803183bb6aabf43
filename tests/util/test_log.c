/* SPDX-License-Identifier: Apache-2.0 */
/*
 * test_log: the logger never writes past its line buffer and every line is
 * one valid JSON object in valid UTF-8, whatever its fields hold: 1 MB of
 * ASCII, of multi-byte text, of invalid bytes, of quotes, backslashes and
 * control bytes, at debug level, in every context field and the message.
 * Also json_escape_n(), which the logger builds its fields with.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "util/jsonesc.h"
#include "util/log.h"
#include "util/utf8.h"

#define BIG        (1u << 20)
#define ELLIPSIS   "\xE2\x80\xA6"
#define REPLACEMNT UTF8_REPLACEMENT

/* The patterns a 1 MB field is made of. */
#define KIND(s)                                                                \
        {                                                                      \
                s, sizeof(s) - 1                                               \
        }
static const struct {
        const char *pattern;
        size_t len;
} kinds[] = {
        KIND("abcdefghij"),
        /* Vietnamese (2- and 3-byte characters) and U+1D11E (4 bytes) */
        KIND("Thanh to\xC3\xA1n b\xE1\xBB\x8B t\xE1\xBB\xAB "
             "ch\xE1\xBB\x91i \xF0\x9D\x84\x9E "),
        /* bad lead, overlong, surrogate, lone continuation, truncated */
        KIND("\xFF\xC0\x80\xED\xA0\x80\x80\xE1\xBB"),
        /* quotes, backslashes, control bytes */
        KIND("\"\\\x01\n\t\x7f\x1f"),
        KIND("a\"\xE1\xBB\x8B\\\xFF\x02\xF0\x9D\x84\x9E"),
};

/* BIG bytes: `shift` bytes of 'x' then the kind's pattern repeated. */
static char *big_field(size_t kind, size_t shift)
{
        char *s = malloc(BIG + 1);
        size_t n;

        assert_non_null(s);
        memset(s, 'x', shift);
        for (n = shift; n < BIG; n++)
                s[n] = kinds[kind].pattern[(n - shift) % kinds[kind].len];
        s[BIG] = '\0';
        return s;
}

/* What the logger may show of s: s cleaned as json_escape_n() does. */
static char *cleaned(const char *s, size_t len)
{
        size_t size = 3 * len + 1;
        char *out   = malloc(size);
        bool cut;

        assert_non_null(out);
        (void)utf8_clean(s, len, SIZE_MAX, out, size, &cut);
        return out;
}

/* stderr captured in a temporary file between these two calls. */
static int saved_stderr = -1;
static FILE *capture;

static void capture_begin(void)
{
        fflush(stderr);
        capture = tmpfile();
        assert_non_null(capture);
        saved_stderr = dup(STDERR_FILENO);
        assert_true(saved_stderr >= 0);
        assert_true(dup2(fileno(capture), STDERR_FILENO) >= 0);
}

/* Returns what was written (malloc'd, NUL-terminated), *len its length. */
static char *capture_end(size_t *len)
{
        long size;
        char *buf;

        assert_true(dup2(saved_stderr, STDERR_FILENO) >= 0);
        close(saved_stderr);
        assert_int_equal(fseek(capture, 0, SEEK_END), 0);
        size = ftell(capture);
        assert_true(size >= 0);
        rewind(capture);
        buf = malloc((size_t)size + 1);
        assert_non_null(buf);
        assert_int_equal(fread(buf, 1, (size_t)size, capture), (size_t)size);
        buf[size] = '\0';
        fclose(capture);
        *len = (size_t)size;
        return buf;
}

/*
 * Checks one line (without its "\n") and returns it parsed: at most
 * LOG_LINE_MAX bytes with the "\n", valid UTF-8, one JSON object.
 */
static json_t *parse_line(const char *line, size_t len)
{
        json_error_t err;
        json_t *o;

        if (len + 1 > LOG_LINE_MAX)
                fail_msg("a line of %zu bytes", len + 1);
        if (!utf8_valid(line, len))
                fail_msg("a line that is not UTF-8: %.*s", (int)len, line);
        o = json_loadb(line, len, JSON_REJECT_DUPLICATES, &err);
        if (o == NULL)
                fail_msg("not JSON (%s at %d): %.*s", err.text, err.position,
                         (int)len, line);
        assert_true(json_is_object(o));
        assert_string_equal(json_string_value(json_object_get(o, "level")),
                            "debug");
        assert_non_null(json_string_value(json_object_get(o, "ts")));
        assert_non_null(json_string_value(json_object_get(o, "msg")));
        return o;
}

/*
 * The field `name` of o shows a prefix of `clean`, cut or not: when cut it
 * ends in "…" and holds at most max bytes of escaped text. Returns the
 * length of that prefix.
 */
static size_t shows_prefix(json_t *o, const char *name, const char *clean,
                           size_t max, bool *was_cut)
{
        json_t *v       = json_object_get(o, name);
        const char *s   = json_string_value(v);
        size_t n        = json_string_length(v);
        size_t cleanlen = strlen(clean);

        if (s == NULL)
                fail_msg("no \"%s\" in the line", name);
        /* no input holds U+2026: a value that ends with it was cut */
        *was_cut = n >= 3 && memcmp(s + n - 3, ELLIPSIS, 3) == 0;
        if (*was_cut)
                n -= 3;
        if (n > cleanlen || memcmp(s, clean, n) != 0)
                fail_msg("\"%s\" is not a prefix of what was logged", name);
        if (n > max)
                fail_msg("\"%s\" holds %zu bytes", name, n);
        return n;
}

/* Every line of `out`, each checked; returns how many. */
static size_t for_each_line(char *out, size_t len,
                            void (*check)(json_t *o, void *arg), void *arg)
{
        size_t lines = 0;
        char *p      = out;

        assert_true(len > 0);
        assert_int_equal(out[len - 1], '\n');
        while (p < out + len) {
                char *nl = memchr(p, '\n', (size_t)(out + len - p));
                json_t *o;

                assert_non_null(nl);
                o = parse_line(p, (size_t)(nl - p));
                check(o, arg);
                json_decref(o);
                p = nl + 1;
                lines++;
        }
        return lines;
}

struct expect {
        const char *clean;     /* the big field, cleaned */
        const char *clean_msg; /* the message as formatted, cleaned */
        bool big_ctx;          /* the context fields are the big field */
        bool big_msg;          /* the message is */
        bool msg_valid;        /* the message was valid UTF-8 */
};

static void check_big(json_t *o, void *arg)
{
        const struct expect *e                = arg;
        static const char *const ctx_fields[] = { "component", "topic",
                                                  "payment_id", "tenant_id",
                                                  "key" };
        bool cut, any_cut = false;
        size_t n;

        for (size_t i = 0; i < sizeof(ctx_fields) / sizeof(*ctx_fields); i++) {
                json_t *v = json_object_get(o, ctx_fields[i]);

                if (!e->big_ctx) {
                        assert_string_equal(json_string_value(v),
                                            ctx_fields[i]);
                        continue;
                }
                /* a cut context field keeps what fits, up to its cap */
                (void)shows_prefix(o, ctx_fields[i], e->clean, LOG_FIELD_MAX,
                                   &cut);
                assert_true(cut);
                any_cut = true;
        }
        assert_int_equal(json_integer_value(json_object_get(o, "partition")),
                         7);
        assert_int_equal(json_integer_value(json_object_get(o, "offset")),
                         1234567890123LL);
        n = shows_prefix(o, "msg", e->clean_msg, LOG_LINE_MAX, &cut);
        if (e->big_msg) {
                assert_true(cut);
                any_cut = true;
                /* the message keeps most of the line, not a token */
                assert_true(n >= 600);
                /* vsnprintf's cut in a character is dropped, not
                 * replaced */
                if (e->msg_valid)
                        assert_null(
                            strstr(json_string_value(json_object_get(o, "msg")),
                                   REPLACEMNT));
        } else {
                assert_false(cut);
                assert_int_equal(n, strlen(e->clean_msg));
        }
        if (any_cut)
                assert_true(json_is_true(json_object_get(o, "truncated")));
        else
                assert_null(json_object_get(o, "truncated"));
}

/*
 * 1 MB fields of every kind, shifted by 0-3 bytes so that the cuts land
 * on every byte of the multi-byte characters and escapes: in every
 * context field, in the message, and in both.
 */
static void test_big_fields(void **state)
{
        enum log_level saved = log_current_level;

        (void)state;
        log_set_level(LOG_LVL_DEBUG);
        for (size_t k = 0; k < sizeof(kinds) / sizeof(*kinds); k++) {
                for (size_t shift = 0; shift < 4; shift++) {
                        char *big              = big_field(k, shift);
                        char *clean            = cleaned(big, BIG);
                        struct log_ctx big_ctx = LOG_CTX_INIT;
                        struct log_ctx small   = LOG_CTX_INIT;
                        struct expect e;
                        size_t len, lines;
                        char *out;

                        big_ctx.component  = big;
                        big_ctx.topic      = big;
                        big_ctx.partition  = 7;
                        big_ctx.offset     = 1234567890123LL;
                        big_ctx.payment_id = big;
                        big_ctx.tenant_id  = big;
                        big_ctx.key_masked = big;
                        small.component    = "component";
                        small.topic        = "topic";
                        small.partition    = 7;
                        small.offset       = 1234567890123LL;
                        small.payment_id   = "payment_id";
                        small.tenant_id    = "tenant_id";
                        small.key_masked   = "key";

                        capture_begin();
                        log_debug(&big_ctx, "declined: %s", "short");
                        out   = capture_end(&len);
                        e     = (struct expect){ clean, "declined: short", true,
                                                 false, true };
                        lines = for_each_line(out, len, check_big, &e);
                        assert_int_equal(lines, 1);
                        free(out);

                        e = (struct expect){ clean, clean, false, true,
                                             k == 0 || k == 1 };
                        capture_begin();
                        log_debug(&small, "%s", big);
                        out   = capture_end(&len);
                        lines = for_each_line(out, len, check_big, &e);
                        assert_int_equal(lines, 1);
                        free(out);

                        e.big_ctx = true;
                        capture_begin();
                        log_debug(&big_ctx, "%s", big);
                        log_debug(&big_ctx, "%s", big);
                        out   = capture_end(&len);
                        lines = for_each_line(out, len, check_big, &e);
                        assert_int_equal(lines, 2);
                        free(out);

                        free(clean);
                        free(big);
                }
        }
        log_set_level(saved);
}

static void check_exact(json_t *o, void *arg)
{
        const char *const *want = arg;

        assert_null(json_object_get(o, "truncated"));
        assert_string_equal(json_string_value(json_object_get(o, "topic")),
                            want[0]);
        assert_string_equal(json_string_value(json_object_get(o, "msg")),
                            want[1]);
}

/* A line that fits is not cut and says exactly what it was given. */
static void test_small_fields_exact(void **state)
{
        struct log_ctx c         = LOG_CTX_INIT;
        const char *const want[] = {
                "t\"\\\x01\n\t\x7f \xE1\xBB\x8B",
                "l\xE1\xBB\x97i " REPLACEMNT REPLACEMNT " 42",
        };
        enum log_level saved = log_current_level;
        size_t len;
        char *out;

        (void)state;
        log_set_level(LOG_LVL_DEBUG);
        c.topic = want[0];
        capture_begin();
        log_debug(&c, "l\xE1\xBB\x97i \xC0\x80 %d", 42);
        out = capture_end(&len);
        assert_int_equal(for_each_line(out, len, check_exact, (void *)want), 1);
        /* and nothing more is escaped than must be */
        assert_non_null(strstr(out, "\\\"\\\\\\u0001\\n\\t\\u007f "
                                    "\xE1\xBB\x8B\""));
        assert_non_null(strstr(out, "\\ufffd\\ufffd 42\""));
        free(out);
        /* below the level, nothing at all */
        log_set_level(LOG_LVL_INFO);
        capture_begin();
        log_debug(&c, "%s", "hidden");
        out = capture_end(&len);
        assert_int_equal(len, 0);
        free(out);
        log_set_level(saved);
}

static void check_msg_whole_chars(json_t *o, void *arg)
{
        const char *m = json_string_value(json_object_get(o, "msg"));
        size_t n      = strlen(m);
        size_t pad    = *(const size_t *)arg;

        assert_true(json_is_true(json_object_get(o, "truncated")));
        assert_true(n >= 3 && strcmp(m + n - 3, ELLIPSIS) == 0);
        /* the character vsnprintf cut in half is dropped, not replaced */
        assert_null(strstr(m, REPLACEMNT));
        assert_true(n - 3 >= pad && n - 3 <= LOG_MSG_MAX - 1);
}

/*
 * A message longer than LOG_MSG_MAX - 1 bytes cut by vsnprintf inside a
 * 2-, 3- or 4-byte character, at each of its bytes.
 */
static void test_message_cut_in_character(void **state)
{
        static const char *const chars[] = { "\xC3\xA1", "\xE1\xBB\x8B",
                                             "\xF0\x9D\x84\x9E" };
        enum log_level saved             = log_current_level;
        char text[LOG_MSG_MAX + 64];

        (void)state;
        log_set_level(LOG_LVL_DEBUG);
        for (size_t c = 0; c < 3; c++) {
                size_t cl = strlen(chars[c]);

                for (size_t pad = LOG_MSG_MAX - 1 - cl; pad < LOG_MSG_MAX;
                     pad++) {
                        size_t len;
                        char *out;

                        memset(text, 'a', pad);
                        text[pad] = '\0';
                        for (int k = 0; k < 4; k++)
                                strcat(text, chars[c]);
                        capture_begin();
                        log_debug(NULL, "%s", text);
                        out = capture_end(&len);
                        assert_int_equal(for_each_line(out, len,
                                                       check_msg_whole_chars,
                                                       &pad),
                                         1);
                        free(out);
                }
        }
        log_set_level(saved);
}

/* Escapes are whole, characters are whole, invalid bytes are \ufffd. */
static void test_json_escape_n(void **state)
{
        char out[64];
        size_t used, n;

        (void)state;
        n = json_escape_n("a\"b\\c\nd\x01", 8, out, sizeof(out), &used);
        assert_string_equal(out, "a\\\"b\\\\c\\nd\\u0001");
        assert_int_equal(n, strlen(out));
        assert_int_equal(used, 8);
        /* cut at a whole escape */
        n = json_escape_n("\"\"\"\"", 4, out, 6, &used);
        assert_string_equal(out, "\\\"\\\"");
        assert_int_equal(used, 2);
        n = json_escape_n("ab\x01", 3, out, 8, &used);
        assert_string_equal(out, "ab");
        assert_int_equal(used, 2);
        /* cut before a character that does not fit whole */
        n = json_escape_n("ab\xE1\xBB\x8B", 5, out, 5, &used);
        assert_string_equal(out, "ab");
        assert_int_equal(used, 2);
        n = json_escape_n("ab\xE1\xBB\x8B", 5, out, 6, &used);
        assert_string_equal(out, "ab\xE1\xBB\x8B");
        assert_int_equal(used, 5);
        n = json_escape_n("\xF0\x9D\x84\x9E", 4, out, 4, &used);
        assert_int_equal(n, 0);
        assert_int_equal(used, 0);
        /* invalid UTF-8: one \ufffd per byte, never copied */
        n = json_escape_n("a\xFF\xC0\x80\xE1\xBB", 6, out, sizeof(out), &used);
        assert_string_equal(out, "a\\ufffd\\ufffd\\ufffd\\ufffd\\ufffd");
        assert_int_equal(used, 6);
        n = json_escape_n("\xED\xA0\x80", 3, out, sizeof(out), &used);
        assert_string_equal(out, "\\ufffd\\ufffd\\ufffd");
        n = json_escape_n("a\xFF", 2, out, 7, &used);
        assert_string_equal(out, "a");
        assert_int_equal(used, 1);
        /* outsz 0 writes nothing; 1 only the NUL */
        assert_int_equal(json_escape_n("abc", 3, NULL, 0, &used), 0);
        assert_int_equal(used, 0);
        assert_int_equal(json_escape("abc", 3, out, 1), 0);
        assert_string_equal(out, "");
        (void)n;
}

int main(void)
{
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_json_escape_n),
                cmocka_unit_test(test_small_fields_exact),
                cmocka_unit_test(test_message_cut_in_character),
                cmocka_unit_test(test_big_fields),
        };

        return cmocka_run_group_tests(tests, NULL, NULL);
}
