/* SPDX-License-Identifier: Apache-2.0 */
/*
 * buf: the growable byte buffer (see buf.h). Capacity doubles from
 * BUF_MIN_CAP and never goes beyond max + 1 (the content and its NUL).
 * Never writes past cap, never grows past max; out of memory ends the
 * process (util/xalloc.h), nothing else does.
 */
#include "util/buf.h"
#include "util/xalloc.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define BUF_MIN_CAP 64

void buf_init(struct buf *b, size_t max)
{
        memset(b, 0, sizeof(*b));
        b->max = max < BUF_MAX_LIMIT ? max : BUF_MAX_LIMIT;
}

/* Marks b failed with why (the first reason stays) and returns -1. */
static int fail(struct buf *b, int why)
{
        if (b->err == 0)
                b->err = why;
        return -1;
}

int buf_reserve(struct buf *b, size_t more)
{
        size_t need, cap;
        char *p;

        if (b->err)
                return -1;
        if (more > b->max - b->len)
                return fail(b, EMSGSIZE);
        need = b->len + more + 1; /* <= max + 1 <= BUF_MAX_LIMIT + 1 */
        if (need <= b->cap)
                return 0;
        cap = b->cap ? b->cap : BUF_MIN_CAP;
        while (cap < need)
                cap *= 2; /* cannot wrap: need <= SIZE_MAX / 2 + 1 */
        if (cap > b->max + 1)
                cap = b->max + 1;
        p = xrealloc(b->data, cap); /* util/xalloc.h: the OOM policy */
        if (!b->data)
                p[0] = '\0';
        b->data = p;
        b->cap  = cap;
        return 0;
}

int buf_append(struct buf *b, const void *p, size_t n)
{
        if (buf_reserve(b, n) != 0)
                return -1;
        if (n > 0)
                memcpy(b->data + b->len, p, n);
        b->len += n;
        b->data[b->len] = '\0';
        return 0;
}

int buf_append_str(struct buf *b, const char *s)
{
        return buf_append(b, s, strlen(s));
}

int buf_append_char(struct buf *b, char c)
{
        return buf_append(b, &c, 1);
}

int buf_vappendf(struct buf *b, const char *fmt, va_list ap)
{
        va_list again;
        int n;

        if (buf_reserve(b, 0) != 0)
                return -1;
        va_copy(again, ap);
        n = vsnprintf(b->data + b->len, b->cap - b->len, fmt, ap);
        if (n >= 0 && (size_t)n >= b->cap - b->len) {
                /* it did not fit: what was written is not content */
                b->data[b->len] = '\0';
                if (buf_reserve(b, (size_t)n) != 0) {
                        va_end(again);
                        return -1;
                }
                n = vsnprintf(b->data + b->len, b->cap - b->len, fmt, again);
        }
        va_end(again);
        if (n < 0) {
                b->data[b->len] = '\0';
                return fail(b, EILSEQ);
        }
        b->len += (size_t)n;
        return 0;
}

int buf_appendf(struct buf *b, const char *fmt, ...)
{
        va_list ap;
        int rc;

        va_start(ap, fmt);
        rc = buf_vappendf(b, fmt, ap);
        va_end(ap);
        return rc;
}

bool buf_failed(const struct buf *b)
{
        return b->err != 0;
}

const char *buf_str(const struct buf *b)
{
        return b->data ? b->data : "";
}

char *buf_detach(struct buf *b, size_t *len)
{
        char *p  = b->data;
        size_t n = b->len;

        if (len)
                *len = 0;
        if (b->err) {
                buf_free(b);
                return NULL;
        }
        if (!p)
                p = xcalloc(1, 1);
        buf_init(b, b->max);
        if (len)
                *len = n;
        return p;
}

void buf_reset(struct buf *b)
{
        b->len = 0;
        b->err = 0;
        if (b->data)
                b->data[0] = '\0';
}

void buf_free(struct buf *b)
{
        free(b->data);
        buf_init(b, b->max);
}
