/* SPDX-License-Identifier: Apache-2.0 */
/*
 * xalloc: chargeonce's one out-of-memory policy.
 *
 * An allocation that fails ends the process at once (a short message on
 * stderr, then abort()): no caller handles "out of memory" on its own.
 * This is safe because every step chargeonce takes is durable and
 * idempotent (the same as a kill -9: redelivery and the reconciler finish
 * what was in flight), and it is the only honest answer, since a daemon
 * that goes on without memory cannot keep its promises either.
 *
 * Sizes that come from outside (a message, an HTTP body) are bounded
 * before they are allocated (util/buf.h, consumer.max_message_bytes), so
 * hostile input cannot reach this policy.
 */
#ifndef CO_XALLOC_H
#define CO_XALLOC_H

#include <stddef.h>

/* Never return NULL. Any thread. */
void *xmalloc(size_t n) __attribute__((malloc, returns_nonnull));
void *xcalloc(size_t n, size_t size) __attribute__((malloc, returns_nonnull));
void *xrealloc(void *p, size_t n) __attribute__((returns_nonnull));
char *xstrdup(const char *s) __attribute__((malloc, returns_nonnull));
/* Copies of the first n bytes of s (NUL-terminated). */
char *xstrndup(const char *s, size_t n)
    __attribute__((malloc, returns_nonnull));
void *xmemdup(const void *p, size_t n) __attribute__((returns_nonnull));

/* Ends the process: "chargeonce: out of memory" on stderr, abort(). */
_Noreturn void xalloc_die(void);

#endif
