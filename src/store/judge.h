/* SPDX-License-Identifier: Apache-2.0 */
/*
 * store/judge: the database half of `chargeonce replay --dry-run`: for a
 * batch of intent messages, is the event in the inbox, what state is the
 * key in, is its request hash the message's, and the stored status of a
 * final key. One read-only statement per batch on the primary keys of
 * inbox and idempotency_keys.
 *
 * Must never: write, lock a row (a plain SELECT, no FOR UPDATE), or put a
 * parameter value (keys) into an error message.
 */
#ifndef CO_STORE_JUDGE_H
#define CO_STORE_JUDGE_H

#include "payment/judge.h"
#include "store/store.h"
#include "util/compiler.h"
#include "util/crypto.h"

#include <stdbool.h>
#include <stddef.h>

struct judge_item {
        /* In, borrowed. */
        const char *tenant_id;
        const char *event_key; /* inbox key; NULL: no inbox lookup */
        const char *idem_key;
        bool has_hash;
        unsigned char request_hash[CRYPTO_SHA256_LEN];

        /* Out. */
        bool inbox_hit;
        enum judge_key_state key;
        bool hash_equal;
        char status[STORE_STATUS_LEN]; /* FINAL: the stored status */
};

/*
 * Looks items[0..n) up in one statement that reads inbox and
 * idempotency_keys by their primary keys and writes nothing. An item
 * without tenant_id or idem_key is refused (STORE_ERR_DATA). Returns
 * STORE_OK, STORE_ERR, STORE_ERR_CONN or STORE_ERR_DATA.
 */
int store_judge_batch(struct store *st, struct judge_item *items, size_t n,
                      char *errstr, size_t errstr_size) CO_MUST_CHECK;

#endif
