/* SPDX-License-Identifier: Apache-2.0 */
/*
 * store/review: the review queue read and resolved (see review.h;
 * docs/data-model.md, "Resolving a review"). Reads are one read-only
 * statement each; a resolution is one explicit READ COMMITTED transaction
 * (store/finish.h): lock the payment FOR UPDATE, finish it only if it is
 * still in review, write the operator's evidence row, COMMIT.
 *
 * Must never: finish a payment not in review, commit a resolution without
 * its evidence row (or the reverse), or put the operator's text, a key or
 * any row value in an error message.
 */
#include "store/review.h"

#include "payment/review_rule.h"
#include "store/finish.h"
#include "util/utf8.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define REVIEW_MAX_RETRIES 5

/* clang-format off */
#define TS(col) \
        "to_char(" col " AT TIME ZONE 'UTC', 'YYYY-MM-DD\"T\"HH24:MI:SS.MS\"Z\"')"

/* The columns of a struct store_review_row, in read_row's order. */
#define ROW_COLUMNS \
        "p.payment_id, p.tenant_id, p.idem_key, p.order_id, " \
        TS("p.created_at") ", " TS("p.finished_at") ", p.amount," \
        " p.currency, p.error_code, p.error_message, p.provider_charge_id," \
        " p.attempts, e.kind || ' ' || e.outcome, " TS("e.at") "," \
        " (extract(epoch FROM p.created_at) * 1000)::bigint"
/* clang-format on */
#define ROW_NCOLS 15

/* The newest evidence row of p. */
#define LAST_EVIDENCE                                                          \
        " LEFT JOIN LATERAL (SELECT g.kind, g.outcome, g.at"                   \
        "   FROM gateway_evidence g WHERE g.payment_id = p.payment_id"         \
        "  ORDER BY g.at DESC, g.id DESC LIMIT 1) e ON true"

static void read_row(const PGresult *res, int i, struct store_review_row *r)
{
        store_copy_field(res, i, 0, r->payment_id, sizeof(r->payment_id));
        r->tenant_id   = store_strdup_field(res, i, 1);
        r->idem_key    = store_strdup_field(res, i, 2);
        r->order_id    = store_strdup_field(res, i, 3);
        r->created_at  = store_strdup_field(res, i, 4);
        r->finished_at = store_strdup_field(res, i, 5);
        r->amount      = store_i64_field(res, i, 6);
        store_copy_field(res, i, 7, r->currency, sizeof(r->currency));
        r->error_code         = store_strdup_field(res, i, 8);
        r->error_message      = store_strdup_field(res, i, 9);
        r->provider_charge_id = store_strdup_field(res, i, 10);
        r->attempts           = (int32_t)store_i64_field(res, i, 11);
        r->last_evidence      = store_strdup_field(res, i, 12);
        r->last_evidence_at   = store_strdup_field(res, i, 13);
        r->created_at_ms      = store_i64_field(res, i, 14);
}

static void row_free(struct store_review_row *r)
{
        free(r->tenant_id);
        free(r->idem_key);
        free(r->order_id);
        free(r->created_at);
        free(r->finished_at);
        free(r->error_code);
        free(r->error_message);
        free(r->provider_charge_id);
        free(r->last_evidence);
        free(r->last_evidence_at);
        memset(r, 0, sizeof(*r));
}

void store_review_rows_free(struct store_review_row *r, size_t n)
{
        if (r == NULL)
                return;
        for (size_t i = 0; i < n; i++)
                row_free(&r[i]);
        free(r);
}

int store_review_list(struct store *st, size_t limit,
                      struct store_review_row **out, size_t *n_out,
                      int64_t *total, char *errstr, size_t errstr_size)
{
        static const char sql[] =
            "SELECT " ROW_COLUMNS ","
            " (SELECT count(*) FROM payments WHERE" STORE_REVIEW_COUNT_PRED ")"
            " FROM payments p" LAST_EVIDENCE " WHERE p.status = 'review'"
            "  AND p.lease_expires_at = 'infinity'"
            " ORDER BY p.created_at, p.payment_id LIMIT $1::bigint";
        struct store_tx t = { .st          = st,
                              .who         = "review list",
                              .errstr      = errstr,
                              .errstr_size = errstr_size,
                              .rc          = STORE_ERR };
        struct store_review_row *r;
        char lim[24];
        const char *v[1] = { lim };
        PGresult *res;
        int n;

        *out   = NULL;
        *n_out = 0;
        *total = 0;
        snprintf(lim, sizeof(lim), "%zu", limit);
        if (!store_tx_connection(st, "review list", errstr, errstr_size))
                return STORE_ERR;
        if ((res = store_tx_run(&t, "select", sql, 1, v)) == NULL)
                return t.rc;
        n = PQntuples(res);
        r = store_rows_calloc(res, sizeof(*r));
        for (int i = 0; i < n; i++)
                read_row(res, i, &r[i]);
        if (n > 0)
                *total = store_i64_field(res, 0, ROW_NCOLS);
        PQclear(res);
        *out   = r;
        *n_out = (size_t)n;
        return STORE_OK;
}

void store_review_payment_clear(struct store_review_payment *p)
{
        row_free(&p->row);
        free(p->evidence_json);
        free(p->results_json);
        memset(p, 0, sizeof(*p));
}

int store_review_get(struct store *st, const char *payment_id,
                     struct store_review_payment *p, bool *found, char *errstr,
                     size_t errstr_size)
{
        static const char sql[] =
            "SELECT " ROW_COLUMNS ", p.status,"
            " (extract(epoch FROM clock_timestamp()) * 1000)::bigint,"
            " coalesce((SELECT json_agg(json_build_object('at', g.at,"
            "   'kind', g.kind, 'actor', g.actor, 'lease_epoch',"
            "   g.lease_epoch, 'request_summary', g.request_summary,"
            "   'http_status', g.http_status, 'transport_error',"
            "   g.transport_error, 'outcome', g.outcome,"
            "   'provider_charge_id', g.provider_charge_id,"
            "   'response_excerpt', g.response_excerpt) ORDER BY g.at, g.id)"
            "   FROM gateway_evidence g WHERE g.payment_id = p.payment_id),"
            "  '[]'),"
            " coalesce((SELECT json_agg(json_build_object('event_id',"
            "   o.event_id, 'status', o.status, 'replayed', o.replayed,"
            "   'resolves_review', o.resolves_review, 'created_at',"
            "   o.created_at, 'published', co_outbox_published(o.id,"
            "   o.parked_at, o.published_at), 'published_at',"
            "   co_outbox_published_at(o.id, o.parked_at, o.published_at,"
            "   o.reopened_at))"
            "   ORDER BY o.id)"
            "   FROM outbox o WHERE o.payment_id = p.payment_id), '[]')"
            " FROM payments p" LAST_EVIDENCE " WHERE p.payment_id = $1::uuid";
        struct store_tx t = { .st          = st,
                              .who         = "review show",
                              .errstr      = errstr,
                              .errstr_size = errstr_size,
                              .rc          = STORE_ERR };
        const char *v[1]  = { payment_id };
        PGresult *res;

        store_review_payment_clear(p);
        *found = false;
        if (!uuid_valid(payment_id, strlen(payment_id))) {
                snprintf(errstr, errstr_size, "review: not a payment id");
                return STORE_ERR_DATA;
        }
        if (!store_tx_connection(st, "review show", errstr, errstr_size))
                return STORE_ERR;
        if ((res = store_tx_run(&t, "select", sql, 1, v)) == NULL)
                return t.rc;
        if (PQntuples(res) == 1) {
                *found = true;
                read_row(res, 0, &p->row);
                store_copy_field(res, 0, ROW_NCOLS, p->status,
                                 sizeof(p->status));
                p->db_now_ms     = store_i64_field(res, 0, ROW_NCOLS + 1);
                p->evidence_json = store_strdup_field(res, 0, ROW_NCOLS + 2);
                p->results_json  = store_strdup_field(res, 0, ROW_NCOLS + 3);
        }
        PQclear(res);
        return STORE_OK;
}

/* The operator's evidence row, in the resolving transaction. */
static bool evidence(struct store_tx *t, const struct store_locked *p,
                     const struct store_review_resolve_in *in,
                     const struct store_finish *f)
{
        static const char sql[] =
            "INSERT INTO gateway_evidence (payment_id, kind, actor,"
            " lease_epoch, request_summary, http_status, transport_error,"
            " outcome, provider_charge_id, response_excerpt)"
            " VALUES ($1::uuid, 'operator', $2, $3::bigint, $4,"
            "  $5::integer, $6, $7, $8, $9)";
        char ep[24], hs[16], outcome[160];
        const char *v[9];

        snprintf(ep, sizeof(ep), "%" PRId64, f->epoch);
        snprintf(hs, sizeof(hs), "%d", in->http_status);
        /* what was decided, and on what the gateway said */
        snprintf(outcome, sizeof(outcome), "resolved %s (gateway: %s)",
                 f->status, in->gateway_outcome);
        v[0] = p->payment_id;
        v[1] = in->actor;
        v[2] = ep;
        v[3] = in->evidence_text;
        v[4] = in->http_status > 0 ? hs : NULL;
        v[5] = in->transport_error;
        v[6] = outcome;
        v[7] = f->provider_charge_id;
        v[8] = in->gateway_excerpt;
        return store_tx_exec(t, "evidence", sql, 9, v);
}

/* Lock, check, finish, evidence: inside the open transaction. */
static bool resolve_locked(struct store_tx *t,
                           const struct store_review_resolve_in *in,
                           struct store_review_resolve_out *out)
{
        struct store_locked p;
        struct store_finish f;
        bool found = false, ok = false;

        memset(&p, 0, sizeof(p));
        memset(&f, 0, sizeof(f));
        if (!store_finish_lock(t, in->payment_id, &p, &found))
                return false;
        if (!found) {
                out->result = STORE_REVIEW_NOT_FOUND;
                return true;
        }
        snprintf(out->status, sizeof(out->status), "%s", p.status);
        if (strcmp(p.status, "review") != 0) {
                out->result = STORE_REVIEW_NOT_IN_REVIEW;
                ok          = true;
                goto out;
        }
        f.status = in->succeeded ? "succeeded" : "failed";
        if (in->succeeded) {
                f.provider_charge_id = in->provider_charge_id;
        } else {
                f.error_code    = in->error_code ? in->error_code
                                                 : PAYMENT_REVIEW_FAILED_CODE;
                f.error_message = in->error_message
                                      ? in->error_message
                                      : PAYMENT_REVIEW_FAILED_MESSAGE;
        }
        if (!store_finish_payment(t, &p, &f) || !evidence(t, &p, in, &f))
                goto out;
        out->result = STORE_REVIEW_RESOLVED;
        snprintf(out->status, sizeof(out->status), "%s", f.status);
        snprintf(out->result_event_id, sizeof(out->result_event_id), "%s",
                 f.result_event_id);
        out->lease_epoch = f.epoch;
        ok               = true;
out:
        store_locked_free(&p);
        return ok;
}

/* One attempt: BEGIN ... COMMIT, or ROLLBACK when nothing is to be done. */
static int resolve_once(struct store_tx *t,
                        const struct store_review_resolve_in *in,
                        struct store_review_resolve_out *out)
{
        memset(out, 0, sizeof(*out));
        t->retry = false;
        t->rc    = STORE_ERR;
        if (!store_tx_exec(t, "begin", "BEGIN ISOLATION LEVEL READ COMMITTED",
                           0, NULL))
                return t->rc;
        if (!resolve_locked(t, in, out))
                goto fail;
        if (out->result != STORE_REVIEW_RESOLVED) {
                store_tx_rollback(t); /* nothing was written */
                return STORE_OK;
        }
        if (!store_tx_commit(t))
                goto fail;
        return STORE_OK;
fail:
        store_tx_rollback(t);
        memset(out, 0, sizeof(*out));
        return t->rc;
}

/* The input a resolution needs; a reason in errstr when it is not. */
static bool input_ok(const struct store_review_resolve_in *in, char *errstr,
                     size_t errstr_size)
{
        const char *why = NULL;
        size_t elen     = in->evidence_text ? strlen(in->evidence_text) : 0;

        if (!in->payment_id ||
            !uuid_valid(in->payment_id, strlen(in->payment_id)))
                why = "not a payment id";
        else if (!in->actor || !*in->actor ||
                 !utf8_valid(in->actor, strlen(in->actor)))
                why = "no actor";
        else if (elen == 0 || elen > STORE_REVIEW_EVIDENCE_MAX ||
                 !utf8_valid(in->evidence_text, elen))
                why = "evidence text empty, too long or not UTF-8";
        else if (in->succeeded &&
                 (!in->provider_charge_id || !*in->provider_charge_id))
                why = "succeeded needs a provider charge id";
        else if (!in->gateway_outcome)
                why = "no gateway outcome";
        if (why)
                snprintf(errstr, errstr_size, "review resolve: %s", why);
        return why == NULL;
}

int store_review_resolve(struct store *st,
                         const struct store_review_resolve_in *in,
                         struct store_review_resolve_out *out, char *errstr,
                         size_t errstr_size)
{
        struct store_tx t = { .st          = st,
                              .who         = "review resolve",
                              .errstr      = errstr,
                              .errstr_size = errstr_size,
                              .rc          = STORE_ERR };
        int rc            = STORE_ERR;

        memset(out, 0, sizeof(*out));
        if (!input_ok(in, errstr, errstr_size))
                return STORE_ERR_DATA;
        if (!store_tx_connection(st, "review resolve", errstr, errstr_size))
                return STORE_ERR;
        for (int attempt = 0;; attempt++) {
                rc = resolve_once(&t, in, out);
                if (rc == STORE_OK || !t.retry ||
                    attempt + 1 >= REVIEW_MAX_RETRIES)
                        break;
                store_tx_backoff(st, attempt);
        }
        return rc;
}
