/*
 * test_keyq: messages of one key run one after the other, in arrival
 * order; distinct keys run at once; a key is forgotten when its queue
 * empties.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "pipeline/keyq.h"

#include <stdio.h>
#include <string.h>

static void test_one_key_in_order(void **state)
{
        struct keyq *kq = keyq_new();
        struct keyq_node n[4];
        (void)state;
        assert_true(keyq_push(kq, "t/k", 3, &n[0])); /* may start */
        assert_false(keyq_push(kq, "t/k", 3, &n[1]));
        assert_false(keyq_push(kq, "t/k", 3, &n[2]));
        assert_true(keyq_push(kq, "t/other", 7, &n[3])); /* independent */
        assert_int_equal(keyq_keys(kq), 2);
        assert_int_equal(keyq_len(kq, "t/k", 3), 3);
        assert_int_equal(keyq_len(kq, "t/other", 7), 1);
        assert_int_equal(keyq_len(kq, "t/none", 6), 0);
        assert_ptr_equal(keyq_pop(kq, "t/k", 3), &n[1]);
        assert_int_equal(keyq_len(kq, "t/k", 3), 2);
        assert_ptr_equal(keyq_pop(kq, "t/k", 3), &n[2]);
        assert_int_equal(keyq_len(kq, "t/k", 3), 1);
        assert_null(keyq_pop(kq, "t/k", 3));
        assert_int_equal(keyq_len(kq, "t/k", 3), 0);
        assert_int_equal(keyq_keys(kq), 1);
        assert_null(keyq_pop(kq, "t/other", 7));
        assert_int_equal(keyq_keys(kq), 0);
        /* a forgotten key starts afresh */
        assert_true(keyq_push(kq, "t/k", 3, &n[0]));
        assert_null(keyq_pop(kq, "t/k", 3));
        keyq_destroy(kq);
}

static void test_binary_and_prefix_keys(void **state)
{
        struct keyq *kq = keyq_new();
        struct keyq_node n[3];
        (void)state;
        assert_true(keyq_push(kq, "a\0b", 3, &n[0]));
        assert_true(keyq_push(kq, "a\0c", 3, &n[1])); /* differs after NUL */
        assert_true(keyq_push(kq, "a", 1, &n[2]));    /* a prefix */
        assert_int_equal(keyq_keys(kq), 3);
        assert_null(keyq_pop(kq, "a\0b", 3));
        assert_null(keyq_pop(kq, "a\0c", 3));
        assert_null(keyq_pop(kq, "a", 1));
        keyq_destroy(kq);
}

static void test_many_keys(void **state)
{
        enum { K = 5000 };
        static struct keyq_node first[K], second[K];
        struct keyq *kq = keyq_new();
        char key[32];
        (void)state;
        for (int i = 0; i < K; i++) { /* the table grows past 1024 */
                int len = snprintf(key, sizeof(key), "tenant/%d", i);
                assert_true(keyq_push(kq, key, (size_t)len, &first[i]));
                assert_false(keyq_push(kq, key, (size_t)len, &second[i]));
        }
        assert_int_equal(keyq_keys(kq), K);
        for (int i = K - 1; i >= 0; i--) {
                int len = snprintf(key, sizeof(key), "tenant/%d", i);
                assert_ptr_equal(keyq_pop(kq, key, (size_t)len), &second[i]);
                assert_null(keyq_pop(kq, key, (size_t)len));
        }
        assert_int_equal(keyq_keys(kq), 0);
        keyq_destroy(kq);
}

int main(void)
{
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_one_key_in_order),
                cmocka_unit_test(test_binary_and_prefix_keys),
                cmocka_unit_test(test_many_keys),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
