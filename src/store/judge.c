/* SPDX-License-Identifier: Apache-2.0 */
/*
 * store/judge: what the database says about intent messages that a dry
 * run judges (see judge.h). Read-only.
 *
 * Must never: write, lock, or quote a parameter in an error. The payment
 * row is the key (0017); an intent's first event is its
 * intent_event_id, a copy's is in the inbox.
 */
#include "store/judge.h"
#include "store/store_int.h"

#include <stdio.h>
#include <string.h>

static const struct store_stmt judge_stmt = {
        STORE_STMT_JUDGE, "co_judge_batch",
        "SELECT i.ord,"
        "  i.event_id IS NOT NULL AND (k.intent_event_id = i.event_id"
        "   OR EXISTS (SELECT 1 FROM inbox b"
        "    WHERE b.tenant_id = i.tenant_id AND b.event_id = i.event_id)),"
        "  CASE WHEN k.tenant_id IS NULL THEN 'none'"
        "       WHEN k.status = 'processing' THEN 'processing'"
        "       ELSE 'final' END,"
        "  coalesce(k.request_hash = decode(i.hash_hex, 'hex'), false),"
        "  nullif(k.status, 'processing')"
        " FROM unnest($1::text[], $2::text[], $3::text[], $4::text[])"
        "   WITH ORDINALITY AS i(tenant_id, event_id, idem_key, hash_hex,"
        "   ord)"
        " LEFT JOIN payments k ON k.tenant_id = i.tenant_id"
        "  AND k.idem_key = i.idem_key"
        " ORDER BY i.ord",
        4
};

static bool judge_prepare(void *p)
{
        struct judge_item *it = p;

        it->inbox_hit  = false;
        it->key        = JUDGE_KEY_NONE;
        it->hash_equal = false;
        it->status[0]  = '\0';
        return it->tenant_id && it->idem_key;
}

static bool judge_fill(struct store_batch *b, void *items, void *arg,
                       char *errstr, size_t errstr_size)
{
        (void)arg;
        (void)errstr;
        (void)errstr_size;
        for (size_t k = 0; k < b->nsent; k++) {
                const struct judge_item *it =
                    (const struct judge_item *)items + store_batch_item(b, k);

                store_pgarr_text(&b->arr[0], it->tenant_id);
                store_pgarr_text(&b->arr[1], it->event_key);
                store_pgarr_text(&b->arr[2], it->idem_key);
                if (it->has_hash)
                        store_pgarr_hex(&b->arr[3], it->request_hash,
                                        CRYPTO_SHA256_LEN);
                else
                        store_pgarr_text(&b->arr[3], NULL);
        }
        return true;
}

static void judge_read_row(void *items, size_t i, const PGresult *res, int r,
                           void *arg)
{
        struct judge_item *it = (struct judge_item *)items + i;
        const char *k         = PQgetvalue(res, r, 2);

        (void)arg;
        it->inbox_hit  = !strcmp(PQgetvalue(res, r, 1), "t");
        it->key        = !strcmp(k, "none")         ? JUDGE_KEY_NONE
                         : !strcmp(k, "processing") ? JUDGE_KEY_PROCESSING
                                                    : JUDGE_KEY_FINAL;
        it->hash_equal = !strcmp(PQgetvalue(res, r, 3), "t");
        store_copy_field(res, r, 4, it->status, sizeof(it->status));
}

static const struct store_batch_def judge_def = {
        .what          = "judge",
        .stmt          = &judge_stmt,
        .narrays       = 4,
        .nfields       = 5,
        .item_size     = sizeof(struct judge_item),
        .prepare       = judge_prepare,
        .incomplete    = "lacks a tenant or key",
        .incomplete_rc = STORE_ERR_DATA,
        .fill          = judge_fill,
        .read_row      = judge_read_row,
};

int store_judge_batch(struct store *st, struct judge_item *items, size_t n,
                      char *errstr, size_t errstr_size)
{
        return store_batch_run(st, &judge_def, items, n, NULL, errstr,
                               errstr_size);
}
