/* SPDX-License-Identifier: Apache-2.0 */
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
 * Locking, finishing and posting are store/finish.c's, shared with an
 * operator's review resolution (store/review.c), which must produce the
 * same kind of result.
 *
 * Must never: commit the webhook-id without its effect or the effect
 * without the id; post twice (UNIQUE (payment_id, kind) would refuse it
 * anyway); put a key, a method or a row's values in an error message.
 */
#include "store/webhook.h"

#include "store/finish.h"
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

static bool evidence(struct store_tx *t, const char *payment_id,
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
        return store_tx_exec(t, "evidence", sql, 6, v);
}

/* Applies a decided action to the locked payment. */
static bool apply_action(struct store_tx *t, const struct store_webhook_in *in,
                         enum payment_webhook_action a,
                         const struct store_locked *p,
                         struct store_webhook_out *out)
{
        const struct gateway_event *ev = in->event;
        struct store_finish f;

        memset(&f, 0, sizeof(f));
        if (a == PAYMENT_WEBHOOK_REFUND) {
                snprintf(out->applied, sizeof(out->applied), "refunded");
                return store_finish_post(t, p->payment_id, "refund") &&
                       evidence(t, p->payment_id, in, 0, "refund");
        }
        f.status = a == PAYMENT_WEBHOOK_FINISH_FAILED ? "failed" : "succeeded";
        f.provider_charge_id = ev->charge_id;
        if (a == PAYMENT_WEBHOOK_FINISH_FAILED) {
                bool own = ev->error_code[0] != '\0';

                f.error_code =
                    own ? ev->error_code : PAYMENT_WEBHOOK_FAILED_CODE;
                f.error_message = own && ev->error_message[0]
                                      ? ev->error_message
                                      : PAYMENT_WEBHOOK_FAILED_MESSAGE;
        }
        /* the charge posting of a success comes with the finish */
        if (!store_finish_payment(t, p, &f))
                return false;
        if (a == PAYMENT_WEBHOOK_FINISH_AND_REFUND &&
            !store_finish_post(t, p->payment_id, "refund"))
                return false;
        snprintf(out->applied, sizeof(out->applied), "%s",
                 a == PAYMENT_WEBHOOK_FINISH_AND_REFUND ? "refunded"
                                                        : f.status);
        return evidence(t, p->payment_id, in, f.epoch,
                        payment_webhook_action_name(a));
}

static bool record(struct store_tx *t, const struct store_webhook_in *in,
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

        return store_tx_exec(t, "record", sql, 6, v);
}

/* Step 1: true with *dup set, or false on a failure. */
static bool insert_id(struct store_tx *t, const struct store_webhook_in *in,
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
        res = store_tx_run(t, "record id", sql, 7, v);
        if (res == NULL)
                return false;
        *dup = PQntuples(res) == 0;
        PQclear(res);
        return true;
}

/* Steps 2-5 inside the open transaction. */
static bool decide_and_apply(struct store_tx *t,
                             const struct store_webhook_in *in,
                             struct store_webhook_out *out)
{
        const struct gateway_event *ev = in->event;
        struct payment_webhook_state ps;
        struct store_locked p;
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
        if (!store_finish_lock(t, ev->reference, &p, &found))
                return false;
        if (!found) {
                snprintf(out->detail, sizeof(out->detail),
                         "no payment with this id");
                return record(t, in, out);
        }
        snprintf(out->payment_id, sizeof(out->payment_id), "%s", p.payment_id);
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
                if (!apply_action(t, in, a, &p, out))
                        goto out;
                break;
        }
        ok = record(t, in, out);
out:
        store_locked_free(&p);
        return ok;
}

/* One attempt: BEGIN ... COMMIT. */
static int apply_once(struct store_tx *t, const struct store_webhook_in *in,
                      struct store_webhook_out *out)
{
        bool dup = false;

        memset(out, 0, sizeof(*out));
        t->retry = false;
        t->rc    = STORE_ERR;
        if (!store_tx_exec(t, "begin", "BEGIN ISOLATION LEVEL READ COMMITTED",
                           0, NULL))
                return t->rc;
        if (!insert_id(t, in, &dup))
                goto fail;
        if (dup) {
                store_tx_rollback(t); /* nothing else: not even a lock */
                out->result = STORE_WEBHOOK_DUPLICATE;
                return STORE_OK;
        }
        if (!decide_and_apply(t, in, out))
                goto fail;
        if (!store_tx_commit(t))
                goto fail;
        return STORE_OK;
fail:
        store_tx_rollback(t);
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
        struct store_tx t = { .st          = st,
                              .who         = "webhook",
                              .errstr      = errstr,
                              .errstr_size = errstr_size,
                              .rc          = STORE_ERR };
        int rc            = STORE_ERR;

        memset(out, 0, sizeof(*out));
        if (!in || !in->webhook_id || !in->event || !*in->webhook_id ||
            strlen(in->webhook_id) > 255 || !event_type_name(in->event->type)) {
                snprintf(errstr, errstr_size, "webhook: incomplete input");
                return STORE_ERR_DATA;
        }
        if (!store_tx_connection(st, "webhook", errstr, errstr_size))
                return STORE_ERR;
        for (int attempt = 0;; attempt++) {
                rc = apply_once(&t, in, out);
                if (rc == STORE_OK || !t.retry ||
                    attempt + 1 >= WEBHOOK_MAX_RETRIES)
                        break;
                store_tx_backoff(st, attempt);
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
        struct store_tx t = { .st          = st,
                              .who         = "webhook",
                              .errstr      = errstr,
                              .errstr_size = errstr_size,
                              .rc          = STORE_ERR };
        struct store_webhook_contradiction *c;
        char lim[24];
        const char *v[1] = { lim };
        PGresult *res;
        int n;

        *out   = NULL;
        *n_out = 0;
        snprintf(lim, sizeof(lim), "%zu", max);
        if ((res = store_tx_run(&t, "contradictions", sql, 1, v)) == NULL)
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

int store_webhook_acknowledge(struct store *st, const char *webhook_id,
                              const char *actor, const char *text,
                              enum store_webhook_ack *out, char *errstr,
                              size_t errstr_size)
{
        /* one statement: the update only while open, and what the row is
         * (so a refusal says why without a second round trip) */
        static const char sql[] =
            "WITH ack AS ("
            " UPDATE webhook_events SET acknowledged_at = now(),"
            "   acknowledged_by = $2, acknowledgement = $3"
            "  WHERE webhook_id = $1 AND result = 'contradiction'"
            "    AND acknowledged_at IS NULL"
            " RETURNING 1)"
            " SELECT (SELECT count(*) FROM ack),"
            "  (SELECT result FROM webhook_events WHERE webhook_id = $1),"
            "  (SELECT acknowledged_at IS NOT NULL FROM webhook_events"
            "    WHERE webhook_id = $1)";
        struct store_tx t = { .st          = st,
                              .who         = "webhook",
                              .errstr      = errstr,
                              .errstr_size = errstr_size,
                              .rc          = STORE_ERR };
        const char *v[3]  = { webhook_id, actor, text };
        PGresult *res;

        *out = STORE_WEBHOOK_ACK_NOT_FOUND;
        if (!store_tx_connection(st, "webhook", errstr, errstr_size))
                return STORE_ERR_CONN;
        if ((res = store_tx_run(&t, "acknowledge", sql, 3, v)) == NULL)
                return t.rc;
        if (store_i64_field(res, 0, 0) == 1)
                *out = STORE_WEBHOOK_ACK_DONE;
        else if (PQgetisnull(res, 0, 1))
                *out = STORE_WEBHOOK_ACK_NOT_FOUND;
        else if (strcmp(PQgetvalue(res, 0, 1), "contradiction") != 0)
                *out = STORE_WEBHOOK_ACK_NOT_CONTRADICTION;
        else
                *out = STORE_WEBHOOK_ACK_ALREADY;
        PQclear(res);
        return STORE_OK;
}
