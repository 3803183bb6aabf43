/* SPDX-License-Identifier: Apache-2.0 */
/*
 * inspect: everything the database knows about one payment intent, for an
 * operator: the idempotency key's state, the payment and its lease, the
 * ledger posting, every event received for it, every result, and the
 * gateway evidence. Read-only. Never returns the idempotency key itself,
 * the payment method, the provider key or a stored result body.
 */
#ifndef CO_STORE_INSPECT_H
#define CO_STORE_INSPECT_H

#include "util/compiler.h"

#include <stddef.h>

struct store;

enum inspect_by { INSPECT_BY_KEY, INSPECT_BY_EVENT, INSPECT_BY_PAYMENT };

/*
 * by KEY: value "<tenant_id>/<idempotency_key>"; by EVENT: an intent's
 * event id; by PAYMENT: a payment id. *json_out gets one JSON object (the
 * key itself is not in it) and *key_out the idempotency key, for the
 * caller to mask; both malloc'd, the caller frees them; both NULL when
 * nothing matches. Returns STORE_OK or a negative STORE_ERR* with the
 * reason in errstr.
 */
int store_inspect(struct store *st, enum inspect_by by, const char *value,
                  char **json_out, char **key_out, char *errstr,
                  size_t errstr_size) CO_MUST_CHECK;

#endif
