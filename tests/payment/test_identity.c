/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Fixed vectors of the derived ids (payment/identity.h). A re-claim after
 * the database lost commits must find the payment id (hence the provider
 * key) the gateway already knows, so these bytes may never change. The
 * expected values were NOT produced by the code under test: they come from
 * Python's hmac and hashlib, by this program (u8 cuts a digest to a
 * version 8 UUID):
 *
 *   import hmac, hashlib
 *   def u8(d):
 *       b = bytearray(d[:16]); b[6] = (b[6] & 0x0f) | 0x80
 *       b[8] = (b[8] & 0x3f) | 0x80; h = b.hex()
 *       return f"{h[:8]}-{h[8:12]}-{h[12:16]}-{h[16:20]}-{h[20:]}"
 *   def pid(secret, t, k, rh): return u8(hmac.new(secret,
 *       b"chargeonce/payment-id/v1\0" + t + b"\0" + k + b"\0" + rh,
 *       hashlib.sha256).digest())
 *   def rid(p, s): return u8(hashlib.sha256(
 *       b"chargeonce/result/v1\0payment\0" + p + b"\0" + s).digest())
 *   def aid(t, e, s, r): return u8(hashlib.sha256(
 *       b"chargeonce/result/v1\0answer\0" + t + b"\0" + e + b"\0" + s +
 *       b"\0" + (b"1" if r else b"0")).digest())
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "payment/identity.h"
#include "payment/provider_key.h"

#include <string.h>

#define SECRET     ((const unsigned char *)"test-provider-key-secret")
#define SECRET_LEN 24

static unsigned char seq32[32];   /* 0x00..0x1f */
static unsigned char ff32[32];    /* 0xff x 32 */
static unsigned char zero32[32];  /* 0x00 x 32 */
static unsigned char seq100[100]; /* 0x00..0x63 */

static int setup(void **state)
{
        (void)state;
        for (int i = 0; i < 32; i++) {
                seq32[i] = (unsigned char)i;
                ff32[i]  = 0xff;
        }
        for (int i = 0; i < 100; i++)
                seq100[i] = (unsigned char)i;
        return 0;
}

static void check_pid(const unsigned char *secret, size_t secret_len,
                      const char *tenant, const char *key,
                      const unsigned char *hash, const char *want)
{
        char got[UUID_STR_LEN];

        payment_id_derive(secret, secret_len, tenant, key, hash, got);
        assert_string_equal(got, want);
        assert_true(uuid_valid(got, strlen(got)));
}

static void payment_ids(void **state)
{
        unsigned char x_hash[CRYPTO_SHA256_LEN];

        (void)state;
        /* pid(b"test-provider-key-secret", b"shop-1", b"order-10063-try",
         *     bytes(range(32))) */
        check_pid(SECRET, SECRET_LEN, "shop-1", "order-10063-try", seq32,
                  "95ee2791-c0a9-8311-96c1-14a4e37c4228");
        /* the same key in another tenant: another payment */
        check_pid(SECRET, SECRET_LEN, "shop-2", "order-10063-try", seq32,
                  "029c0e63-6f14-8d5d-8bba-fdf8b6744eb3");
        /* another request hash (a key reused for another request) */
        check_pid(SECRET, SECRET_LEN, "shop-1", "order-10063-try", ff32,
                  "14f75a12-299c-8e58-8956-b7f220dd822d");
        /* pid(b"", b"t", b"k", bytes(32)) */
        check_pid((const unsigned char *)"", 0, "t", "k", zero32,
                  "f59735c3-27c6-82b6-b5e5-3dad3f785c7b");
        /* pid(bytes(range(100)), b"A.b-c_9", b"~!key with spaces!~",
         *     hashlib.sha256(b"x").digest()): a secret longer than a
         * block, every kind of tenant and key character */
        crypto_sha256("x", 1, x_hash);
        check_pid(seq100, sizeof(seq100), "A.b-c_9", "~!key with spaces!~",
                  x_hash, "86777a8b-86ed-8b57-a0c4-858732db961b");
}

/* The field boundaries matter: moving a character from the tenant to the
 * key is another intent. */
static void boundaries(void **state)
{
        char a[UUID_STR_LEN], b[UUID_STR_LEN];

        (void)state;
        payment_id_derive(SECRET, SECRET_LEN, "ab", "c", seq32, a);
        payment_id_derive(SECRET, SECRET_LEN, "a", "bc", seq32, b);
        assert_string_not_equal(a, b);
        /* the secret matters */
        payment_id_derive(SECRET, SECRET_LEN - 1, "ab", "c", seq32, b);
        assert_string_not_equal(a, b);
}

/* The provider key follows from the derived id, the same every time. */
static void provider_key_of_derived(void **state)
{
        char id[UUID_STR_LEN], k1[PAYMENT_PROVIDER_KEY_LEN],
            k2[PAYMENT_PROVIDER_KEY_LEN];

        (void)state;
        payment_id_derive(SECRET, SECRET_LEN, "shop-1", "order-10063-try",
                          seq32, id);
        payment_provider_key(SECRET, SECRET_LEN, id, k1);
        payment_id_derive(SECRET, SECRET_LEN, "shop-1", "order-10063-try",
                          seq32, id);
        payment_provider_key(SECRET, SECRET_LEN, id, k2);
        assert_string_equal(k1, k2);
}

static void result_ids(void **state)
{
        char got[UUID_STR_LEN];

        (void)state;
        /* rid(b"8f0e7a3c-1d2b-8c4d-9e5f-0a1b2c3d4e5f", b"succeeded") */
        payment_result_event_id("8f0e7a3c-1d2b-8c4d-9e5f-0a1b2c3d4e5f",
                                "succeeded", got);
        assert_string_equal(got, "742521a5-00d2-81af-9955-ac4508007468");
        payment_result_event_id("8f0e7a3c-1d2b-8c4d-9e5f-0a1b2c3d4e5f",
                                "review", got);
        assert_string_equal(got, "fbae6ed4-f317-831e-8907-39d8c334ed34");
        /* aid(b"shop-1", b"6f1c2a3e-8b4d-4e5f-9a0b-1c2d3e4f5a6b",
         *     b"conflict", False) */
        payment_answer_event_id("shop-1",
                                "6f1c2a3e-8b4d-4e5f-9a0b-1c2d3e4f5a6b",
                                "conflict", false, got);
        assert_string_equal(got, "511e879a-fe6b-809d-a77b-45d449e61506");
        payment_answer_event_id("shop-1",
                                "6f1c2a3e-8b4d-4e5f-9a0b-1c2d3e4f5a6b",
                                "succeeded", true, got);
        assert_string_equal(got, "dd5e58ad-522c-822b-a3db-bb708b6da5d8");
        /* an event key of a message without a UUID event id:
         * aid(b"shop-1", b"sha256:" + b"ab" * 32, b"rejected", False) */
        payment_answer_event_id("shop-1",
                                "sha256:abababababababababababababababab"
                                "abababababababababababababababab",
                                "rejected", false, got);
        assert_string_equal(got, "8a76dc11-1031-8067-813d-ad607fb89b3d");
}

int main(void)
{
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(payment_ids),
                cmocka_unit_test(boundaries),
                cmocka_unit_test(provider_key_of_derived),
                cmocka_unit_test(result_ids),
        };
        return cmocka_run_group_tests(tests, setup, NULL);
}
