/* SPDX-License-Identifier: Apache-2.0 */
/*
 * test_keyq: messages of one key run one after the other, in arrival
 * order; distinct keys run at once; a key is forgotten when its queue
 * empties. Keys are the producers' (hostile): the table's hash is keyed
 * per keyq, and keys built to collide under plain FNV-1a spread.
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

/* Plain (unseeded) 64-bit FNV-1a: what keyq hashed with before. */
static uint64_t fnv1a(const void *key, size_t len)
{
        const unsigned char *p = key;
        uint64_t h             = 1469598103934665603ULL;

        for (size_t i = 0; i < len; i++) {
                h ^= p[i];
                h *= 1099511628211ULL;
        }
        return h;
}

static void test_hash_is_keyed(void **state)
{
        struct keyq *a = keyq_new(), *b = keyq_new();
        const char *k = "tenant-1/order-42";
        (void)state;
        /* stable within one keyq, another in the next (2^-64 by chance) */
        assert_true(keyq_hash(a, k, strlen(k)) == keyq_hash(a, k, strlen(k)));
        assert_true(keyq_hash(a, k, strlen(k)) != keyq_hash(b, k, strlen(k)));
        assert_true(keyq_hash(a, k, strlen(k)) != fnv1a(k, strlen(k)));
        keyq_destroy(a);
        keyq_destroy(b);
}

/*
 * n distinct keys "t/" + 4 characters whose FNV-1a agrees on the bits of
 * mask, by brute force (FNV-1a carried along the four loops: a few
 * million steps, quick under valgrind too). Returns how many it found.
 */
static int fnv_colliding(char (*keys)[8], int n, uint64_t mask)
{
        static const char alpha[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZ"
                                    "abcdefghijklmnopqrstuvwxyz0123456789-_";
        const uint64_t P          = 1099511628211ULL;
        uint64_t h0 = fnv1a("t/", 2), target = 0;
        int got = 0;

        for (int a = 0; a < 64; a++) {
                uint64_t h1 = (h0 ^ (unsigned char)alpha[a]) * P;
                for (int b = 0; b < 64; b++) {
                        uint64_t h2 = (h1 ^ (unsigned char)alpha[b]) * P;
                        for (int c = 0; c < 64; c++) {
                                uint64_t h3 =
                                    (h2 ^ (unsigned char)alpha[c]) * P;
                                for (int d = 0; d < 64; d++) {
                                        uint64_t h4 =
                                            (h3 ^ (unsigned char)alpha[d]) * P;
                                        if (got == 0)
                                                target = h4 & mask;
                                        if ((h4 & mask) != target)
                                                continue;
                                        snprintf(keys[got], 8, "t/%c%c%c%c",
                                                 alpha[a], alpha[b], alpha[c],
                                                 alpha[d]);
                                        if (++got == n)
                                                return got;
                                }
                        }
                }
        }
        return got;
}

/*
 * What a producer can do to an unkeyed hash: K keys whose FNV-1a agrees
 * on the low 11 bits, the bucket of every key in a table of 2048 (keyq's
 * size for K keys; it grows from 1024 on the way). Under FNV-1a they make
 * one chain of K, and every push and pop walks it. Keyed, they spread: K
 * keys in 2048 buckets at random put more than 16 in one bucket with a
 * probability below 1e-10.
 */
static void test_fnv_collisions_spread(void **state)
{
        enum { K = 2000, BITS = 11 };
        static char keys[K][8];
        static struct keyq_node first[K], second[K];
        const uint64_t mask = (1u << BITS) - 1;
        struct keyq *kq     = keyq_new();
        uint64_t target;
        (void)state;
        assert_int_equal(fnv_colliding(keys, K, mask), K);
        target = fnv1a(keys[0], 6) & mask;
        for (int i = 0; i < K; i++) {
                assert_int_equal(strlen(keys[i]), 6);
                assert_true((fnv1a(keys[i], 6) & mask) == target);
                assert_true(keyq_push(kq, keys[i], 6, &first[i]));
                assert_false(keyq_push(kq, keys[i], 6, &second[i]));
        }
        assert_int_equal(keyq_keys(kq), K);
        assert_in_range(keyq_max_chain(kq), 1, 16);
        for (int i = 0; i < K; i++) {
                assert_int_equal(keyq_len(kq, keys[i], 6), 2);
                assert_ptr_equal(keyq_pop(kq, keys[i], 6), &second[i]);
                assert_null(keyq_pop(kq, keys[i], 6));
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
                cmocka_unit_test(test_hash_is_keyed),
                cmocka_unit_test(test_fnv_collisions_spread),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
