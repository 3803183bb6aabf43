/* SPDX-License-Identifier: Apache-2.0 */
/* xalloc: allocation or the end of the process (see xalloc.h). */
#include "util/xalloc.h"

#include <stdlib.h>
#include <string.h>
#include <unistd.h>

_Noreturn void xalloc_die(void)
{
        static const char msg[] = "chargeonce: out of memory\n";
        ssize_t w;

        /* no stdio, no logger: both may want memory */
        w = write(STDERR_FILENO, msg, sizeof(msg) - 1);
        (void)w;
        abort();
}

void *xmalloc(size_t n)
{
        void *p = malloc(n ? n : 1);

        if (!p)
                xalloc_die();
        return p;
}

void *xcalloc(size_t n, size_t size)
{
        void *p = calloc(n ? n : 1, size ? size : 1);

        if (!p)
                xalloc_die();
        return p;
}

void *xrealloc(void *p, size_t n)
{
        void *q = realloc(p, n ? n : 1);

        if (!q)
                xalloc_die();
        return q;
}

char *xstrdup(const char *s)
{
        char *p = strdup(s);

        if (!p)
                xalloc_die();
        return p;
}

char *xstrndup(const char *s, size_t n)
{
        char *p = strndup(s, n);

        if (!p)
                xalloc_die();
        return p;
}

void *xmemdup(const void *p, size_t n)
{
        void *q = xmalloc(n);

        memcpy(q, p, n);
        return q;
}
