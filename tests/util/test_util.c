/* SPDX-License-Identifier: Apache-2.0 */
/* Unit tests of util: durations, RFC 3339, JSON escaping, base64, HMAC,
 * UUIDs and key masking. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "util/crypto.h"
#include "util/jsonesc.h"
#include "util/log.h"
#include "util/timeutil.h"
#include "util/uuid.h"

#include <stdlib.h>
#include <pthread.h>
#include <string.h>

static void test_duration(void **state)
{
        static const struct {
                const char *in;
                bool ok;
                int64_t ms;
        } cases[] = {
                { "250ms", true, 250 },
                { "10s", true, 10000 },
                { "10", true, 10000 },
                { "5m", true, 300000 },
                { "24h", true, 86400000 },
                { "7d", true, 604800000 },
                { "0ms", true, 0 },
                { "", false, 0 },
                { "-1s", false, 0 },
                { "1.5s", false, 0 },
                { "10 s", false, 0 },
                { "s", false, 0 },
                { "3w", false, 0 },
                { "99999999999999999999", false, 0 },
                { "9223372036854775807d", false, 0 },
        };
        (void)state;
        for (size_t i = 0; i < sizeof(cases) / sizeof(*cases); i++) {
                int64_t ms = -1;
                bool ok    = duration_parse(cases[i].in, &ms);
                assert_int_equal(ok, cases[i].ok);
                if (ok)
                        assert_int_equal(ms, cases[i].ms);
        }
        char buf[32];
        duration_format(86400000, buf, sizeof(buf));
        assert_string_equal(buf, "1d");
        duration_format(250, buf, sizeof(buf));
        assert_string_equal(buf, "250ms");
        duration_format(90000, buf, sizeof(buf));
        assert_string_equal(buf, "90s");
}

static void test_rfc3339(void **state)
{
        static const struct {
                const char *in;
                bool ok;
        } cases[] = {
                { "2026-11-29T10:47:03Z", true },
                { "2026-11-29T10:47:03.123Z", true },
                { "2026-11-29T10:47:03+07:00", true },
                { "2026-11-29t10:47:03z", true },
                { "2024-02-29T00:00:00Z", true },
                { "2023-02-29T00:00:00Z", false },
                { "2026-13-01T00:00:00Z", false },
                { "2026-04-31T00:00:00Z", false },
                { "2026-11-29 10:47:03Z", false },
                { "2026-11-29T24:00:00Z", false },
                { "2026-11-29T10:47:03", false },
                { "2026-11-29T10:47:03.Z", false },
                { "2026-11-29T10:47:03+0700", false },
                { "yesterday", false },
        };
        (void)state;
        for (size_t i = 0; i < sizeof(cases) / sizeof(*cases); i++)
                assert_int_equal(
                    rfc3339_valid(cases[i].in, strlen(cases[i].in)),
                    cases[i].ok);
        char buf[64];
        rfc3339_format(1764413223123LL, buf, sizeof(buf));
        assert_string_equal(buf, "2025-11-29T10:47:03.123Z");
        assert_true(rfc3339_valid(buf, strlen(buf)));
}

static void test_json_escape(void **state)
{
        char out[64];
        (void)state;
        json_escape("a\"b\\c\nd\x01", 8, out, sizeof(out));
        assert_string_equal(out, "a\\\"b\\\\c\\nd\\u0001");
        /* cut at a whole escape, always terminated */
        json_escape("\"\"\"\"", 4, out, 6);
        assert_string_equal(out, "\\\"\\\"");
}

/* Vectors from `openssl dgst -sha256 -hmac KEY` (another tool): five
 * keys, one more than the per-thread cache of keyed contexts holds, each
 * used three times in turn, so that cached, evicted and re-made contexts
 * all give the right MAC; and the same from a second thread. */
static const char *const hmac_keys[5]   = { "k1", "k2", "k3", "k4", "k5" };
static const char *const hmac_expect[5] = {
        "e500d37f6ca758493826f0ae182eaa12a68576a1505feb922de96be461e52315",
        "d30cd07c162cfd429c6bf87517599fc333cc758691c9f69e1ff9f5d507cd15c6",
        "622c27af90b14f26579b273d0dea1387765052a14adf993075e018c18f698ad8",
        "446b28a7c67945afb8291ebfe99919d16a7ab334599444b30734b77ba7c3a88f",
        "a21867ef6422abd635f10d9f31d2e0385f35d910cd637f234489dbcd5c3a5308",
};

static void *hmac_rounds(void *arg)
{
        int *bad = arg;

        for (int round = 0; round < 3; round++)
                for (int k = 0; k < 5; k++) {
                        unsigned char d[32];
                        char hex[65];

                        crypto_hmac_sha256(hmac_keys[k], 2, "payment-123", 11,
                                           d);
                        crypto_hex(d, 32, hex);
                        *bad += strcmp(hex, hmac_expect[k]) != 0;
                }
        return NULL;
}

static void test_crypto_hmac_keys(void **state)
{
        int bad = 0, bad2 = 0;
        pthread_t th;
        unsigned char d[32];
        char hex[65];

        (void)state;
        (void)hmac_rounds(&bad);
        assert_int_equal(bad, 0);
        assert_int_equal(pthread_create(&th, NULL, hmac_rounds, &bad2), 0);
        assert_int_equal(pthread_join(th, NULL), 0);
        assert_int_equal(bad2, 0);
        /* the empty key (RFC 2104 allows it) */
        crypto_hmac_sha256("", 0, "", 0, d);
        crypto_hex(d, 32, hex);
        assert_string_equal(hex, "b613679a0814d9ec772f95d778c35fc5"
                                 "ff1697c493715653c6c712144292c5ad");
}

static void test_crypto(void **state)
{
        unsigned char d[32], raw[64];
        char hex[65], b64[64];
        (void)state;
        /* RFC 4231 test case 2 */
        crypto_hmac_sha256("Jefe", 4, "what do ya want for nothing?", 28, d);
        crypto_hex(d, 32, hex);
        assert_string_equal(hex, "5bdcc146bf60754e6a042426089575c7"
                                 "5a003f089d2739839dec58b964ec3843");
        crypto_sha256("abc", 3, d);
        crypto_hex(d, 32, hex);
        assert_string_equal(hex, "ba7816bf8f01cfea414140de5dae2223"
                                 "b00361a396177a9cb410ff61f20015ad");
        crypto_base64_encode((const unsigned char *)"hello", 5, b64);
        assert_string_equal(b64, "aGVsbG8=");
        assert_int_equal(crypto_base64_decode("aGVsbG8=", 8, raw, sizeof(raw)),
                         5);
        assert_memory_equal(raw, "hello", 5);
        assert_int_equal(crypto_base64_decode("aGVsbA==", 8, raw, sizeof(raw)),
                         4);
        assert_int_equal(crypto_base64_decode("aGVsbG8", 7, raw, sizeof(raw)),
                         -1);
        assert_int_equal(crypto_base64_decode("aGV$bG8=", 8, raw, sizeof(raw)),
                         -1);
        assert_int_equal(crypto_base64_decode("aGVsbG8=", 8, raw, 3), -1);
        assert_int_equal(crypto_base64_decode("aGVsbG8=", 8, raw, 4), -1);
        assert_int_equal(crypto_base64_decode("aGVsbG8=", 8, raw, 5), 5);
        {
                /* longer than any fixed buffer: 12,000 bytes */
                enum { N = 12000 };
                unsigned char *in = malloc(N), *out = malloc(N);
                char *enc = malloc(4 * ((N + 2) / 3) + 1);
                size_t elen;
                for (size_t i = 0; i < N; i++)
                        in[i] = (unsigned char)(i * 7);
                elen = crypto_base64_encode(in, N, enc);
                assert_int_equal(elen, 16000);
                assert_int_equal(crypto_base64_decode(enc, elen, out, N), N);
                assert_memory_equal(in, out, N);
                free(in);
                free(out);
                free(enc);
        }
        assert_true(crypto_equal("abc", "abc", 3));
        assert_false(crypto_equal("abc", "abd", 3));
}

static void test_uuid(void **state)
{
        char a[UUID_STR_LEN], b[UUID_STR_LEN];
        (void)state;
        assert_true(uuid_v4(a));
        assert_true(uuid_v4(b));
        assert_true(uuid_valid(a, strlen(a)));
        assert_string_not_equal(a, b);
        assert_int_equal(a[14], '4');
        assert_true(strchr("89ab", a[19]) != NULL);
        assert_false(uuid_valid("not-a-uuid", 10));
        assert_false(uuid_valid("123e4567-e89b-12d3-a456-42661417400g", 36));
        assert_true(uuid_valid("123E4567-E89B-12D3-A456-426614174000", 36));
}

static void test_mask_key(void **state)
{
        char m[LOG_MASKED_KEY_SIZE];
        const char *key = "order-10063-9f8e7d6c5b4a";
        (void)state;
        log_mask_key(key, strlen(key), m, sizeof(m));
        assert_int_equal(strncmp(m, "ord***", 6), 0);
        assert_int_equal(strlen(m), 6 + 8);
        assert_null(strstr(m, "10063"));
        /* same key, same mask: lines can be correlated */
        char m2[LOG_MASKED_KEY_SIZE];
        log_mask_key(key, strlen(key), m2, sizeof(m2));
        assert_string_equal(m, m2);
        /* short keys show no prefix at all */
        log_mask_key("abc", 3, m, sizeof(m));
        assert_int_equal(strncmp(m, "***", 3), 0);
}

/* A keyed hash: HMAC-SHA256 under the mask key, never the plain SHA-256
 * (242745d9... for this key) that anyone could brute-force. Expected:
 *   python3 -c 'import hmac,hashlib; print(hmac.new(
 *     b"0123456789abcdef0123456789abcdef",
 *     b"order-10063-9f8e7d6c5b4a", hashlib.sha256).hexdigest()[:8])' */
static void test_mask_key_keyed(void **state)
{
        static const char k[] = "0123456789abcdef0123456789abcdef";
        const char *key       = "order-10063-9f8e7d6c5b4a";
        char m[LOG_MASKED_KEY_SIZE], other[LOG_MASKED_KEY_SIZE];
        (void)state;

        log_set_mask_key(k, sizeof(k) - 1);
        log_mask_key(key, strlen(key), m, sizeof(m));
        assert_string_equal(m, "ord***dd1ae07c");
        /* another deployment's key: another mask */
        log_set_mask_key("another deployment", 18);
        log_mask_key(key, strlen(key), other, sizeof(other));
        assert_string_not_equal(m, other);
        assert_int_equal(strncmp(other, "ord***", 6), 0);
        log_clear_mask_key();
}

int main(void)
{
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_duration),
                cmocka_unit_test(test_rfc3339),
                cmocka_unit_test(test_json_escape),
                cmocka_unit_test(test_crypto),
                cmocka_unit_test(test_crypto_hmac_keys),
                cmocka_unit_test(test_uuid),
                cmocka_unit_test(test_mask_key),
                cmocka_unit_test(test_mask_key_keyed),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
