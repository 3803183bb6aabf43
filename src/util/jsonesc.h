/* SPDX-License-Identifier: Apache-2.0 */
/*
 * jsonesc: escaping an untrusted byte string for a JSON string literal.
 * Pure, no allocation, any thread. The output is always valid UTF-8 and a
 * valid JSON string body, whatever the input.
 */
#ifndef CO_JSONESC_H
#define CO_JSONESC_H

#include <stddef.h>

/*
 * Escapes s[0..len) into out (at most outsz - 1 bytes, always
 * NUL-terminated when outsz > 0): '"' and '\' are escaped, control bytes
 * and DEL become \n, \t or \u00XX, valid UTF-8 is copied as is and each
 * byte of an invalid sequence becomes \ufffd. When out is too small the
 * output is cut before the first escape or UTF-8 character that does not
 * fit whole, never inside one; s is not read past that point, so a long
 * input costs only what fits. Returns the bytes written;
 * *consumed (may be NULL) is set to the input bytes they stand for, len
 * when nothing was cut.
 */
size_t json_escape_n(const char *s, size_t len, char *out, size_t outsz,
                     size_t *consumed);

/* json_escape_n() without *consumed. */
size_t json_escape(const char *s, size_t len, char *out, size_t outsz);

#endif
