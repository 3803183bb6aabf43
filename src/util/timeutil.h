/* SPDX-License-Identifier: Apache-2.0 */
/* timeutil: clocks, durations ("250ms", "10s", "24h", "7d") and RFC 3339.
 * Pure but for the clocks. */
#ifndef CO_TIMEUTIL_H
#define CO_TIMEUTIL_H

#include "util/compiler.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Monotonic clock in milliseconds / microseconds. */
int64_t time_mono_ms(void);
int64_t time_mono_us(void);
/* Wall clock, milliseconds since the Unix epoch. */
int64_t time_wall_ms(void);

/*
 * Parses a duration: a non-negative integer followed by one of ms, s, m, h,
 * d (a bare integer means seconds). Writes milliseconds. Returns false on
 * anything else or on overflow.
 */
bool duration_parse(const char *s, int64_t *out_ms) CO_MUST_CHECK;
/* Formats milliseconds as the largest exact unit, e.g. "24h", "250ms". */
void duration_format(int64_t ms, char *out, size_t outsz);

/*
 * True if s is an RFC 3339 date-time (e.g. 2026-11-29T10:47:03.123Z or
 * with a +07:00 offset), with ranges checked (month, day of that month,
 * hour, minute, second up to 60).
 */
bool rfc3339_valid(const char *s, size_t len);
/* Formats wall-clock milliseconds as RFC 3339 UTC with milliseconds. */
void rfc3339_format(int64_t wall_ms, char *out, size_t outsz);

#endif
