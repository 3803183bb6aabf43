/* SPDX-License-Identifier: Apache-2.0 */
/*
 * util/file: a whole (small) file into memory, for contents that may be
 * secret (a TLS private key): read with read(2) straight into the buffer
 * returned, so no stdio buffer keeps a copy in freed memory.
 */
#ifndef CO_UTIL_FILE_H
#define CO_UTIL_FILE_H

#include "util/compiler.h"

#include <stddef.h>

/*
 * Reads the file at path, at most max bytes, into a NUL-terminated
 * buffer (owned by the caller: free it, after crypto_wipe(p, *len) when
 * it may be secret); *len gets its length. NULL, with the reason in
 * errstr ("cannot open PATH: ...", "PATH is empty", "PATH is larger than
 * MAX bytes"), when it cannot be read, is empty or is too large. Any
 * thread.
 */
char *file_read(const char *path, size_t max, size_t *len, char *errstr,
                size_t errstr_size) CO_MUST_CHECK;

/* file_read() of a file holding a secret as text: trailing new lines
 * ("\n", "\r") cut (zeroed), *len the length left. */
char *file_read_secret(const char *path, size_t max, size_t *len, char *errstr,
                       size_t errstr_size) CO_MUST_CHECK;

#endif
