/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Fixed vectors of the provider key (payment/provider_key.h). Every charge
 * ever sent carries this key, so the expected values were NOT produced by
 * the code under test: each was computed independently with Python's hmac
 * module, by the command written above it. A change to the derivation
 * (other hash, other encoding, upper-case hex, the uuid parsed to bytes, a
 * secret cut at a NUL) fails here.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "payment/provider_key.h"

#include <string.h>

struct vector {
        const char *name;
        const unsigned char *secret;
        size_t secret_len;
        const char *payment_id;
        const char *key;
};

/* 100 bytes 0x00..0x63: longer than SHA-256's 64-byte block, so HMAC
 * hashes the secret first; it also starts with a NUL. */
static unsigned char long_secret[100];

/* Non-ASCII bytes, UTF-8 and not, with a NUL inside. */
static const unsigned char odd_secret[] = "s\xc3\xa9"
                                          "cr\xc3\xa8t\x00\xff\x80\x01";

static const struct vector vectors[] = {
        /* python3 -c 'import hmac,hashlib; print(hmac.new(
         *   b"test-provider-key-secret",
         *   b"6f1c2a3e-8b4d-4e5f-9a0b-1c2d3e4f5a6b",
         *   hashlib.sha256).hexdigest())' */
        { "ordinary secret, uuid payment id",
          (const unsigned char *)"test-provider-key-secret", 24,
          "6f1c2a3e-8b4d-4e5f-9a0b-1c2d3e4f5a6b",
          "ac4e3050c0d0f80035ece7b1a9784ed81cce15bcc4a6c8ac7ba60daa015e8256" },
        /* the same with the uuid text in upper case: the key is over the
         * text as given, never a normalized or parsed form
         * python3 -c 'import hmac,hashlib; print(hmac.new(
         *   b"test-provider-key-secret",
         *   b"6F1C2A3E-8B4D-4E5F-9A0B-1C2D3E4F5A6B",
         *   hashlib.sha256).hexdigest())' */
        { "upper-case uuid text",
          (const unsigned char *)"test-provider-key-secret", 24,
          "6F1C2A3E-8B4D-4E5F-9A0B-1C2D3E4F5A6B",
          "08a65073c794b1eff1c168f52c4c3020bd6c59d148679c02a7e59697802ad025" },
        /* python3 -c 'import hmac,hashlib; print(hmac.new(b"k",
         *   b"00000000-0000-4000-8000-000000000000",
         *   hashlib.sha256).hexdigest())' */
        { "one-byte secret", (const unsigned char *)"k", 1,
          "00000000-0000-4000-8000-000000000000",
          "95aac85cc4e727ec61381736e236f83d74eb7d50f945eee57bcb5a2a5d86a39e" },
        /* python3 -c 'import hmac,hashlib; print(hmac.new(b"",
         *   b"00000000-0000-4000-8000-000000000000",
         *   hashlib.sha256).hexdigest())' */
        { "empty secret", (const unsigned char *)"", 0,
          "00000000-0000-4000-8000-000000000000",
          "d0f706befc4122c8d8c9c0f921cee99bb2ba5efb388cc2905c509705077ff36d" },
        /* python3 -c 'import hmac,hashlib; print(hmac.new(b"x" * 64,
         *   b"123e4567-e89b-42d3-a456-426614174000",
         *   hashlib.sha256).hexdigest())' */
        { "secret of exactly one block",
          (const unsigned char *)"xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx"
                                 "xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx",
          64, "123e4567-e89b-42d3-a456-426614174000",
          "b5dcf683da5603f1a9f309020d20b6d041e60f19e89526ca84bfcdab3e1d772a" },
        /* python3 -c 'import hmac,hashlib; print(hmac.new(bytes(range(100)),
         *   b"ffffffff-ffff-4fff-bfff-ffffffffffff",
         *   hashlib.sha256).hexdigest())' */
        { "100-byte secret", long_secret, sizeof(long_secret),
          "ffffffff-ffff-4fff-bfff-ffffffffffff",
          "731c73cacca2827dc3efdae45b4fe46815dfd3bbc36a1b42eab8856a16a885fa" },
        /* python3 -c 'import hmac,hashlib; print(hmac.new(
         *   b"s\xc3\xa9cr\xc3\xa8t\x00\xff\x80\x01",
         *   b"123e4567-e89b-42d3-a456-426614174000",
         *   hashlib.sha256).hexdigest())' */
        { "non-ASCII secret with a NUL", odd_secret, sizeof(odd_secret) - 1,
          "123e4567-e89b-42d3-a456-426614174000",
          "1d3d23c4f1d0c3719fd5c22b242efa119210bca7854e19699ba30569849cf365" },
};

static int setup(void **state)
{
        (void)state;
        for (size_t i = 0; i < sizeof(long_secret); i++)
                long_secret[i] = (unsigned char)i;
        return 0;
}

static void test_fixed_vectors(void **state)
{
        (void)state;
        assert_int_equal(sizeof(odd_secret) - 1, 12);
        for (size_t i = 0; i < sizeof(vectors) / sizeof(vectors[0]); i++) {
                const struct vector *v = &vectors[i];
                char out[PAYMENT_PROVIDER_KEY_LEN];

                memset(out, 'Z', sizeof(out));
                payment_provider_key(v->secret, v->secret_len, v->payment_id,
                                     out);
                if (strcmp(out, v->key) != 0)
                        fail_msg("%s: got %s", v->name, out);
        }
}

/* A NULL secret of length 0 is the empty secret (the claim allows it). */
static void test_null_empty_secret(void **state)
{
        char out[PAYMENT_PROVIDER_KEY_LEN];

        (void)state;
        payment_provider_key(NULL, 0, "00000000-0000-4000-8000-000000000000",
                             out);
        assert_string_equal(out, vectors[3].key);
}

/* The key fills its buffer exactly: 64 lower-case hex digits and a NUL. */
static void test_shape(void **state)
{
        char out[PAYMENT_PROVIDER_KEY_LEN];

        (void)state;
        assert_int_equal(PAYMENT_PROVIDER_KEY_LEN, 65);
        payment_provider_key((const unsigned char *)"s", 1, "p", out);
        assert_int_equal(strlen(out), 64);
        assert_int_equal(strspn(out, "0123456789abcdef"), 64);
}

int main(void)
{
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_fixed_vectors),
                cmocka_unit_test(test_null_empty_secret),
                cmocka_unit_test(test_shape),
        };
        return cmocka_run_group_tests(tests, setup, NULL);
}
