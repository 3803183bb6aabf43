/* SPDX-License-Identifier: Apache-2.0 */
/*
 * currency: the ISO 4217 alpha-3 codes of active currencies that chargeonce
 * accepts in a payment intent. Pure, read-only, any thread.
 *
 * Never accepts lower case, a fund-less code (XXX, XTS) or a precious metal.
 */
#ifndef CO_INTENT_CURRENCY_H
#define CO_INTENT_CURRENCY_H

#include <stdbool.h>
#include <stddef.h>

/* True if s[0..len) is exactly one of the accepted codes. */
bool intent_currency_known(const char *s, size_t len);
/* The accepted codes, sorted: for tests and the schema agreement check. */
size_t intent_currency_count(void);
const char *intent_currency_at(size_t i);

#endif
