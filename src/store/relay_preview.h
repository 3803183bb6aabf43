/* SPDX-License-Identifier: Apache-2.0 */
/*
 * store/relay_preview: what an operator's republish or unpark would
 * touch, counted read-only (`chargeonce relay --republish-* --dry-run`,
 * `--unpark ... --dry-run`). The counts select exactly the rows
 * store_relay_republish() and store_relay_unpark() (relay_sql.c) change;
 * tests/relay (relay_retention) checks that a dry run counts what the run
 * then changes, so the two cannot drift apart unnoticed.
 *
 * Must never: write, lock a row, or put a message key into an error.
 */
#ifndef CO_STORE_RELAY_PREVIEW_H
#define CO_STORE_RELAY_PREVIEW_H

#include "store/relay_sql.h"
#include "util/compiler.h"

#include <stdint.h>

/*
 * The published, still retained rows sel matches (what
 * store_relay_republish() would reset): *rows, and the span of their
 * published_at as RFC 3339 into first/last ("" when none). On its own
 * connection, one read-only statement. STORE_OK or an error.
 */
int store_relay_republish_count(const char *conninfo,
                                const struct store_republish *sel,
                                int64_t *rows, char *first, size_t first_size,
                                char *last, size_t last_size, char *errstr,
                                size_t errstr_size) CO_MUST_CHECK;

/* The parked, unpublished rows that store_relay_unpark(id) would unpark
 * (id 0: all). STORE_OK or an error. */
int store_relay_unpark_count(const char *conninfo, int64_t id, int64_t *rows,
                             char *errstr, size_t errstr_size) CO_MUST_CHECK;

#endif
