/* SPDX-License-Identifier: Apache-2.0 */
/*
 * test_siphash: util/siphash is SipHash-2-4. Pinned by the 64 vectors of
 * the reference implementation (key 00 01 .. 0f, message 00 01 .. of
 * each length 0..63; the first, of the empty message, 0x726fdb47dd0e0e31,
 * the one of 15 bytes, 0xa129ca6149be45e5, printed in the paper), as
 * computed by a Python reimplementation of the paper and by
 * `openssl mac -macopt hexkey:000102030405060708090a0b0c0d0e0f
 * -macopt size:8 SIPHASH` (the three agree); and checked here against
 * OpenSSL's EVP_MAC "SIPHASH", an implementation of its own, on random
 * keys, lengths and alignments. Then: the hash is keyed.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "util/crypto.h"
#include "util/siphash.h"

#include <stdlib.h>
#include <string.h>

#include <openssl/core_names.h>
#include <openssl/evp.h>
#include <openssl/params.h>

static const uint64_t vectors[64] = {
        0x726fdb47dd0e0e31ULL, 0x74f839c593dc67fdULL, 0x0d6c8009d9a94f5aULL,
        0x85676696d7fb7e2dULL, 0xcf2794e0277187b7ULL, 0x18765564cd99a68dULL,
        0xcbc9466e58fee3ceULL, 0xab0200f58b01d137ULL, 0x93f5f5799a932462ULL,
        0x9e0082df0ba9e4b0ULL, 0x7a5dbbc594ddb9f3ULL, 0xf4b32f46226bada7ULL,
        0x751e8fbc860ee5fbULL, 0x14ea5627c0843d90ULL, 0xf723ca908e7af2eeULL,
        0xa129ca6149be45e5ULL, 0x3f2acc7f57c29bdbULL, 0x699ae9f52cbe4794ULL,
        0x4bc1b3f0968dd39cULL, 0xbb6dc91da77961bdULL, 0xbed65cf21aa2ee98ULL,
        0xd0f2cbb02e3b67c7ULL, 0x93536795e3a33e88ULL, 0xa80c038ccd5ccec8ULL,
        0xb8ad50c6f649af94ULL, 0xbce192de8a85b8eaULL, 0x17d835b85bbb15f3ULL,
        0x2f2e6163076bcfadULL, 0xde4daaaca71dc9a5ULL, 0xa6a2506687956571ULL,
        0xad87a3535c49ef28ULL, 0x32d892fad841c342ULL, 0x7127512f72f27cceULL,
        0xa7f32346f95978e3ULL, 0x12e0b01abb051238ULL, 0x15e034d40fa197aeULL,
        0x314dffbe0815a3b4ULL, 0x027990f029623981ULL, 0xcadcd4e59ef40c4dULL,
        0x9abfd8766a33735cULL, 0x0e3ea96b5304a7d0ULL, 0xad0c42d6fc585992ULL,
        0x187306c89bc215a9ULL, 0xd4a60abcf3792b95ULL, 0xf935451de4f21df2ULL,
        0xa9538f0419755787ULL, 0xdb9acddff56ca510ULL, 0xd06c98cd5c0975ebULL,
        0xe612a3cb9ecba951ULL, 0xc766e62cfcadaf96ULL, 0xee64435a9752fe72ULL,
        0xa192d576b245165aULL, 0x0a8787bf8ecb74b2ULL, 0x81b3e73d20b49b6fULL,
        0x7fa8220ba3b2eceaULL, 0x245731c13ca42499ULL, 0xb78dbfaf3a8d83bdULL,
        0xea1ad565322a1a0bULL, 0x60e61c23a3795013ULL, 0x6606d7e446282b93ULL,
        0x6ca4ecb15c5f91e1ULL, 0x9f626da15c9625f3ULL, 0xe51b38608ef25f57ULL,
        0x958a324ceb064572ULL,
};

static void test_reference_vectors(void **state)
{
        unsigned char kb[SIPHASH_KEY_LEN], msg[64];
        struct siphash_key k;
        (void)state;
        for (int i = 0; i < 16; i++)
                kb[i] = (unsigned char)i;
        for (int i = 0; i < 64; i++)
                msg[i] = (unsigned char)i;
        siphash_key_set(&k, kb);
        assert_true(siphash_u64(&k, "", 0) == 0x726fdb47dd0e0e31ULL);
        assert_true(siphash_u64(&k, msg, 15) == 0xa129ca6149be45e5ULL);
        for (size_t n = 0; n < 64; n++) {
                if (siphash_u64(&k, msg, n) != vectors[n])
                        fail_msg("length %zu: %016llx, not %016llx", n,
                                 (unsigned long long)siphash_u64(&k, msg, n),
                                 (unsigned long long)vectors[n]);
        }
}

/* OpenSSL's SipHash-2-4 with an 8-byte output (its default is 16). */
static uint64_t openssl_siphash(EVP_MAC *mac, const unsigned char key[16],
                                const void *data, size_t len)
{
        EVP_MAC_CTX *ctx    = EVP_MAC_CTX_new(mac);
        unsigned int size   = 8;
        OSSL_PARAM params[] = {
                OSSL_PARAM_construct_uint(OSSL_MAC_PARAM_SIZE, &size),
                OSSL_PARAM_construct_end(),
        };
        unsigned char out[8];
        size_t outlen = 0;
        uint64_t v    = 0;

        assert_non_null(ctx);
        assert_true(EVP_MAC_init(ctx, key, 16, params));
        assert_true(EVP_MAC_update(ctx, data, len));
        assert_true(EVP_MAC_final(ctx, out, &outlen, sizeof(out)));
        assert_int_equal(outlen, 8);
        EVP_MAC_CTX_free(ctx);
        for (int i = 7; i >= 0; i--) /* little-endian, as the vectors */
                v = v << 8 | out[i];
        return v;
}

static void test_against_openssl(void **state)
{
        EVP_MAC *mac = EVP_MAC_fetch(NULL, "SIPHASH", NULL);
        unsigned char kb[SIPHASH_KEY_LEN], buf[300];
        struct siphash_key k;
        (void)state;
        if (!mac)
                skip(); /* an OpenSSL built without SipHash */
        /* the reference vectors again, through OpenSSL */
        for (int i = 0; i < 16; i++)
                kb[i] = (unsigned char)i;
        for (int i = 0; i < 64; i++)
                buf[i] = (unsigned char)i;
        for (size_t n = 0; n < 64; n++)
                assert_true(openssl_siphash(mac, kb, buf, n) == vectors[n]);
        /* random keys, every length to 256 at every alignment mod 8 */
        for (size_t n = 0; n <= 256; n++) {
                size_t off = n % 8;

                assert_true(crypto_random(kb, sizeof(kb)));
                assert_true(crypto_random(buf, sizeof(buf)));
                siphash_key_set(&k, kb);
                if (siphash_u64(&k, buf + off, n) !=
                    openssl_siphash(mac, kb, buf + off, n))
                        fail_msg("length %zu at offset %zu disagrees with "
                                 "OpenSSL",
                                 n, off);
        }
        EVP_MAC_free(mac);
}

static void test_keyed(void **state)
{
        struct siphash_key a, b, c;
        const char *in = "tenant-1/order-42";
        size_t n       = strlen(in);
        (void)state;
        siphash_key_random(&a);
        siphash_key_random(&b);
        assert_false(a.k0 == b.k0 && a.k1 == b.k1);
        /* the same input under two keys: two hashes (2^-64 by chance) */
        assert_true(siphash_u64(&a, in, n) == siphash_u64(&a, in, n));
        assert_true(siphash_u64(&a, in, n) != siphash_u64(&b, in, n));
        /* one bit of the key changes the hash */
        c = a;
        c.k1 ^= 1;
        assert_true(siphash_u64(&a, in, n) != siphash_u64(&c, in, n));
}

int main(void)
{
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_reference_vectors),
                cmocka_unit_test(test_against_openssl),
                cmocka_unit_test(test_keyed),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
