/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Unit tests of util/buf: appends, growth, the maximum size, the one
 * failure behaviour over the limit (contents kept, failed stays failed
 * until reset), detach and reset; out of memory ends the process
 * (util/xalloc.h, the one policy).
 *
 * realloc is wrapped (-Wl,--wrap=realloc, see CMakeLists.txt) so that a
 * test can make the next allocation fail.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "util/buf.h"

#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <sys/wait.h>
#include <unistd.h>
#include <stdlib.h>
#include <string.h>

void *__real_realloc(void *p, size_t n);
void *__wrap_realloc(void *p, size_t n);

static int fail_next_realloc;

void *__wrap_realloc(void *p, size_t n)
{
        if (fail_next_realloc) {
                fail_next_realloc = 0;
                return NULL;
        }
        return __real_realloc(p, n);
}

static void test_empty(void **state)
{
        struct buf b;
        char *p;
        size_t n = 99;

        (void)state;
        buf_init(&b, 100);
        assert_null(b.data);
        assert_int_equal(b.len, 0);
        assert_string_equal(buf_str(&b), "");
        assert_false(buf_failed(&b));
        p = buf_detach(&b, &n);
        assert_non_null(p);
        assert_string_equal(p, "");
        assert_int_equal(n, 0);
        free(p);
        buf_free(&b);
        buf_free(&b); /* twice is harmless */
}

static void test_appends(void **state)
{
        struct buf b;

        (void)state;
        buf_init(&b, 1 << 20);
        assert_int_equal(buf_append(&b, "ab\0c", 4), 0);
        assert_int_equal(buf_append_str(&b, "de"), 0);
        assert_int_equal(buf_append_char(&b, 'f'), 0);
        assert_int_equal(buf_appendf(&b, "%d-%s", 42, "x"), 0);
        assert_int_equal(buf_append(&b, NULL, 0), 0);
        assert_int_equal(b.len, 11);
        assert_memory_equal(b.data, "ab\0cdef42-x", 12); /* with the NUL */
        assert_false(buf_failed(&b));
        buf_free(&b);
        assert_null(b.data);
        assert_int_equal(b.len, 0);
        assert_int_equal(b.max, 1 << 20);
}

/* Many small appends grow the buffer by doubling; the content survives
 * every move. */
static void test_growth(void **state)
{
        struct buf b;

        (void)state;
        buf_init(&b, 1 << 20);
        for (int i = 0; i < 10000; i++)
                assert_int_equal(buf_append_char(&b, (char)('a' + i % 26)), 0);
        assert_int_equal(b.len, 10000);
        assert_true(b.cap > b.len);
        assert_int_equal(b.data[b.len], '\0');
        for (int i = 0; i < 10000; i++)
                assert_int_equal(b.data[i], (char)('a' + i % 26));
        buf_free(&b);
}

/* A formatted piece longer than the room left takes the second pass. */
static void test_appendf_long(void **state)
{
        struct buf b;
        char big[1000];

        (void)state;
        memset(big, 'z', sizeof(big) - 1);
        big[sizeof(big) - 1] = '\0';
        buf_init(&b, 4096);
        assert_int_equal(buf_append_str(&b, "<"), 0);
        assert_int_equal(buf_appendf(&b, "%s|%05d", big, 7), 0);
        assert_int_equal(b.len, 1 + 999 + 6);
        assert_int_equal(b.data[0], '<');
        assert_int_equal(strspn(b.data + 1, "z"), 999);
        assert_string_equal(b.data + 1000, "|00007");
        buf_free(&b);
}

/* Exactly max bytes fit; one more fails, keeps the contents, and the
 * buffer stays failed until reset. */
static void test_limit(void **state)
{
        struct buf b;

        (void)state;
        buf_init(&b, 10);
        assert_int_equal(buf_append_str(&b, "0123456789"), 0);
        assert_int_equal(b.len, 10);
        assert_true(b.cap <= 11);
        assert_int_equal(buf_append_char(&b, 'x'), -1);
        assert_true(buf_failed(&b));
        assert_int_equal(b.err, EMSGSIZE);
        assert_string_equal(b.data, "0123456789");
        /* failed stays failed: even an empty append is refused */
        assert_int_equal(buf_append(&b, "", 0), -1);
        assert_int_equal(buf_reserve(&b, 0), -1);
        assert_int_equal(b.len, 10);

        buf_reset(&b);
        assert_false(buf_failed(&b));
        assert_int_equal(b.len, 0);
        assert_string_equal(buf_str(&b), "");
        assert_int_equal(buf_appendf(&b, "%s", "0123456789x"), -1);
        assert_int_equal(b.err, EMSGSIZE);
        assert_string_equal(buf_str(&b), "");
        buf_free(&b);
}

/* A hostile length cannot wrap the size arithmetic. */
static void test_huge_requests(void **state)
{
        struct buf b;

        (void)state;
        buf_init(&b, (size_t)-1);
        assert_int_equal(b.max, BUF_MAX_LIMIT);
        assert_int_equal(buf_append_str(&b, "abc"), 0);
        assert_int_equal(buf_reserve(&b, (size_t)-1), -1);
        assert_int_equal(b.err, EMSGSIZE);
        assert_string_equal(b.data, "abc");
        buf_free(&b);
}

/* Out of memory is not a failure of the buffer: the process ends
 * (SIGABRT, after "out of memory" on stderr), in a child here. */
static void test_out_of_memory(void **state)
{
        int status = 0;
        pid_t pid;

        (void)state;
        fflush(NULL);
        pid = fork();
        assert_true(pid >= 0);
        if (pid == 0) {
                struct buf b;

                buf_init(&b, 1 << 20);
                if (buf_append_str(&b, "kept") != 0)
                        _exit(3);
                fail_next_realloc = 1;
                (void)buf_reserve(&b, 1000);
                _exit(0); /* not reached */
        }
        assert_int_equal(waitpid(pid, &status, 0), pid);
        assert_true(WIFSIGNALED(status));
        assert_int_equal(WTERMSIG(status), SIGABRT);
}

static void test_detach_and_reuse(void **state)
{
        struct buf b;
        char *p, *q;
        size_t n = 0;

        (void)state;
        buf_init(&b, 64);
        assert_int_equal(buf_appendf(&b, "%s=%d", "k", 5), 0);
        p = buf_detach(&b, &n);
        assert_string_equal(p, "k=5");
        assert_int_equal(n, 3);
        free(p);
        assert_null(b.data);
        assert_int_equal(b.max, 64);
        /* reset keeps the allocation */
        assert_int_equal(buf_append_str(&b, "abc"), 0);
        p = b.data;
        buf_reset(&b);
        assert_ptr_equal(b.data, p);
        assert_int_equal(buf_append_str(&b, "de"), 0);
        assert_string_equal(buf_str(&b), "de");
        q = buf_detach(&b, NULL);
        assert_ptr_equal(q, p);
        free(q);
}

int main(void)
{
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_empty),
                cmocka_unit_test(test_appends),
                cmocka_unit_test(test_growth),
                cmocka_unit_test(test_appendf_long),
                cmocka_unit_test(test_limit),
                cmocka_unit_test(test_huge_requests),
                cmocka_unit_test(test_out_of_memory),
                cmocka_unit_test(test_detach_and_reuse),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
