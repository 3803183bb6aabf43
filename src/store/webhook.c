/*
 * store/webhook: one verified, decoded gateway webhook applied in one
 * explicit transaction (store/webhook.h; docs/data-model.md, "Webhooks"):
 *
 *   1. INSERT its webhook-id ... ON CONFLICT DO NOTHING RETURNING: no row
 *      back is a DUPLICATE, and the transaction is rolled back whole;
 *   2. if the reference is a UUID, lock the payment row (FOR UPDATE), so
 *      a settle of the same payment waits for us or we wait for it;
 *   3. decide with payment_webhook_rule (pure);
 *   4. apply: finish (fenced: lease_epoch + 1, so the worker still holding
 *      the old epoch is refused by the settle's WHERE), post the charge
 *      and/or the refund, write the outbox result and the evidence row;
 *   5. write what it did on the webhook_events row; COMMIT.
 *
 * Several statements because the decision and the result JSON are built
 * here, between them; a webhook is rare, so plain (unprepared) statements.
 *
 * Must never: commit the webhook-id without its effect or the effect
 * without the id; post twice (UNIQUE (payment_id, kind) would refuse it
 * anyway); put a key, a method or a row's values in an error message.
 */
#include "store/webhook.h"

#include "payment/result.h"
#include "store/store_int.h"
#include "util/log.h"
#include "util/timeutil.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define WEBHOOK_MAX_RETRIES 5

const char *store_webhook_result_name(enum store_webhook_result r)
{
        switch (r) {
        case STORE_WEBHOOK_APPLIED:
                return "applied";
        case STORE_WEBHOOK_DUPLICATE:
                return "duplicate";
        case STORE_WEBHOOK_IGNORED:
                return "ignored";
        case STORE_WEBHOOK_CONTRADICTION:
                return "contradiction";
        case STORE_WEBHOOK_UNKNOWN_REFERENCE:
                return "unknown_reference";
        }
        return "unknown";
}

/* The event type's wire name (store/ does not include gateway/). */
static const char *event_type_name(enum gateway_event_type t)
{
        switch (t) {
        case GATEWAY_EVENT_CHARGE_SUCCEEDED:
                return "charge.succeeded";
        case GATEWAY_EVENT_CHARGE_FAILED:
                return "charge.failed";
        case GATEWAY_EVENT_CHARGE_REFUNDED:
                return "charge.refunded";
        }
        return NULL;
}

/* One attempt's transaction. */
struct wtx {
        struct store *st;
        char *errstr;
        size_t errstr_size;
        bool retry; /* failed on a deadlock / serialization failure */
        int rc;     /* of the failure */
};

/* The payment as locked. */
struct locked {
        char status[STORE_STATUS_LEN];
        int64_t amount;
        char currency[4];
        char *charge_id; /* or NULL */
        bool refunded;
        char *tenant_id, *idem_key, *order_id, *intent_event_id;
        int64_t lease_epoch;
};

static void locked_free(struct locked *p)
{
        free(p->charge_id);
        free(p->tenant_id);
        free(p->idem_key);
        free(p->order_id);
        free(p->intent_event_id);
        memset(p, 0, sizeof(*p));
}

/*
 * Runs sql with text parameters v[0..n); NULL with t->rc (and t->retry)
 * set on a failure, whose reason goes to errstr as "<what>: SQLSTATE
 * message" (never DETAIL, which holds values).
 */
static PGresult *run(struct wtx *t, const char *what, const char *sql, int n,
                     const char *const *v)
{
        PGconn *conn     = store_pgconn(t->st);
        PGresult *res    = PQexecParams(conn, sql, n, NULL, v, NULL, NULL, 0);
        ExecStatusType s = PQresultStatus(res);
        const char *state;

        t->st->stats.statements++;
        if (s == PGRES_TUPLES_OK || s == PGRES_COMMAND_OK)
                return res;
        store_format_error(res, conn, what, t->errstr, t->errstr_size);
        state = res ? PQresultErrorField(res, PG_DIAG_SQLSTATE) : NULL;
        if (PQstatus(conn) != CONNECTION_OK)
                t->rc = STORE_ERR_CONN;
        else if (state &&
                 (strncmp(state, "22", 2) == 0 ||
                  strncmp(state, "23", 2) == 0 || strncmp(state, "54", 2) == 0))
                t->rc = STORE_ERR_DATA;
        else
                t->rc = STORE_ERR;
        t->retry = state &&
                   (strcmp(state, "40P01") == 0 || strcmp(state, "40001") == 0);
        PQclear(res);
        return NULL;
}

/* Runs a statement whose result is not read. */
static bool run_ok(struct wtx *t, const char *what, const char *sql, int n,
                   const char *const *v)
{
        PGresult *res = run(t, what, sql, n, v);

        PQclear(res);
        return res != NULL;
}

static bool lock_payment(struct wtx *t, const char *payment_id,
                         struct locked *p, bool *found,
                         char id_out[UUID_STR_LEN])
{
        static const char sql[] =
            "SELECT status, amount, currency, provider_charge_id,"
            " refunded_at IS NOT NULL, tenant_id, idem_key, order_id,"
            " intent_event_id, lease_epoch, payment_id"
            " FROM payments WHERE payment_id = $1::uuid FOR UPDATE";
        const char *v[1] = { payment_id };
        PGresult *res    = run(t, "webhook: lock payment", sql, 1, v);

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
                /* as the database writes it (lower case) */
                store_copy_field(res, 0, 10, id_out, UUID_STR_LEN);
        }
        PQclear(res);
        return true;
}

/* What the finish writes, built before the statement. */
struct finish {
        const char *status; /* "succeeded" | "failed" */
        const char *error_code, *error_message;
        char result_event_id[UUID_STR_LEN];
        char *result_json;
        bool resolves_review;
};

/* The result message of a finish (payment_result_build). */
static bool build_result(struct wtx *t, const char *payment_id,
                         const struct locked *p, const struct gateway_event *ev,
                         struct finish *f)
{
        struct payment_result r;
        char now[40], err[160];
        size_t len;

        memset(&r, 0, sizeof(r));
        if (!uuid_v4(f->result_event_id)) {
                snprintf(t->errstr, t->errstr_size,
                         "webhook: no random event id");
                return false;
        }
        rfc3339_format(time_wall_ms(), now, sizeof(now));
        r.event_id           = f->result_event_id;
        r.intent_event_id    = p->intent_event_id;
        r.tenant_id          = p->tenant_id;
        r.idempotency_key    = p->idem_key;
        r.order_id           = p->order_id;
        r.payment_id         = payment_id;
        r.status             = strcmp(f->status, "succeeded") == 0
                                   ? PAYMENT_STATUS_SUCCEEDED
                                   : PAYMENT_STATUS_FAILED;
        r.has_amount         = true;
        r.amount             = p->amount;
        r.currency           = p->currency;
        r.provider_charge_id = ev->charge_id;
        r.error_code         = f->error_code;
        r.error_message      = f->error_message;
        r.occurred_at        = now;
        r.resolves_review    = f->resolves_review;
        if (payment_result_build(&r, &f->result_json, &len, err, sizeof(err)) !=
            0) {
                snprintf(t->errstr, t->errstr_size, "webhook: %s", err);
                t->rc = STORE_ERR_DATA;
                return false;
        }
        return true;
}

/*
 * Finishes the payment (locked, in status prev) as a gateway answer
 * would: status, stored outcome, fenced lease, key final, outbox result.
 * *epoch gets the new lease epoch.
 */
static bool finish_payment(struct wtx *t, const char *payment_id,
                           const char *prev, const struct gateway_event *ev,
                           const struct finish *f, int64_t *epoch)
{
        static const char sql[] =
            "WITH up AS ("
            " UPDATE payments SET status = $2, provider_charge_id = $3,"
            "   error_code = $4, error_message = $5,"
            "   lease_owner = NULL, lease_expires_at = NULL,"
            "   lease_epoch = lease_epoch + 1,"
            "   finished_at = now(), updated_at = now()"
            "  WHERE payment_id = $1::uuid AND status = $9"
            " RETURNING payment_id, tenant_id, idem_key, status,"
            "  intent_event_id, lease_epoch"
            "), ik AS ("
            " UPDATE idempotency_keys k SET state = 'final',"
            "   status = u.status, provider_charge_id = $3,"
            "   error_code = $4, error_message = $5, result_json = $7,"
            "   result_event_id = $6::uuid, finished_at = now()"
            "  FROM up u"
            "  WHERE k.tenant_id = u.tenant_id AND k.idem_key = u.idem_key"
            "    AND k.payment_id = u.payment_id"
            " RETURNING 1"
            "), ob AS ("
            " INSERT INTO outbox (event_id, message_key, tenant_id, idem_key,"
            "   payment_id, intent_event_id, status, replayed, payload,"
            "   resolves_review)"
            " SELECT $6::uuid, tenant_id || '/' || idem_key, tenant_id,"
            "   idem_key, payment_id, intent_event_id, status, false, $7,"
            "   $8::boolean"
            "  FROM up"
            " RETURNING 1"
            ")"
            " SELECT co_assert((SELECT count(*) FROM up) = 1"
            "                  AND (SELECT count(*) FROM ik) = 1"
            "                  AND (SELECT count(*) FROM ob) = 1,"
            "                  'webhook: finish'),"
            "  (SELECT lease_epoch FROM up)";
        const char *v[9] = { payment_id,
                             f->status,
                             ev->charge_id,
                             f->error_code,
                             f->error_message,
                             f->result_event_id,
                             f->result_json,
                             f->resolves_review ? "t" : "f",
                             prev };
        PGresult *res    = run(t, "webhook: finish", sql, 9, v);

        if (res == NULL)
                return false;
        *epoch = store_i64_field(res, 0, 1);
        PQclear(res);
        return true;
}

/*
 * The one posting of `kind` for the payment: a charge debits the
 * customer's funds and credits the merchant, a refund reverses it (and
 * sets payments.refunded_at). Two entries, balanced, or nothing.
 */
static bool post(struct wtx *t, const char *payment_id, const char *kind)
{
        static const char sql[] =
            "WITH lt AS ("
            " INSERT INTO ledger_transactions (payment_id, tenant_id, amount,"
            "   currency, kind)"
            " SELECT payment_id, tenant_id, amount, currency, $2 FROM payments"
            "  WHERE payment_id = $1::uuid AND status = 'succeeded'"
            " RETURNING id, tenant_id, amount"
            "), le AS ("
            " INSERT INTO ledger_entries (txn_id, account, direction, amount)"
            " SELECT id, CASE WHEN $2 = 'charge' THEN 'customer_funds:'"
            "   ELSE 'merchant_payable:' END || tenant_id, 'debit', amount"
            "  FROM lt"
            " UNION ALL"
            " SELECT id, CASE WHEN $2 = 'charge' THEN 'merchant_payable:'"
            "   ELSE 'customer_funds:' END || tenant_id, 'credit', amount"
            "  FROM lt"
            " RETURNING 1"
            "), rf AS ("
            " UPDATE payments SET refunded_at = now(), updated_at = now()"
            "  WHERE payment_id = $1::uuid AND $2 = 'refund'"
            "    AND refunded_at IS NULL"
            " RETURNING 1"
            ")"
            " SELECT co_assert((SELECT count(*) FROM lt) = 1"
            "                  AND (SELECT count(*) FROM le) = 2"
            "                  AND (SELECT count(*) FROM rf) ="
            "                      CASE WHEN $2 = 'refund' THEN 1 ELSE 0 END,"
            "                  'webhook: ledger posting')";
        const char *v[2] = { payment_id, kind };

        return run_ok(t, "webhook: posting", sql, 2, v);
}

static bool evidence(struct wtx *t, const char *payment_id,
                     const struct store_webhook_in *in, int64_t epoch,
                     const char *what)
{
        static const char sql[] =
            "INSERT INTO gateway_evidence (payment_id, kind, actor,"
            " lease_epoch, request_summary, outcome, provider_charge_id)"
            " VALUES ($1::uuid, 'webhook', $2, $3::bigint, $4, $5, $6)";
        char summary[320], ep[24];
        const char *v[6];

        snprintf(summary, sizeof(summary), "webhook %s webhook-id %s",
                 event_type_name(in->event->type), in->webhook_id);
        snprintf(ep, sizeof(ep), "%" PRId64, epoch);
        v[0] = payment_id;
        v[1] = in->actor;
        v[2] = epoch > 0 ? ep : NULL;
        v[3] = summary;
        v[4] = what;
        v[5] = in->event->charge_id;
        return run_ok(t, "webhook: evidence", sql, 6, v);
}

/* Applies a decided action to the locked payment. */
static bool apply_action(struct wtx *t, const struct store_webhook_in *in,
                         enum payment_webhook_action a, const char *payment_id,
                         struct locked *p, struct store_webhook_out *out)
{
        const struct gateway_event *ev = in->event;
        struct finish f;
        int64_t epoch = 0;
        bool ok       = false;

        memset(&f, 0, sizeof(f));
        if (a == PAYMENT_WEBHOOK_REFUND) {
                snprintf(out->applied, sizeof(out->applied), "refunded");
                return post(t, payment_id, "refund") &&
                       evidence(t, payment_id, in, 0, "refund");
        }
        f.status = a == PAYMENT_WEBHOOK_FINISH_FAILED ? "failed" : "succeeded";
        if (a == PAYMENT_WEBHOOK_FINISH_FAILED) {
                bool own = ev->error_code[0] != '\0';

                f.error_code =
                    own ? ev->error_code : PAYMENT_WEBHOOK_FAILED_CODE;
                f.error_message = own && ev->error_message[0]
                                      ? ev->error_message
                                      : PAYMENT_WEBHOOK_FAILED_MESSAGE;
        }
        f.resolves_review = strcmp(p->status, "review") == 0;
        if (!build_result(t, payment_id, p, ev, &f) ||
            !finish_payment(t, payment_id, p->status, ev, &f, &epoch))
                goto out;
        if (strcmp(f.status, "succeeded") == 0 &&
            !post(t, payment_id, "charge"))
                goto out;
        if (a == PAYMENT_WEBHOOK_FINISH_AND_REFUND &&
            !post(t, payment_id, "refund"))
                goto out;
        ok = evidence(t, payment_id, in, epoch, payment_webhook_action_name(a));
        snprintf(out->applied, sizeof(out->applied), "%s",
                 a == PAYMENT_WEBHOOK_FINISH_AND_REFUND ? "refunded"
                                                        : f.status);
out:
        free(f.result_json);
        return ok;
}

static bool record(struct wtx *t, const struct store_webhook_in *in,
                   const struct store_webhook_out *out)
{
        static const char sql[] =
            "UPDATE webhook_events SET payment_id = $2::uuid, result = $3,"
            " detail = $4, previous_status = $5, applied_status = $6"
            " WHERE webhook_id = $1";
        static const char *const names[] = {
                [STORE_WEBHOOK_APPLIED]           = "applied",
                [STORE_WEBHOOK_IGNORED]           = "ignored",
                [STORE_WEBHOOK_CONTRADICTION]     = "contradiction",
                [STORE_WEBHOOK_UNKNOWN_REFERENCE] = "unknown_reference",
        };
        const char *v[6] = {
                in->webhook_id,
                out->payment_id[0] ? out->payment_id : NULL,
                names[out->result],
                out->detail[0] ? out->detail : NULL,
                out->previous[0] ? out->previous : NULL,
                out->applied[0] ? out->applied : NULL,
        };

        return run_ok(t, "webhook: record", sql, 6, v);
}

/* Step 1: true with *dup set, or false on a failure. */
static bool insert_id(struct wtx *t, const struct store_webhook_in *in,
                      bool *dup)
{
        static const char sql[] =
            "INSERT INTO webhook_events (webhook_id, sent_at, event_type,"
            " reference, provider_charge_id, amount, currency)"
            " VALUES ($1, to_timestamp($2::bigint), $3, $4, $5, $6::bigint,"
            "  $7)"
            " ON CONFLICT (webhook_id) DO NOTHING RETURNING 1";
        const struct gateway_event *ev = in->event;
        char ts[24], amount[24];
        const char *v[7] = { in->webhook_id,
                             ts,
                             event_type_name(ev->type),
                             ev->reference,
                             ev->charge_id,
                             amount,
                             ev->currency };
        PGresult *res;

        snprintf(ts, sizeof(ts), "%" PRId64, in->webhook_timestamp);
        snprintf(amount, sizeof(amount), "%" PRId64, ev->amount);
        res = run(t, "webhook: record id", sql, 7, v);
        if (res == NULL)
                return false;
        *dup = PQntuples(res) == 0;
        PQclear(res);
        return true;
}

/* Steps 2-5 inside the open transaction. */
static bool decide_and_apply(struct wtx *t, const struct store_webhook_in *in,
                             struct store_webhook_out *out)
{
        const struct gateway_event *ev = in->event;
        struct payment_webhook_state ps;
        struct locked p;
        enum payment_webhook_action a;
        const char *why = NULL;
        bool found = false, ok = false;

        memset(&p, 0, sizeof(p));
        out->result = STORE_WEBHOOK_UNKNOWN_REFERENCE;
        if (!uuid_valid(ev->reference, strlen(ev->reference))) {
                snprintf(out->detail, sizeof(out->detail),
                         "reference is not a payment id");
                return record(t, in, out);
        }
        if (!lock_payment(t, ev->reference, &p, &found, out->payment_id))
                return false;
        if (!found) {
                snprintf(out->detail, sizeof(out->detail),
                         "no payment with this id");
                return record(t, in, out);
        }
        snprintf(out->previous, sizeof(out->previous), "%s", p.status);
        memset(&ps, 0, sizeof(ps));
        if (!payment_status_parse(p.status, &ps.status))
                ps.status = PAYMENT_STATUS_CONFLICT; /* never a payment's */
        ps.amount             = p.amount;
        ps.currency           = p.currency;
        ps.provider_charge_id = p.charge_id;
        ps.refunded           = p.refunded;
        a                     = payment_webhook_rule(&ps, ev, &why);
        switch (a) {
        case PAYMENT_WEBHOOK_IGNORE:
        case PAYMENT_WEBHOOK_CONTRADICTION:
                out->result = a == PAYMENT_WEBHOOK_IGNORE
                                  ? STORE_WEBHOOK_IGNORED
                                  : STORE_WEBHOOK_CONTRADICTION;
                snprintf(out->detail, sizeof(out->detail), "%s",
                         why ? why : "");
                break;
        default:
                out->result = STORE_WEBHOOK_APPLIED;
                if (!apply_action(t, in, a, out->payment_id, &p, out))
                        goto out;
                break;
        }
        ok = record(t, in, out);
out:
        locked_free(&p);
        return ok;
}

static void rollback(struct wtx *t)
{
        PGconn *conn = store_pgconn(t->st);

        if (PQstatus(conn) == CONNECTION_OK)
                PQclear(PQexec(conn, "ROLLBACK"));
}

/* One attempt: BEGIN ... COMMIT. */
static int apply_once(struct wtx *t, const struct store_webhook_in *in,
                      struct store_webhook_out *out)
{
        PGresult *res;
        bool dup = false;

        memset(out, 0, sizeof(*out));
        t->retry = false;
        t->rc    = STORE_ERR;
        if (!run_ok(t, "webhook: begin", "BEGIN ISOLATION LEVEL READ COMMITTED",
                    0, NULL))
                return t->rc;
        if (!insert_id(t, in, &dup))
                goto fail;
        if (dup) {
                rollback(t); /* nothing else: not even a lock */
                out->result = STORE_WEBHOOK_DUPLICATE;
                return STORE_OK;
        }
        if (!decide_and_apply(t, in, out))
                goto fail;
        res = run(t, "webhook: commit", "COMMIT", 0, NULL);
        if (res == NULL)
                goto fail;
        /* a COMMIT of a failed transaction answers ROLLBACK */
        if (strcmp(PQcmdStatus(res), "COMMIT") != 0) {
                PQclear(res);
                snprintf(t->errstr, t->errstr_size,
                         "webhook: the transaction was rolled back");
                t->rc = STORE_ERR;
                return t->rc;
        }
        PQclear(res);
        return STORE_OK;
fail:
        rollback(t);
        memset(out, 0, sizeof(*out));
        return t->rc;
}

static void log_outcome(const struct store_webhook_in *in,
                        const struct store_webhook_out *out)
{
        struct log_ctx ctx = LOG_CTX_INIT;

        ctx.component  = "webhook";
        ctx.payment_id = out->payment_id[0] ? out->payment_id : NULL;
        if (out->result == STORE_WEBHOOK_CONTRADICTION)
                log_error(&ctx,
                          "webhook contradiction: payment %s webhook %s "
                          "(%s, payment %s): %s; recorded, nothing applied",
                          out->payment_id, in->webhook_id,
                          event_type_name(in->event->type), out->previous,
                          out->detail);
        else if (out->result == STORE_WEBHOOK_APPLIED)
                log_info(&ctx, "webhook %s applied: payment %s %s -> %s",
                         in->webhook_id, out->payment_id, out->previous,
                         out->applied);
}

int store_webhook_apply(struct store *st, const struct store_webhook_in *in,
                        struct store_webhook_out *out, char *errstr,
                        size_t errstr_size)
{
        struct wtx t = { st, errstr, errstr_size, false, STORE_ERR };
        int rc       = STORE_ERR;

        memset(out, 0, sizeof(*out));
        if (!in || !in->webhook_id || !in->event || !*in->webhook_id ||
            strlen(in->webhook_id) > 255 || !event_type_name(in->event->type)) {
                snprintf(errstr, errstr_size, "webhook: incomplete input");
                return STORE_ERR_DATA;
        }
        if (PQstatus(store_pgconn(st)) != CONNECTION_OK) {
                /* as store_exec: a broken connection is re-made first */
                st->prepared = 0;
                PQreset(store_pgconn(st));
                if (PQstatus(store_pgconn(st)) != CONNECTION_OK) {
                        snprintf(errstr, errstr_size,
                                 "webhook: no database connection");
                        return STORE_ERR;
                }
                PQclear(PQexec(store_pgconn(st),
                               "SET default_transaction_isolation = "
                               "'read committed'"));
        }
        for (int attempt = 0;; attempt++) {
                rc = apply_once(&t, in, out);
                if (rc == STORE_OK || !t.retry ||
                    attempt + 1 >= WEBHOOK_MAX_RETRIES)
                        break;
                st->stats.retries++;
                {
                        struct timespec ts = { 0, (attempt + 1) * 2000000L };

                        while (nanosleep(&ts, &ts) != 0 && errno == EINTR)
                                ;
                }
        }
        if (rc == STORE_OK)
                log_outcome(in, out);
        return rc;
}

void store_webhook_contradictions_free(struct store_webhook_contradiction *c,
                                       size_t n)
{
        if (c == NULL)
                return;
        for (size_t i = 0; i < n; i++) {
                free(c[i].webhook_id);
                free(c[i].received_at);
                free(c[i].event_type);
                free(c[i].reference);
                free(c[i].provider_charge_id);
                free(c[i].previous_status);
                free(c[i].detail);
        }
        free(c);
}

int store_webhook_contradictions(struct store *st, size_t max,
                                 struct store_webhook_contradiction **out,
                                 size_t *n_out, char *errstr,
                                 size_t errstr_size)
{
        static const char sql[] =
            "SELECT webhook_id, to_char(received_at AT TIME ZONE 'UTC',"
            "  'YYYY-MM-DD\"T\"HH24:MI:SS.MS\"Z\"'), event_type, reference,"
            " payment_id, provider_charge_id, amount, currency,"
            " previous_status, detail"
            " FROM webhook_contradictions LIMIT $1::bigint";
        struct wtx t = { st, errstr, errstr_size, false, STORE_ERR };
        struct store_webhook_contradiction *c;
        char lim[24];
        const char *v[1] = { lim };
        PGresult *res;
        int n;

        *out   = NULL;
        *n_out = 0;
        snprintf(lim, sizeof(lim), "%zu", max);
        if ((res = run(&t, "webhook contradictions", sql, 1, v)) == NULL)
                return t.rc;
        n = PQntuples(res);
        c = store_rows_calloc(res, sizeof(*c));
        for (int i = 0; i < n; i++) {
                c[i].webhook_id  = store_strdup_field(res, i, 0);
                c[i].received_at = store_strdup_field(res, i, 1);
                c[i].event_type  = store_strdup_field(res, i, 2);
                c[i].reference   = store_strdup_field(res, i, 3);
                store_copy_field(res, i, 4, c[i].payment_id,
                                 sizeof(c[i].payment_id));
                c[i].provider_charge_id = store_strdup_field(res, i, 5);
                c[i].amount             = store_i64_field(res, i, 6);
                store_copy_field(res, i, 7, c[i].currency,
                                 sizeof(c[i].currency));
                c[i].previous_status = store_strdup_field(res, i, 8);
                c[i].detail          = store_strdup_field(res, i, 9);
        }
        PQclear(res);
        *out   = c;
        *n_out = (size_t)n;
        return STORE_OK;
}
