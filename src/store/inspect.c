/* SPDX-License-Identifier: Apache-2.0 */
/*
 * inspect: one intent's whole story in one read-only query (see
 * inspect.h). The JSON is built by PostgreSQL (json_build_object), so
 * every row type keeps its own column names and types.
 */
#include "store/inspect.h"
#include "store/store.h"
#include "store/store_int.h"
#include "util/uuid.h"
#include "util/xalloc.h"

#include <libpq-fe.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* $1 by (key|event|payment), $2 value, $3 tenant, $4 key (by key). */
static const char inspect_sql[] =
    "WITH sel AS ("
    "  SELECT tenant_id, idem_key FROM inbox"
    "   WHERE $1 = 'event' AND event_id = $2"
    "  UNION ALL"
    /* an intent's first event is its payment's, not in the inbox (0017):
     * no index on it, a scan (an operator's question, not a hot path) */
    "  SELECT tenant_id, idem_key FROM payments"
    "   WHERE $1 = 'event' AND intent_event_id = $2"
    "  UNION ALL"
    /* by the primary key: $5 is the id when it is a UUID, else NULL */
    "  SELECT tenant_id, idem_key FROM payments"
    "   WHERE $1 = 'payment' AND payment_id = $5::uuid"
    "  UNION ALL"
    "  SELECT $3, $4 WHERE $1 = 'key' AND (EXISTS (SELECT 1 FROM"
    "   idempotency_keys WHERE tenant_id = $3 AND idem_key = $4) OR EXISTS"
    "   (SELECT 1 FROM outbox WHERE payment_id IS NULL"
    "     AND tenant_id = $3 AND idem_key = $4))"
    "  LIMIT 1),"
    " k AS (SELECT k.* FROM idempotency_keys k JOIN sel s"
    "        ON k.tenant_id = s.tenant_id AND k.idem_key = s.idem_key),"
    " p AS (SELECT p.* FROM payments p JOIN sel s"
    "        ON p.tenant_id = s.tenant_id AND p.idem_key = s.idem_key)"
    " SELECT json_build_object("
    "  'tenant_id', (SELECT tenant_id FROM sel),"
    "  'key', (SELECT json_build_object('request_hash',"
    "      encode(request_hash, 'hex'), 'state', state, 'status', status,"
    "      'payment_id', payment_id, 'result_event_id',"
    "      result_event_id, 'created_at', created_at, 'finished_at',"
    "      finished_at, 'expires_at', expires_at, 'tombstoned_at',"
    "      tombstoned_at) FROM k),"
    "  'payment', (SELECT json_build_object('payment_id', payment_id,"
    "      'status', status, 'order_id', order_id, 'customer_id',"
    "      customer_id, 'amount', amount, 'currency', currency,"
    "      'provider_charge_id', provider_charge_id, 'error_code',"
    "      error_code, 'lease_owner', lease_owner, 'lease_epoch',"
    "      lease_epoch, 'lease_expires_at', lease_expires_at, 'attempts',"
    "      attempts, 'intent_event_id', intent_event_id, 'created_at',"
    "      created_at, 'finished_at', finished_at) FROM p),"
    /* a posting is both legs of one amount (0016): the entries the
     * ledger_entries view gives it, debit first, read here from the row
     * itself (through the view, by txn_id, a scan of the whole ledger) */
    "  'ledger', (SELECT json_agg(json_build_object('txn_id', t.id,"
    "      'amount', t.amount, 'currency', t.currency, 'created_at',"
    "      t.created_at, 'entries', json_build_array("
    "        json_build_object('account', t.debit_account, 'direction',"
    "          'debit', 'amount', t.amount),"
    "        json_build_object('account', t.credit_account, 'direction',"
    "          'credit', 'amount', t.amount))) ORDER BY t.id)"
    "      FROM ledger_postings t JOIN p ON t.payment_id = p.payment_id),"
    "  'events', (SELECT json_agg(json_build_object('event_id', i.event_id,"
    "      'disposition', i.disposition, 'topic', i.topic, 'partition',"
    "      i.kafka_partition, 'offset', i.kafka_offset, 'received_at',"
    "      i.received_at) ORDER BY i.received_at)"
    "      FROM (SELECT event_id, disposition, topic, kafka_partition,"
    "              kafka_offset, received_at FROM inbox i JOIN sel s"
    "             ON i.tenant_id = s.tenant_id AND i.idem_key = s.idem_key"
    "            UNION ALL"
    /* the first event: the payment names it (no inbox row since 0017) */
    "            SELECT intent_event_id, 'new', NULL, NULL, NULL, created_at"
    "              FROM p WHERE NOT EXISTS (SELECT 1 FROM inbox b"
    "               WHERE b.tenant_id = p.tenant_id"
    "                 AND b.event_id = p.intent_event_id)) i),"
    "  'results', (SELECT json_agg(json_build_object('outbox_id', o.id,"
    "      'event_id', o.event_id, 'intent_event_id', o.intent_event_id,"
    "      'status', o.status, 'replayed', o.replayed, 'created_at',"
    "      o.created_at, 'published', co_outbox_published(o.id, o.parked_at,"
    "      o.published_at), 'published_at', co_outbox_published_at(o.id,"
    "      o.parked_at, o.published_at, o.reopened_at)) ORDER BY o.id)"
    "      FROM (SELECT o.* FROM outbox o JOIN p"
    "             ON o.payment_id = p.payment_id"
    "            UNION ALL"
    "            SELECT o.* FROM outbox o JOIN sel s"
    "             ON o.tenant_id = s.tenant_id AND o.idem_key = s.idem_key"
    "            WHERE o.payment_id IS NULL) o),"
    "  'evidence', (SELECT json_agg(json_build_object('at', g.at, 'kind',"
    "      g.kind, 'actor', g.actor, 'lease_epoch', g.lease_epoch,"
    "      'http_status', g.http_status, 'transport_error',"
    "      g.transport_error, 'outcome', g.outcome, 'provider_charge_id',"
    "      g.provider_charge_id) ORDER BY g.id)"
    "      FROM gateway_evidence g JOIN p ON g.payment_id = p.payment_id)"
    " ), idem_key FROM sel";

int store_inspect(struct store *st, enum inspect_by by, const char *value,
                  char **json_out, char **key_out, char *errstr,
                  size_t errstr_size)
{
        static const char *const names[] = { "key", "event", "payment" };
        const char *params[5]            = { names[by], value, "", "", NULL };
        char *copy                       = NULL, *slash;
        PGconn *conn                     = store_pgconn(st);
        PGresult *res;
        int r = STORE_ERR;

        *json_out = *key_out = NULL;
        if (by == INSPECT_BY_KEY) {
                copy = xstrdup(value);
                if (!(slash = strchr(copy, '/'))) {
                        snprintf(errstr, errstr_size,
                                 "inspect: a key is <tenant_id>/<key>");
                        free(copy);
                        return STORE_ERR;
                }
                *slash    = '\0';
                params[2] = copy;
                params[3] = slash + 1;
        }
        /* not a UUID: no payment has it (the cast would fail) */
        if (by == INSPECT_BY_PAYMENT && uuid_valid(value, strlen(value)))
                params[4] = value;
        res = PQexecParams(conn, inspect_sql, 5, NULL, params, NULL, NULL, 0);
        if (PQresultStatus(res) != PGRES_TUPLES_OK) {
                store_format_error(res, conn, "inspect", errstr, errstr_size);
                r = PQstatus(conn) == CONNECTION_OK ? STORE_ERR
                                                    : STORE_ERR_CONN;
                goto done;
        }
        if (PQntuples(res) == 1 && !PQgetisnull(res, 0, 0)) {
                *json_out = xstrdup(PQgetvalue(res, 0, 0));
                *key_out  = xstrdup(PQgetvalue(res, 0, 1));
        }
        r = STORE_OK;
done:
        PQclear(res);
        free(copy);
        return r;
}
