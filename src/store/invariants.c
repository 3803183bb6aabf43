/* SPDX-License-Identifier: Apache-2.0 */
/*
 * invariants: reads the view invariant_violations (sql/0002_invariants.sql)
 * for audits and tests.
 *
 * Must never: write or lock anything; return an idempotency key (the view
 * has it, this reader leaves it out so that callers cannot log it).
 */
#include "store/store_int.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const struct store_stmt invariants_stmt = {
        STORE_STMT_INVARIANTS, "co_invariant_violations",
        "SELECT kind, payment_id, tenant_id, ledger_txn_id, outbox_id, detail"
        " FROM invariant_violations ORDER BY kind, payment_id",
        0
};

void store_violations_free(struct store_violation *v, size_t n)
{
        if (!v)
                return;
        for (size_t i = 0; i < n; i++) {
                free(v[i].tenant_id);
                free(v[i].detail);
        }
        free(v);
}

int store_invariant_violations(struct store *st, struct store_violation **out,
                               size_t *n_out, char *errstr, size_t errstr_size)
{
        struct store_violation *v = NULL;
        size_t nv                 = 0;
        PGresult *res;
        int rc;

        *out   = NULL;
        *n_out = 0;
        res = store_exec(st, &invariants_stmt, NULL, &rc, errstr, errstr_size);
        if (!res)
                return rc;
        v = store_rows_calloc(res, sizeof(*v));
        for (int r = 0; r < PQntuples(res); r++, nv++) {
                store_copy_field(res, r, 0, v[r].kind, sizeof(v[r].kind));
                store_copy_field(res, r, 1, v[r].payment_id,
                                 sizeof(v[r].payment_id));
                v[r].tenant_id     = store_strdup_field(res, r, 2);
                v[r].ledger_txn_id = store_i64_field(res, r, 3);
                v[r].outbox_id     = store_i64_field(res, r, 4);
                v[r].detail        = store_strdup_field(res, r, 5);
        }
        *out   = v;
        *n_out = nv;
        PQclear(res);
        return STORE_OK;
}
