/* SPDX-License-Identifier: Apache-2.0 */
/*
 * evidence: batch insert into gateway_evidence, and the database clock
 * (see evidence.h).
 *
 * Must never put a parameter value into an error message or a log line,
 * and never write anything but gateway_evidence.
 */
#include "store/evidence.h"
#include "store/store_int.h"

#include <stdio.h>
#include <string.h>

#define EVIDENCE_NPARAMS 10

static const struct store_stmt insert_stmt = {
        STORE_STMT_EVIDENCE_INSERT, "co_evidence_insert",
        "WITH ins AS ("
        " INSERT INTO gateway_evidence (payment_id, kind, actor,"
        "   lease_epoch, request_summary, http_status, transport_error,"
        "   outcome, provider_charge_id, response_excerpt)"
        " SELECT * FROM unnest($1::uuid[], $2::text[], $3::text[],"
        "   $4::bigint[], $5::text[], $6::integer[], $7::text[], $8::text[],"
        "   $9::text[], $10::text[])"
        " RETURNING 1"
        ") SELECT count(*) FROM ins",
        EVIDENCE_NPARAMS
};

static const struct store_stmt clock_stmt = {
        STORE_STMT_EVIDENCE_CLOCK, "co_clock",
        "SELECT (extract(epoch FROM clock_timestamp()) * 1000)::bigint", 0
};

int store_evidence_insert(struct store *st, const struct evidence_item *items,
                          size_t n, char *errstr, size_t errstr_size)
{
        struct store_batch b;
        struct pgarr *a = b.arr;
        PGresult *res;
        int rc = STORE_ERR;

        store_batch_init(&b, &insert_stmt, EVIDENCE_NPARAMS, "evidence");
        if (n == 0) {
                rc = STORE_OK;
                goto done;
        }
        for (size_t i = 0; i < n; i++) {
                const struct evidence_item *e = &items[i];

                if (!e->payment_id || !e->kind || !e->outcome) {
                        snprintf(errstr, errstr_size,
                                 "evidence: item %zu lacks payment, kind or "
                                 "outcome",
                                 i);
                        goto done;
                }
                store_pgarr_text(&a[0], e->payment_id);
                store_pgarr_text(&a[1], e->kind);
                store_pgarr_text(&a[2], e->actor);
                /* 0: none, sent as NULL */
                store_pgarr_i64_or_null(
                    &a[3], e->lease_epoch > 0 ? e->lease_epoch : -1);
                store_pgarr_text(&a[4], e->request_summary);
                store_pgarr_i64_or_null(
                    &a[5], e->http_status > 0 ? e->http_status : -1);
                store_pgarr_text(&a[6], e->transport_error);
                store_pgarr_text(&a[7], e->outcome);
                store_pgarr_text(&a[8], e->provider_charge_id);
                store_pgarr_text(&a[9], e->response_excerpt);
        }
        /* one row: how many were inserted */
        res = store_batch_exec(st, &b, -1, &rc, errstr, errstr_size);
        if (!res)
                goto done;
        rc = STORE_ERR;
        if (PQntuples(res) != 1 || (size_t)store_i64_field(res, 0, 0) != n) {
                snprintf(errstr, errstr_size,
                         "evidence: unexpected result shape");
                goto done;
        }
        rc = STORE_OK;
done:
        store_batch_free(&b);
        return rc;
}

int store_clock_ms(struct store *st, int64_t *now_ms, char *errstr,
                   size_t errstr_size)
{
        PGresult *res;
        int rc;

        res = store_exec(st, &clock_stmt, NULL, &rc, errstr, errstr_size);
        if (!res)
                return rc;
        rc = STORE_ERR;
        if (PQntuples(res) == 1 && !PQgetisnull(res, 0, 0)) {
                *now_ms = store_i64_field(res, 0, 0);
                rc      = STORE_OK;
        } else {
                snprintf(errstr, errstr_size, "clock: unexpected result");
        }
        PQclear(res);
        return rc;
}
