/* SPDX-License-Identifier: Apache-2.0 */
/*
 * buf: a growable byte buffer with a hard maximum size, for text built
 * piece by piece (array literals, canonical forms, response bodies).
 * Pure (libc only); one buffer belongs to one thread at a time.
 *
 * Over the limit never aborts (out of memory ends the process, as
 * everywhere: util/xalloc.h): the call that cannot grow the buffer
 * returns -1, leaves the contents exactly as they were before it, and
 * marks the buffer failed (err says why). A failed buffer stays failed:
 * every later append does nothing and returns -1, until buf_reset() or
 * buf_free(). So a caller may append many pieces and check once at the
 * end (buf_failed()); that is why the appends are not marked
 * CO_MUST_CHECK, and buf_detach() is.
 *
 * Must never write past its allocation, hold more than `max` bytes, or
 * leave data without its terminating NUL once anything was appended.
 */
#ifndef CO_UTIL_BUF_H
#define CO_UTIL_BUF_H

#include "util/compiler.h"

#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>

/* The largest `max` a buffer takes (larger values are lowered to it). */
#define BUF_MAX_LIMIT ((size_t)-1 / 2)

/*
 * The fields are for reading: data[0..len) is the content, NUL-terminated
 * (data[len] == '\0') once anything was appended or reserved; data is NULL
 * before. Change them only through the functions below.
 */
struct buf {
        char *data; /* owned: buf_free() or buf_detach() */
        size_t len; /* content bytes, the NUL not counted */
        size_t cap; /* bytes allocated, the NUL's included */
        size_t max; /* len never goes above this */
        int err;    /* 0, or why it failed: EMSGSIZE (over max),
                     * EILSEQ (buf_appendf's encoding error) */
};

/* An empty buffer that may hold up to max bytes; allocates nothing. */
void buf_init(struct buf *b, size_t max);

/*
 * Makes room for `more` bytes after the content (and the NUL) so that the
 * appends filling them cannot fail. 0, or -1 as described above.
 */
int buf_reserve(struct buf *b, size_t more);

/* Appends p[0..n) (any bytes, NULs included). 0, or -1. */
int buf_append(struct buf *b, const void *p, size_t n);
/* Appends the NUL-terminated s without its NUL. 0, or -1. */
int buf_append_str(struct buf *b, const char *s);
/* Appends one byte. 0, or -1. */
int buf_append_char(struct buf *b, char c);
/*
 * Appends printf-formatted text. 0, or -1 (also for an encoding error of
 * vsnprintf, which marks the buffer failed like the rest).
 */
int buf_appendf(struct buf *b, const char *fmt, ...) CO_PRINTF(2, 3);
int buf_vappendf(struct buf *b, const char *fmt, va_list ap) CO_PRINTF(2, 0);

/* True once an append or reserve has failed (see above). */
bool buf_failed(const struct buf *b);

/* The content as a string: data, or "" before anything was appended. */
const char *buf_str(const struct buf *b);

/*
 * Hands the content over: returns data (NUL-terminated, owned by the
 * caller: free()) and its length in *len (may be NULL; 0 with NULL), and
 * leaves b empty as after buf_init with the same max. A failed buffer is
 * freed and NULL returned (the only NULL: an empty buffer gives "").
 */
char *buf_detach(struct buf *b, size_t *len) CO_MUST_CHECK;

/* Empties b and clears its failure; keeps the allocation for reuse. */
void buf_reset(struct buf *b);

/* Frees the allocation; b is then empty as after buf_init (same max). */
void buf_free(struct buf *b);

#endif
