/*
 * settle: the consumer's second transaction (payment final, key final with
 * the stored outcome, the ledger posting, the result in the outbox), and
 * the result-only outbox writes (replay, conflict, rejected), each a whole
 * batch in one statement.
 *
 * Must never: settle without the lease epoch (the UPDATE is fenced by
 * status = 'processing' AND lease_epoch = the caller's); post to the
 * ledger for anything but a payment moved to succeeded by this very
 * statement; write a result for an intent event already in the inbox.
 */
#include "store/store_int.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/*
 * $1..$9 one element per item. Every write hangs off `up`, the fenced
 * UPDATE, so a stale owner's item writes nothing. co_assert rolls the
 * whole batch back if the key, ledger or outbox writes do not match the
 * payments moved (a broken invariant must fail, not half-commit).
 * 'already': the item's result event id is in the outbox, i.e. this very
 * settle committed before (a repeat after a lost connection).
 * cur: the payment as of the statement's snapshot, for fenced items.
 */
static const struct store_stmt settle_stmt = {
        STORE_STMT_SETTLE, "co_settle_batch",
        "WITH input AS ("
        " SELECT * FROM co_settle_input($1::uuid[], $2::bigint[],"
        "  $3::text[], $4::text[], $5::text[], $6::text[], $7::int[],"
        "  $8::uuid[], $9::text[]) i"
        "), up AS ("
        " UPDATE payments p SET status = i.status,"
        "   provider_charge_id = coalesce(i.provider_charge_id,"
        "                                 p.provider_charge_id),"
        "   error_code = i.error_code, error_message = i.error_message,"
        "   attempts = greatest(p.attempts, i.attempts),"
        "   lease_owner = NULL, lease_expires_at = NULL,"
        "   finished_at = now(), updated_at = now()"
        "  FROM input i"
        "  WHERE p.payment_id = i.payment_id AND p.status = 'processing'"
        "    AND p.lease_epoch = i.lease_epoch"
        " RETURNING p.payment_id, p.tenant_id, p.idem_key, p.amount,"
        "  p.currency, p.status, p.provider_charge_id, p.error_code,"
        "  p.error_message, p.intent_event_id, i.result_event_id,"
        "  i.result_json"
        "), ik AS ("
        " UPDATE idempotency_keys k SET state = 'final', status = u.status,"
        "   provider_charge_id = u.provider_charge_id,"
        "   error_code = u.error_code, error_message = u.error_message,"
        "   result_json = u.result_json,"
        "   result_event_id = u.result_event_id, finished_at = now()"
        "  FROM up u"
        "  WHERE k.tenant_id = u.tenant_id AND k.idem_key = u.idem_key"
        "    AND k.payment_id = u.payment_id AND k.state = 'processing'"
        " RETURNING k.payment_id"
        "), lt AS ("
        " INSERT INTO ledger_transactions (payment_id, tenant_id, amount,"
        "   currency)"
        " SELECT payment_id, tenant_id, amount, currency FROM up"
        "  WHERE status = 'succeeded' ORDER BY payment_id"
        " RETURNING id, tenant_id, amount"
        "), le AS ("
        " INSERT INTO ledger_entries (txn_id, account, direction, amount)"
        " SELECT id, 'customer_funds:' || tenant_id, 'debit', amount"
        "  FROM lt"
        " UNION ALL"
        " SELECT id, 'merchant_payable:' || tenant_id, 'credit', amount"
        "  FROM lt"
        " RETURNING txn_id"
        "), ob AS ("
        " INSERT INTO outbox (event_id, message_key, tenant_id, idem_key,"
        "   payment_id, intent_event_id, status, replayed, payload)"
        " SELECT result_event_id, tenant_id || '/' || idem_key, tenant_id,"
        "   idem_key, payment_id, intent_event_id, status, false,"
        "   result_json"
        "  FROM up ORDER BY payment_id"
        " RETURNING payment_id"
        "), chk AS ("
        " SELECT co_assert((SELECT count(*) FROM ik) ="
        "                  (SELECT count(*) FROM up), 'settle: key rows')"
        "    AND co_assert((SELECT count(*) FROM ob) ="
        "                  (SELECT count(*) FROM up), 'settle: results')"
        "    AND co_assert((SELECT count(*) FROM le) ="
        "                  2 * (SELECT count(*) FROM lt), 'settle: ledger')"
        "    AS ok"
        ")"
        " SELECT i.ord,"
        "  CASE WHEN u.payment_id IS NOT NULL THEN 'ok'"
        "       WHEN o.event_id IS NOT NULL THEN 'already'"
        "       ELSE 'fenced' END,"
        "  cur.status, cur.lease_epoch, chk.ok"
        " FROM input i CROSS JOIN chk"
        " LEFT JOIN up u ON u.payment_id = i.payment_id"
        " LEFT JOIN outbox o ON o.event_id = i.result_event_id"
        "  AND o.payment_id = i.payment_id"
        " LEFT JOIN payments cur ON cur.payment_id = i.payment_id"
        " ORDER BY i.ord",
        9
};

/*
 * $1..$11 one element per item (after in-batch event dedup). The inbox
 * insert gates the outbox insert: only an event recorded now gets a
 * result. Inbox rows go in (tenant, key, event) order, like the claim's.
 */
static const struct store_stmt outbox_stmt = {
        STORE_STMT_OUTBOX, "co_outbox_batch",
        "WITH input AS ("
        " SELECT * FROM co_outbox_input($1::uuid[], $2::text[],"
        "  $3::text[], $4::text[], $5::uuid[], $6::text[], $7::text[],"
        "  $8::text[], $9::text[], $10::int[], $11::bigint[]) i"
        "), ib AS ("
        " INSERT INTO inbox (event_id, tenant_id, idem_key, disposition,"
        "   topic, kafka_partition, kafka_offset)"
        " SELECT intent_event_id, tenant_id, idem_key, disposition, topic,"
        "   kafka_partition, kafka_offset"
        "  FROM input ORDER BY tenant_id, idem_key, intent_event_id"
        " ON CONFLICT (tenant_id, event_id) DO NOTHING"
        " RETURNING tenant_id, event_id"
        "), ob AS ("
        " INSERT INTO outbox (event_id, message_key, tenant_id, idem_key,"
        "   payment_id, intent_event_id, status, replayed, payload)"
        " SELECT i.result_event_id, i.tenant_id || '/' || i.idem_key,"
        "   i.tenant_id, i.idem_key, i.payment_id, i.intent_event_id,"
        "   i.status, i.disposition = 'replay', i.result_json"
        "  FROM input i JOIN ib ON ib.tenant_id = i.tenant_id"
        "   AND ib.event_id = i.intent_event_id"
        "  ORDER BY i.ord"
        " RETURNING event_id"
        ")"
        " SELECT i.ord, ob.event_id IS NOT NULL"
        " FROM input i LEFT JOIN ob ON ob.event_id = i.result_event_id"
        " ORDER BY i.ord",
        11
};

enum { SETTLE_ARRAYS = 9, OUTBOX_ARRAYS = 11 };

static const char *settle_status_name(enum settle_status s)
{
        switch (s) {
        case SETTLE_SUCCEEDED:
                return "succeeded";
        case SETTLE_FAILED:
                return "failed";
        case SETTLE_REVIEW:
                return "review";
        }
        return NULL;
}

/* Sorting by a string field while keeping the batch order among equals,
 * so "the later copy" is well defined. */
struct idx_key {
        const char *key;
        size_t idx;
};

static int cmp_idx_key(const void *a, const void *b)
{
        const struct idx_key *x = a;
        const struct idx_key *y = b;
        int c                   = strcmp(x->key, y->key);

        if (c != 0)
                return c;
        return x->idx < y->idx ? -1 : x->idx > y->idx;
}

/* The same with a (tenant, event id) pair: the inbox is per tenant. */
struct idx_key2 {
        const char *tenant, *event;
        size_t idx;
};

static int cmp_idx_key2(const void *a, const void *b)
{
        const struct idx_key2 *x = a;
        const struct idx_key2 *y = b;
        int c                    = strcmp(x->tenant, y->tenant);

        if (c == 0)
                c = strcmp(x->event, y->event);
        if (c != 0)
                return c;
        return x->idx < y->idx ? -1 : x->idx > y->idx;
}

static bool settle_item_valid(const struct settle_item *it)
{
        const char *st = settle_status_name(it->status);

        return it->payment_id && st && it->result_event_id && it->result_json &&
               it->lease_epoch > 0 &&
               (it->status != SETTLE_SUCCEEDED || it->provider_charge_id);
}

int store_settle_batch(struct store *st, struct settle_item *items, size_t n,
                       char *errstr, size_t errstr_size)
{
        struct pgarr arr[SETTLE_ARRAYS];
        const char *values[SETTLE_ARRAYS];
        struct idx_key *order = NULL;
        size_t *sent          = NULL;
        size_t nsent          = 0;
        PGresult *res         = NULL;
        int rc                = STORE_ERR;

        for (int a = 0; a < SETTLE_ARRAYS; a++)
                pgarr_init(&arr[a]);
        for (size_t i = 0; i < n; i++) {
                items[i].outcome           = 0;
                items[i].current_status[0] = '\0';
                items[i].current_epoch     = 0;
                if (!settle_item_valid(&items[i])) {
                        snprintf(errstr, errstr_size,
                                 "settle: item %zu is incomplete", i);
                        rc = STORE_ERR_DATA;
                        goto done;
                }
        }
        if (n == 0)
                return STORE_OK;
        order = malloc(n * sizeof(*order));
        sent  = malloc(n * sizeof(*sent));
        if (!order || !sent) {
                snprintf(errstr, errstr_size, "settle: out of memory");
                goto done;
        }
        /* Payment id order: concurrent settles lock rows in one order. */
        for (size_t i = 0; i < n; i++)
                order[i] = (struct idx_key){ items[i].payment_id, i };
        qsort(order, n, sizeof(*order), cmp_idx_key);
        for (size_t k = 0; k < n; k++) {
                struct settle_item *it = &items[order[k].idx];

                if (k > 0 && strcmp(order[k - 1].key, order[k].key) == 0) {
                        it->outcome = SETTLE_FENCED; /* a later copy */
                        continue;
                }
                sent[nsent++] = order[k].idx;
                pgarr_text(&arr[0], it->payment_id);
                pgarr_i64(&arr[1], it->lease_epoch);
                pgarr_text(&arr[2], settle_status_name(it->status));
                pgarr_text(&arr[3], it->provider_charge_id);
                pgarr_text(&arr[4], it->error_code);
                pgarr_text(&arr[5], it->error_message);
                pgarr_i64(&arr[6], it->attempts);
                pgarr_text(&arr[7], it->result_event_id);
                pgarr_text(&arr[8], it->result_json);
        }
        for (int a = 0; a < SETTLE_ARRAYS; a++) {
                values[a] = pgarr_finish(&arr[a]);
                if (!values[a]) {
                        snprintf(errstr, errstr_size, "settle: out of memory");
                        goto done;
                }
        }
        res = store_exec(st, &settle_stmt, values, &rc, errstr, errstr_size);
        if (!res)
                goto done;
        rc = STORE_ERR;
        if ((size_t)PQntuples(res) != nsent || PQnfields(res) != 5) {
                snprintf(errstr, errstr_size,
                         "settle: unexpected result shape (%d rows)",
                         PQntuples(res));
                goto done;
        }
        for (int r = 0; r < PQntuples(res); r++) {
                long ord      = strtol(PQgetvalue(res, r, 0), NULL, 10);
                const char *o = PQgetvalue(res, r, 1);
                struct settle_item *it;

                if (ord < 1 || (size_t)ord > nsent) {
                        snprintf(errstr, errstr_size,
                                 "settle: unexpected row order");
                        goto done;
                }
                it = &items[sent[ord - 1]];
                if (strcmp(o, "ok") == 0)
                        it->outcome = SETTLE_OK;
                else if (strcmp(o, "already") == 0)
                        it->outcome = SETTLE_ALREADY;
                else
                        it->outcome = SETTLE_FENCED;
                if (it->outcome != SETTLE_OK) {
                        store_copy_field(res, r, 2, it->current_status,
                                         sizeof(it->current_status));
                        it->current_epoch = store_i64_field(res, r, 3);
                }
        }
        rc = STORE_OK;

done:
        PQclear(res);
        free(order);
        free(sent);
        for (int a = 0; a < SETTLE_ARRAYS; a++)
                pgarr_free(&arr[a]);
        return rc;
}

static const char *outbox_disposition(enum outbox_kind k)
{
        switch (k) {
        case OUTBOX_REPLAY:
                return "replay";
        case OUTBOX_CONFLICT:
                return "conflict";
        case OUTBOX_REJECTED:
                return "rejected";
        }
        return NULL;
}

static const char *outbox_status(const struct outbox_item *it)
{
        switch (it->kind) {
        case OUTBOX_REPLAY:
                return it->replay_status;
        case OUTBOX_CONFLICT:
                return "conflict";
        case OUTBOX_REJECTED:
                return "rejected";
        }
        return NULL;
}

static bool outbox_item_valid(const struct outbox_item *it)
{
        return outbox_disposition(it->kind) && outbox_status(it) &&
               it->result_event_id && it->intent_event_id && it->tenant_id &&
               it->idem_key && it->result_json &&
               (it->kind != OUTBOX_REPLAY || it->payment_id);
}

int store_outbox_batch(struct store *st, struct outbox_item *items, size_t n,
                       char *errstr, size_t errstr_size)
{
        struct pgarr arr[OUTBOX_ARRAYS];
        const char *values[OUTBOX_ARRAYS];
        struct idx_key2 *order = NULL;
        size_t *sent           = NULL;
        size_t nsent           = 0;
        PGresult *res          = NULL;
        int rc                 = STORE_ERR;

        for (int a = 0; a < OUTBOX_ARRAYS; a++)
                pgarr_init(&arr[a]);
        for (size_t i = 0; i < n; i++) {
                items[i].written = false;
                if (!outbox_item_valid(&items[i])) {
                        snprintf(errstr, errstr_size,
                                 "outbox: item %zu is incomplete", i);
                        rc = STORE_ERR_DATA;
                        goto done;
                }
        }
        if (n == 0)
                return STORE_OK;
        order = malloc(n * sizeof(*order));
        sent  = malloc(n * sizeof(*sent));
        if (!order || !sent) {
                snprintf(errstr, errstr_size, "outbox: out of memory");
                goto done;
        }
        /* The first item of a (tenant, intent event id) wins; the rest are
         * dups. */
        for (size_t i = 0; i < n; i++)
                order[i] = (struct idx_key2){ items[i].tenant_id,
                                              items[i].intent_event_id, i };
        qsort(order, n, sizeof(*order), cmp_idx_key2);
        for (size_t k = 0; k < n; k++) {
                if (k > 0 &&
                    strcmp(order[k - 1].tenant, order[k].tenant) == 0 &&
                    strcmp(order[k - 1].event, order[k].event) == 0)
                        continue;
                sent[nsent++] = order[k].idx;
        }
        for (size_t k = 0; k < nsent; k++) {
                const struct outbox_item *it = &items[sent[k]];

                pgarr_text(&arr[0], it->result_event_id);
                pgarr_text(&arr[1], it->intent_event_id);
                pgarr_text(&arr[2], it->tenant_id);
                pgarr_text(&arr[3], it->idem_key);
                pgarr_text(&arr[4],
                           it->kind == OUTBOX_REPLAY ? it->payment_id : NULL);
                pgarr_text(&arr[5], outbox_disposition(it->kind));
                pgarr_text(&arr[6], outbox_status(it));
                pgarr_text(&arr[7], it->result_json);
                pgarr_text(&arr[8], it->topic);
                if (it->partition >= 0)
                        pgarr_i64(&arr[9], it->partition);
                else
                        pgarr_text(&arr[9], NULL);
                if (it->offset >= 0)
                        pgarr_i64(&arr[10], it->offset);
                else
                        pgarr_text(&arr[10], NULL);
        }
        for (int a = 0; a < OUTBOX_ARRAYS; a++) {
                values[a] = pgarr_finish(&arr[a]);
                if (!values[a]) {
                        snprintf(errstr, errstr_size, "outbox: out of memory");
                        goto done;
                }
        }
        res = store_exec(st, &outbox_stmt, values, &rc, errstr, errstr_size);
        if (!res)
                goto done;
        rc = STORE_ERR;
        if ((size_t)PQntuples(res) != nsent || PQnfields(res) != 2) {
                snprintf(errstr, errstr_size,
                         "outbox: unexpected result shape (%d rows)",
                         PQntuples(res));
                goto done;
        }
        for (int r = 0; r < PQntuples(res); r++) {
                long ord = strtol(PQgetvalue(res, r, 0), NULL, 10);

                if (ord < 1 || (size_t)ord > nsent) {
                        snprintf(errstr, errstr_size,
                                 "outbox: unexpected row order");
                        goto done;
                }
                items[sent[ord - 1]].written =
                    strcmp(PQgetvalue(res, r, 1), "t") == 0;
        }
        rc = STORE_OK;

done:
        PQclear(res);
        free(order);
        free(sent);
        for (int a = 0; a < OUTBOX_ARRAYS; a++)
                pgarr_free(&arr[a]);
        return rc;
}
