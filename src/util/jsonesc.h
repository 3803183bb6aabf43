/* jsonesc: escaping a byte string for a JSON string literal. Pure. */
#ifndef CO_JSONESC_H
#define CO_JSONESC_H

#include <stddef.h>

/*
 * Escapes s[0..len) into out (at most outsz - 1 bytes, always
 * NUL-terminated when outsz > 0), cutting at a whole escape. Control bytes
 * become \u00XX; bytes >= 0x80 are copied as is. Returns bytes written.
 */
size_t json_escape(const char *s, size_t len, char *out, size_t outsz);

#endif
