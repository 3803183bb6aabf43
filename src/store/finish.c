/* SPDX-License-Identifier: Apache-2.0 */
/*
 * store/finish: the explicit-transaction helpers and the finishing SQL
 * that a webhook (store/webhook.c) and an operator's review resolution
 * (store/review.c) share (see finish.h). Moved here from store/webhook.c
 * unchanged in behaviour.
 *
 * Must never put a parameter value into an error message, or finish a
 * payment whose status moved since it was locked (the UPDATE's WHERE and
 * co_assert refuse it: the whole transaction rolls back).
 */
#include "store/finish.h"

#include "payment/identity.h"
#include "payment/result.h"
#include "util/timeutil.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

PGresult *store_tx_run(struct store_tx *t, const char *what, const char *sql,
                       int n, const char *const *v)
{
        PGconn *conn     = store_pgconn(t->st);
        PGresult *res    = PQexecParams(conn, sql, n, NULL, v, NULL, NULL, 0);
        ExecStatusType s = PQresultStatus(res);
        const char *state;
        char label[96];

        t->st->stats.statements++;
        if (s == PGRES_TUPLES_OK || s == PGRES_COMMAND_OK)
                return res;
        snprintf(label, sizeof(label), "%s: %s", t->who, what);
        store_format_error(res, conn, label, t->errstr, t->errstr_size);
        state    = res ? PQresultErrorField(res, PG_DIAG_SQLSTATE) : NULL;
        t->rc    = store_error_rc(res, conn);
        t->retry = state &&
                   (strcmp(state, "40P01") == 0 || strcmp(state, "40001") == 0);
        PQclear(res);
        return NULL;
}

bool store_tx_exec(struct store_tx *t, const char *what, const char *sql, int n,
                   const char *const *v)
{
        PGresult *res = store_tx_run(t, what, sql, n, v);

        PQclear(res);
        return res != NULL;
}

void store_tx_rollback(struct store_tx *t)
{
        PGconn *conn = store_pgconn(t->st);

        if (PQstatus(conn) == CONNECTION_OK)
                PQclear(PQexec(conn, "ROLLBACK"));
}

bool store_tx_commit(struct store_tx *t)
{
        PGresult *res = store_tx_run(t, "commit", "COMMIT", 0, NULL);

        if (res == NULL)
                return false;
        /* a COMMIT of a failed transaction answers ROLLBACK */
        if (strcmp(PQcmdStatus(res), "COMMIT") != 0) {
                PQclear(res);
                snprintf(t->errstr, t->errstr_size,
                         "%s: the transaction was rolled back", t->who);
                t->rc = STORE_ERR;
                return false;
        }
        PQclear(res);
        return true;
}

bool store_tx_connection(struct store *st, const char *who, char *errstr,
                         size_t errstr_size)
{
        if (PQstatus(store_pgconn(st)) == CONNECTION_OK)
                return true;
        /* as store_exec: a broken connection is re-made first */
        store_reconnect(st);
        if (PQstatus(store_pgconn(st)) != CONNECTION_OK) {
                snprintf(errstr, errstr_size, "%s: no database connection",
                         who);
                return false;
        }
        return true;
}

void store_tx_backoff(struct store *st, int attempt)
{
        struct timespec ts = { 0, (attempt + 1) * 2000000L };

        st->stats.retries++;
        while (nanosleep(&ts, &ts) != 0 && errno == EINTR)
                ;
}

void store_locked_free(struct store_locked *p)
{
        free(p->charge_id);
        free(p->tenant_id);
        free(p->idem_key);
        free(p->order_id);
        free(p->intent_event_id);
        memset(p, 0, sizeof(*p));
}

bool store_finish_lock(struct store_tx *t, const char *payment_id,
                       struct store_locked *p, bool *found)
{
        static const char sql[] =
            "SELECT status, amount, currency, provider_charge_id,"
            " refunded_at IS NOT NULL, tenant_id, idem_key, order_id,"
            " intent_event_id, lease_epoch, payment_id"
            " FROM payments WHERE payment_id = $1::uuid FOR UPDATE";
        const char *v[1] = { payment_id };
        PGresult *res    = store_tx_run(t, "lock payment", sql, 1, v);

        if (res == NULL)
                return false;
        *found = PQntuples(res) == 1;
        if (*found) {
                store_copy_field(res, 0, 0, p->status, sizeof(p->status));
                p->amount = store_i64_field(res, 0, 1);
                store_copy_field(res, 0, 2, p->currency, sizeof(p->currency));
                p->charge_id       = store_strdup_field(res, 0, 3);
                p->refunded        = strcmp(PQgetvalue(res, 0, 4), "t") == 0;
                p->tenant_id       = store_strdup_field(res, 0, 5);
                p->idem_key        = store_strdup_field(res, 0, 6);
                p->order_id        = store_strdup_field(res, 0, 7);
                p->intent_event_id = store_strdup_field(res, 0, 8);
                p->lease_epoch     = store_i64_field(res, 0, 9);
                store_copy_field(res, 0, 10, p->payment_id,
                                 sizeof(p->payment_id));
        }
        PQclear(res);
        return true;
}

/* The result message of a finish (payment_result_build) and its compact
 * form (payment_result_detail); *json and *detail owned. */
static bool build_result(struct store_tx *t, const struct store_locked *p,
                         struct store_finish *f, char **json, char **detail)
{
        struct payment_result r;
        char now[40], err[160];
        size_t len;

        memset(&r, 0, sizeof(r));
        /* derived (payment/identity.h): written again after the database
         * lost it, the same result carries the same id */
        payment_result_event_id(p->payment_id, f->status, f->result_event_id);
        rfc3339_format(time_wall_ms(), now, sizeof(now));
        r.event_id           = f->result_event_id;
        r.intent_event_id    = p->intent_event_id;
        r.tenant_id          = p->tenant_id;
        r.idempotency_key    = p->idem_key;
        r.order_id           = p->order_id;
        r.payment_id         = p->payment_id;
        r.status             = strcmp(f->status, "succeeded") == 0
                                   ? PAYMENT_STATUS_SUCCEEDED
                                   : PAYMENT_STATUS_FAILED;
        r.has_amount         = true;
        r.amount             = p->amount;
        r.currency           = p->currency;
        r.provider_charge_id = f->provider_charge_id;
        r.error_code         = f->error_code;
        r.error_message      = f->error_message;
        r.occurred_at        = now;
        r.resolves_review    = f->resolves_review;
        if (payment_result_build(&r, json, &len, err, sizeof(err)) != 0 ||
            payment_result_detail(&r, p->intent_event_id, detail, &len, err,
                                  sizeof(err)) != 0) {
                snprintf(t->errstr, t->errstr_size, "%s: %s", t->who, err);
                t->rc = STORE_ERR_DATA;
                return false;
        }
        return true;
}

/* Status, stored outcome, fenced lease (the payment is the key, 0017),
 * outbox result. */
static bool finish_rows(struct store_tx *t, const struct store_locked *p,
                        struct store_finish *f, const char *json,
                        const char *detail)
{
        static const char sql[] =
            "WITH up AS ("
            " UPDATE payments SET status = $2, provider_charge_id = $3,"
            "   error_code = $4, error_message = $5,"
            "   lease_owner = NULL, lease_expires_at = CASE"
            "     WHEN $2 = 'review' THEN 'infinity'::timestamptz"
            "     WHEN lease_expires_at = 'infinity' THEN now()"
            /* greatest() skips a NULL: a payment of before 0029 gets
             * now() */
            "     ELSE greatest(lease_expires_at, now()) END,"
            "   lease_epoch = lease_epoch + 1,"
            "   finished_at = now(), updated_at = now()"
            "  WHERE payment_id = $1::uuid AND status = $9"
            " RETURNING payment_id, tenant_id, idem_key, status,"
            "  intent_event_id, lease_epoch"
            "), ob AS ("
            " INSERT INTO outbox (event_id, message_key, tenant_id, idem_key,"
            "   payment_id, intent_event_id, status, replayed, payload,"
            "   resolves_review, detail)"
            " SELECT $6::uuid, tenant_id || '/' || idem_key, tenant_id,"
            "   idem_key, payment_id, intent_event_id, status, false,"
            "   CASE WHEN f.compact THEN NULL ELSE $7 END, $8::boolean,"
            "   CASE WHEN f.compact THEN $10 END"
            "  FROM up LEFT JOIN (SELECT compact FROM result_format"
            "                      WHERE id = 1) f ON true"
            " RETURNING 1"
            ")"
            " SELECT co_assert((SELECT count(*) FROM up) = 1"
            "                  AND (SELECT count(*) FROM ob) = 1,"
            "                  'finish: payment and result'),"
            "  (SELECT lease_epoch FROM up)";
        const char *v[10] = { p->payment_id,
                              f->status,
                              f->provider_charge_id,
                              f->error_code,
                              f->error_message,
                              f->result_event_id,
                              json,
                              f->resolves_review ? "t" : "f",
                              p->status,
                              detail };
        PGresult *res     = store_tx_run(t, "finish", sql, 10, v);

        if (res == NULL)
                return false;
        f->epoch = store_i64_field(res, 0, 1);
        PQclear(res);
        return true;
}

bool store_finish_payment(struct store_tx *t, const struct store_locked *p,
                          struct store_finish *f)
{
        char *json = NULL, *detail = NULL;
        bool ok = false;

        f->resolves_review = strcmp(p->status, "review") == 0;
        f->epoch           = 0;
        if (!build_result(t, p, f, &json, &detail) ||
            !finish_rows(t, p, f, json, detail))
                goto out;
        ok = strcmp(f->status, "succeeded") != 0 ||
             store_finish_post(t, p->payment_id, "charge");
out:
        free(json);
        free(detail);
        return ok;
}

bool store_finish_post(struct store_tx *t, const char *payment_id,
                       const char *kind)
{
        static const char sql[] =
            "WITH lt AS ("
            " INSERT INTO ledger_postings (payment_id, kind, tenant_id,"
            "   amount, currency, debit_account, credit_account)"
            " SELECT payment_id, $2, tenant_id, amount, currency,"
            "   CASE WHEN $2 = 'charge' THEN 'customer_funds:'"
            "   ELSE 'merchant_payable:' END || tenant_id,"
            "   CASE WHEN $2 = 'charge' THEN 'merchant_payable:'"
            "   ELSE 'customer_funds:' END || tenant_id"
            "  FROM payments"
            "  WHERE payment_id = $1::uuid AND status = 'succeeded'"
            " RETURNING 1"
            "), rf AS ("
            " UPDATE payments SET refunded_at = now(), updated_at = now()"
            "  WHERE payment_id = $1::uuid AND $2 = 'refund'"
            "    AND refunded_at IS NULL"
            " RETURNING 1"
            ")"
            " SELECT co_assert((SELECT count(*) FROM lt) = 1"
            "                  AND (SELECT count(*) FROM rf) ="
            "                      CASE WHEN $2 = 'refund' THEN 1 ELSE 0 END,"
            "                  'finish: ledger posting')";
        const char *v[2] = { payment_id, kind };

        return store_tx_exec(t, "posting", sql, 2, v);
}
