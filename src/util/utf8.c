/* SPDX-License-Identifier: Apache-2.0 */
/* utf8: validation, cleaning and cutting of untrusted text (see utf8.h). */
#include "util/utf8.h"

#include <string.h>

size_t utf8_seq_len(const char *str, size_t len)
{
        const unsigned char *s = (const unsigned char *)str;
        unsigned c;
        size_t n;

        if (len == 0)
                return 0;
        c = s[0];
        if (c < 0x80)
                return 1;
        if (c < 0xC2 || c > 0xF4) /* continuation, overlong lead, > U+10FFFF */
                return 0;
        n = c < 0xE0 ? 2 : c < 0xF0 ? 3 : 4;
        if (len < n)
                return 0;
        for (size_t i = 1; i < n; i++)
                if ((s[i] & 0xC0) != 0x80)
                        return 0;
        if (c == 0xE0 && s[1] < 0xA0) /* overlong 3-byte */
                return 0;
        if (c == 0xED && s[1] > 0x9F) /* surrogates */
                return 0;
        if (c == 0xF0 && s[1] < 0x90) /* overlong 4-byte */
                return 0;
        if (c == 0xF4 && s[1] > 0x8F) /* past U+10FFFF */
                return 0;
        return n;
}

bool utf8_valid(const char *s, size_t len)
{
        size_t i = 0;

        while (i < len) {
                size_t n = utf8_seq_len(s + i, len - i);

                if (n == 0)
                        return false;
                i += n;
        }
        return true;
}

size_t utf8_count(const char *s, size_t len)
{
        size_t i = 0, chars = 0;

        while (i < len) {
                size_t n = utf8_seq_len(s + i, len - i);

                i += n == 0 ? 1 : n;
                chars++;
        }
        return chars;
}

size_t utf8_prefix(const char *s, size_t len, size_t max_chars,
                   size_t max_bytes)
{
        size_t i = 0, chars = 0;

        while (i < len && chars < max_chars) {
                size_t n = utf8_seq_len(s + i, len - i);

                if (n == 0)
                        n = 1;
                if (i + n > max_bytes)
                        break;
                i += n;
                chars++;
        }
        return i;
}

size_t utf8_clean(const char *s, size_t len, size_t max_chars, char *out,
                  size_t outsz, bool *cut)
{
        size_t i = 0, o = 0, chars = 0, cap;
        bool changed = false;

        if (outsz == 0) {
                if (cut != NULL)
                        *cut = len > 0;
                return 0;
        }
        cap = outsz - 1;
        while (i < len) {
                size_t n        = utf8_seq_len(s + i, len - i);
                const char *src = s + i;
                size_t w        = n;

                if (chars == max_chars) {
                        changed = true;
                        break;
                }
                if (n == 0 || (n == 1 && s[i] == '\0')) {
                        src     = UTF8_REPLACEMENT;
                        w       = sizeof(UTF8_REPLACEMENT) - 1;
                        n       = 1;
                        changed = true;
                }
                if (o + w > cap) {
                        changed = true;
                        break;
                }
                memcpy(out + o, src, w);
                o += w;
                i += n;
                chars++;
        }
        out[o] = '\0';
        if (cut != NULL)
                *cut = changed;
        return o;
}
