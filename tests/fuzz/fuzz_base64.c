/* SPDX-License-Identifier: Apache-2.0 */
/*
 * fuzz_base64: crypto_base64_encode() and crypto_base64_decode() on any
 * bytes (src/util/crypto.h).
 *
 * Invariants, for every input:
 *   - encoding fills exactly 4 * ceil(n / 3) characters of the buffer the
 *     header asks for, NUL-terminated, of the base64 alphabet, and
 *     decodes back to the input (into a buffer of exactly its size);
 *   - decoding the input as text either fails or returns at most the
 *     buffer size, writes nothing past it, and what it returns encodes
 *     back to the input (but for the unused low bits of the last
 *     character, which a lax decoder may ignore) and decodes again to the
 *     same bytes;
 *   - a buffer one byte too small makes the decode fail, not overflow.
 */
#include <stdbool.h>
#include <string.h>

#include "fuzz.h"
#include "util/crypto.h"

static bool b64_char(char c)
{
        return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') ||
               (c >= '0' && c <= '9') || c == '+' || c == '/';
}

/* Encodes in[0..n) into a heap buffer of exactly the advertised size. */
static char *encode(const unsigned char *in, size_t n, size_t *len)
{
        size_t want = 4 * ((n + 2) / 3);
        char *out   = malloc(want + 1);

        FUZZ_CHECK(out != NULL);
        *len = crypto_base64_encode(in, n, out);
        FUZZ_CHECK(*len == want);
        FUZZ_CHECK(out[want] == '\0' && strlen(out) == want);
        for (size_t i = 0; i < want; i++)
                FUZZ_CHECK(b64_char(out[i]) ||
                           (out[i] == '=' && i + 2 >= want));
        return out;
}

/* Decodes s[0..len) into a heap buffer of exactly outsz bytes. */
static long decode(const char *s, size_t len, size_t outsz, unsigned char **out)
{
        long n;

        *out = malloc(outsz ? outsz : 1);
        FUZZ_CHECK(*out != NULL);
        n = crypto_base64_decode(s, len, *out, outsz);
        FUZZ_CHECK(n >= -1 && (n < 0 || (size_t)n <= outsz));
        return n;
}

static void round_trip(const uint8_t *data, size_t size)
{
        size_t len;
        char *enc = encode(data, size, &len);
        unsigned char *dec;
        long n = decode(enc, len, size, &dec);

        FUZZ_CHECK(n == (long)size);
        FUZZ_CHECK(size == 0 || memcmp(dec, data, size) == 0);
        free(dec);
        if (size > 0) {
                FUZZ_CHECK(decode(enc, len, size - 1, &dec) == -1);
                free(dec);
        }
        free(enc);
}

static void decode_text(const uint8_t *data, size_t size)
{
        const char *s = (const char *)data;
        unsigned char *dec, *again;
        size_t elen, last;
        char *enc;
        long n = decode(s, size, size, &dec), m;

        if (n < 0) {
                free(dec);
                return;
        }
        enc = encode(dec, (size_t)n, &elen);
        FUZZ_CHECK(elen == size);
        /* the last character before the padding may differ in its unused
         * bits; everything else is the same text */
        last = size;
        while (last > 0 && s[last - 1] == '=')
                last--;
        for (size_t i = 0; i < size; i++)
                if (i + 1 != last)
                        FUZZ_CHECK(enc[i] == s[i]);
        m = decode(enc, elen, (size_t)n, &again);
        FUZZ_CHECK(m == n && (n == 0 || memcmp(again, dec, (size_t)n) == 0));
        free(again);
        if (n > 0) {
                FUZZ_CHECK(decode(s, size, (size_t)n - 1, &again) == -1);
                free(again);
        }
        free(enc);
        free(dec);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
        round_trip(data, size);
        decode_text(data, size);
        return 0;
}
