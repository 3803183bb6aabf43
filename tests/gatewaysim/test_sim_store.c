/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Unit tests of sim_store: the idempotency key life cycle (new, in
 * progress, replay, mismatch, release, retention), the ground-truth
 * counters (double charges per order) and reset. Time is passed in, so
 * nothing sleeps.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "sim_store.h"

static const unsigned char fp1[CRYPTO_SHA256_LEN] = { 1 };
static const unsigned char fp2[CRYPTO_SHA256_LEN] = { 2 };

static void key_life_cycle(void **state)
{
        struct sim_store *st = sim_store_new();
        uint64_t gen = 0, gen2 = 0;
        char *body = NULL;
        int status = 0;

        (void)state;
        assert_non_null(st);
        assert_int_equal(
            sim_store_key_begin(st, "k", fp1, 0, 1000, &gen, &status, &body),
            SIM_KEY_NEW);
        assert_int_equal(
            sim_store_key_begin(st, "k", fp1, 1, 1000, &gen2, &status, &body),
            SIM_KEY_IN_PROGRESS);
        /* in progress never expires */
        assert_int_equal(sim_store_key_begin(st, "k", fp1, 99999, 1000, &gen2,
                                             &status, &body),
                         SIM_KEY_IN_PROGRESS);
        sim_store_key_finish(st, "k", gen, 402, "{\"x\":1}", 100);
        assert_int_equal(
            sim_store_key_begin(st, "k", fp1, 200, 1000, &gen2, &status, &body),
            SIM_KEY_REPLAY);
        assert_int_equal(status, 402);
        assert_string_equal(body, "{\"x\":1}");
        free(body);
        body = NULL;
        assert_int_equal(
            sim_store_key_begin(st, "k", fp2, 300, 1000, &gen2, &status, &body),
            SIM_KEY_MISMATCH);
        assert_null(body);
        /* 1000 ms after the answer was stored, the key is forgotten */
        assert_int_equal(sim_store_key_begin(st, "k", fp2, 1100, 1000, &gen2,
                                             &status, &body),
                         SIM_KEY_NEW);
        /* a release frees the key for the retry */
        sim_store_key_release(st, "k", gen2);
        assert_int_equal(
            sim_store_key_begin(st, "k", fp1, 1200, 1000, &gen, &status, &body),
            SIM_KEY_NEW);
        /* after a reset, the old holding's finish changes nothing */
        sim_store_reset(st);
        sim_store_key_finish(st, "k", gen, 200, "{}", 1300);
        assert_int_equal(
            sim_store_key_begin(st, "k", fp1, 1300, 1000, &gen, &status, &body),
            SIM_KEY_NEW);
        sim_store_destroy(st);
}

static void sweep_forgets_old_done_keys(void **state)
{
        struct sim_store *st = sim_store_new();
        uint64_t gen;
        char *body;
        int status, i;
        char key[16];

        (void)state;
        for (i = 0; i < 10; i++) {
                snprintf(key, sizeof(key), "k%d", i);
                assert_int_equal(sim_store_key_begin(st, key, fp1, i, 50, &gen,
                                                     &status, &body),
                                 SIM_KEY_NEW);
                if (i < 9)
                        sim_store_key_finish(st, key, gen, 200, "{}", i * 10);
        }
        /* at 75: keys done at 0, 10, 20 are 50+ ms old */
        assert_int_equal(sim_store_sweep(st, 75, 50, 100), 3);
        assert_int_equal(sim_store_sweep(st, 75, 50, 100), 0);
        assert_int_equal(sim_store_sweep(st, 10000, 50, 2), 2);
        assert_int_equal(sim_store_sweep(st, 10000, 50, 100), 4);
        /* k9 is still in progress */
        assert_int_equal(
            sim_store_key_begin(st, "k9", fp1, 10000, 50, &gen, &status, &body),
            SIM_KEY_IN_PROGRESS);
        sim_store_destroy(st);
}

static int64_t stat_int(json_t *o, const char *name)
{
        return json_integer_value(json_object_get(o, name));
}

static void charges_and_double_charges(void **state)
{
        struct sim_store *st = sim_store_new();
        json_t *s, *orders;
        char *list;

        (void)state;
        assert_int_equal(
            sim_store_add_charge(st, "r1", "t", "o1", true, "{\"id\":\"a\"}"),
            0);
        assert_int_equal(
            sim_store_add_charge(st, "r1", "t", "o1", true, "{\"id\":\"b\"}"),
            0);
        assert_int_equal(
            sim_store_add_charge(st, "r1", "t", "o1", true, "{\"id\":\"c\"}"),
            0);
        assert_int_equal(
            sim_store_add_charge(st, "r2", "t", "o2", false, "{\"id\":\"d\"}"),
            0);
        /* same order id in another tenant is another order */
        assert_int_equal(
            sim_store_add_charge(st, "r3", "u", "o1", true, "{\"id\":\"e\"}"),
            0);
        s = sim_store_stats(st, false);
        assert_int_equal(stat_int(s, "charges"), 4);
        assert_int_equal(stat_int(s, "succeeded_charges"), 4);
        assert_int_equal(stat_int(s, "failed_charges"), 1);
        assert_int_equal(stat_int(s, "double_charges"), 2);
        orders = json_object_get(s, "by_order");
        assert_int_equal(json_array_size(orders), 3);
        assert_int_equal(stat_int(json_array_get(orders, 0), "charges"), 3);
        assert_string_equal(json_string_value(json_object_get(
                                json_array_get(orders, 2), "tenant_id")),
                            "u");
        assert_int_equal(json_array_size(json_object_get(s, "by_reference")),
                         3);
        json_decref(s);

        list = sim_store_charges_by_reference(st, "r1");
        assert_string_equal(list, "{\"data\":[{\"id\":\"a\"},{\"id\":\"b\"},"
                                  "{\"id\":\"c\"}]}");
        free(list);
        list = sim_store_charges_by_reference(st, "nope");
        assert_string_equal(list, "{\"data\":[]}");
        free(list);

        s = sim_store_stats(st, true);
        assert_null(json_object_get(s, "by_order"));
        json_decref(s);
        sim_store_reset(st);
        s = sim_store_stats(st, false);
        assert_int_equal(stat_int(s, "charges"), 0);
        assert_int_equal(stat_int(s, "double_charges"), 0);
        assert_int_equal(json_array_size(json_object_get(s, "by_order")), 0);
        json_decref(s);
        sim_store_destroy(st);
}

static void many_keys_grow_the_table(void **state)
{
        struct sim_store *st = sim_store_new();
        uint64_t gen;
        char *body;
        int status, i;
        char key[32];

        (void)state;
        for (i = 0; i < 5000; i++) {
                snprintf(key, sizeof(key), "key-%d", i);
                assert_int_equal(sim_store_key_begin(st, key, fp1, 0, 1000,
                                                     &gen, &status, &body),
                                 SIM_KEY_NEW);
                sim_store_key_finish(st, key, gen, 200, key, 0);
        }
        for (i = 0; i < 5000; i += 499) {
                snprintf(key, sizeof(key), "key-%d", i);
                assert_int_equal(sim_store_key_begin(st, key, fp1, 1, 1000,
                                                     &gen, &status, &body),
                                 SIM_KEY_REPLAY);
                assert_string_equal(body, key);
                free(body);
        }
        assert_int_equal(sim_store_next_post(st), 0);
        assert_int_equal(sim_store_next_post(st), 1);
        sim_store_restart_sequence(st);
        assert_int_equal(sim_store_next_post(st), 0);
        sim_store_destroy(st);
}

int main(void)
{
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(key_life_cycle),
                cmocka_unit_test(sweep_forgets_old_done_keys),
                cmocka_unit_test(charges_and_double_charges),
                cmocka_unit_test(many_keys_grow_the_table),
        };

        return cmocka_run_group_tests(tests, NULL, NULL);
}
