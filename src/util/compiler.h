/* SPDX-License-Identifier: Apache-2.0 */
/*
 * compiler: the attributes chargeonce puts on its declarations, spelled
 * once.
 *
 * CO_MUST_CHECK goes on every function that can fail (an error status, a
 * bool success, a pointer that is NULL on failure): a caller that ignores
 * the result does not compile (-Werror). One that may rightly ignore it
 * says why, with a (void) cast and a comment. Never on pure queries.
 */
#ifndef CO_COMPILER_H
#define CO_COMPILER_H

#define CO_MUST_CHECK __attribute__((warn_unused_result))

/*
 * Ignores a CO_MUST_CHECK result on purpose: GCC does not take a plain
 * (void) cast for that. The line above says why ignoring is right.
 */
#define CO_IGNORE(expr) ((void)!(expr))

/* printf-style checks: fmt is the 1-based position of the format, args
 * that of the first argument (0 for a va_list). */
#define CO_PRINTF(fmt, args) __attribute__((format(printf, fmt, args)))

#endif
