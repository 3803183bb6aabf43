/* SPDX-License-Identifier: Apache-2.0 */
/*
 * utf8: validating, cleaning and cutting untrusted text. Pure, no
 * allocation, any thread.
 *
 * "Valid" is RFC 3629: no overlong forms, no surrogates (U+D800..U+DFFF),
 * nothing above U+10FFFF. Every function here treats its input as hostile:
 * any byte string is accepted and the output is always valid UTF-8.
 */
#ifndef CO_UTF8_H
#define CO_UTF8_H

#include <stdbool.h>
#include <stddef.h>

/* The replacement character U+FFFD as UTF-8 (3 bytes). */
#define UTF8_REPLACEMENT "\xEF\xBF\xBD"

/*
 * Length (1-4) of the valid UTF-8 sequence at s[0..len), or 0 when s does
 * not start with one (a stray continuation byte, a truncated, overlong or
 * surrogate sequence, or a code point past U+10FFFF). 0 also when len is 0.
 */
size_t utf8_seq_len(const char *s, size_t len);

/* True if s[0..len) is valid UTF-8 (U+0000 allowed). */
bool utf8_valid(const char *s, size_t len);

/* Code points in s[0..len) (invalid bytes count one each). */
size_t utf8_count(const char *s, size_t len);

/*
 * Byte length of the longest prefix of the valid UTF-8 string s[0..len)
 * that has at most max_chars code points and at most max_bytes bytes,
 * always ending on a code-point boundary.
 */
size_t utf8_prefix(const char *s, size_t len, size_t max_chars,
                   size_t max_bytes);

/*
 * Copies s[0..len) into out (outsz bytes, NUL-terminated when outsz > 0)
 * as valid UTF-8: each invalid sequence becomes U+FFFD, U+0000 becomes
 * U+FFFD (a C string cannot hold it), and the text is cut on a code-point
 * boundary after max_chars code points or when out is full, whichever
 * comes first. *cut (may be NULL) is set when anything was dropped or
 * replaced. Returns the bytes written (without the NUL).
 */
size_t utf8_clean(const char *s, size_t len, size_t max_chars, char *out,
                  size_t outsz, bool *cut);

#endif
