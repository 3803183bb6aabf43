/* SPDX-License-Identifier: Apache-2.0 */
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

#include <string.h>

/*
 * $1..$9 one element per item, $10 the lease owner each item holds its
 * epoch under (NULL: not checked), $11 the result's compact detail
 * (payment/result.h; NULL: none), stored instead of the whole message
 * once result_format.compact is set (0028: not before every relay reads
 * it). Every write hangs off `up`, the fenced
 * UPDATE (status processing, the item's epoch and owner), so a stale
 * owner's item writes nothing. The owner matters after a failover that
 * lost a claim: another owner claims the intent again at epoch 1, the
 * epoch the first owner holds too. co_assert rolls the
 * whole batch back if the ledger or outbox writes do not match the
 * payments moved (a broken invariant must fail, not half-commit). The
 * payment row is the idempotency key (0017): its status is the key's.
 * The lease's expiry stays (0029): the settle changes no column that an
 * index of payments names, so it is a HOT update (a late settle, after
 * the expiry, moves it to now(); review holds 'infinity').
 * 'already': the payment is final with the item's status at the item's
 * epoch, i.e. this very settle committed before (a repeat after a lost
 * connection): nobody else settles at an epoch we hold, and a takeover
 * raises it ('fenced').
 * up reads payments through the primary key (the redundant = ANY ($1)
 * says so to the planner; from the join alone it read every processing
 * payment through the lease index, live and dead, and hashed them).
 * cur: the payment as of the statement's snapshot, read only for the
 * items the UPDATE did not move (NULL for the others: their outcome is
 * ok). LATERAL with LIMIT 1 so that the planner keeps it one index probe
 * per such item: as a plain join it hashed a
 * sequential scan of payments and of outbox into every settle (measured:
 * 16 of 38 ms per batch of 100 on an 11,000-row table).
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
        "   lease_owner = NULL, lease_expires_at = CASE"
        "     WHEN i.status = 'review' THEN 'infinity'"
        "     ELSE greatest(p.lease_expires_at, now()) END,"
        "   finished_at = now(), updated_at = now()"
        "  FROM input i"
        "  WHERE p.payment_id = ANY ($1::uuid[])"
        "    AND p.payment_id = i.payment_id AND p.status = 'processing'"
        "    AND p.lease_epoch = i.lease_epoch"
        "    AND (($10::text[])[i.ord] IS NULL"
        "         OR p.lease_owner = ($10::text[])[i.ord])"
        " RETURNING p.payment_id, p.tenant_id, p.idem_key, p.amount,"
        "  p.currency, p.status, p.provider_charge_id, p.error_code,"
        "  p.error_message, p.intent_event_id, i.result_event_id,"
        "  i.result_json, ($11::text[])[i.ord] AS result_detail"
        "), lp AS ("
        " INSERT INTO ledger_postings (payment_id, kind, tenant_id, amount,"
        "   currency, debit_account, credit_account)"
        " SELECT payment_id, 'charge', tenant_id, amount, currency,"
        "   'customer_funds:' || tenant_id, 'merchant_payable:' || tenant_id"
        "  FROM up WHERE status = 'succeeded' ORDER BY payment_id"
        " RETURNING 1"
        "), ob AS ("
        " INSERT INTO outbox (event_id, message_key, tenant_id, idem_key,"
        "   payment_id, intent_event_id, status, replayed, payload, detail)"
        " SELECT result_event_id, tenant_id || '/' || idem_key, tenant_id,"
        "   idem_key, payment_id, intent_event_id, status, false,"
        "   CASE WHEN f.compact AND result_detail IS NOT NULL THEN NULL"
        "        ELSE result_json END,"
        "   CASE WHEN f.compact THEN result_detail END"
        "  FROM up LEFT JOIN (SELECT compact FROM result_format"
        "                      WHERE id = 1) f ON true"
        "  ORDER BY payment_id"
        " RETURNING payment_id"
        "), chk AS ("
        " SELECT co_assert((SELECT count(*) FROM ob) ="
        "                  (SELECT count(*) FROM up), 'settle: results')"
        "    AND co_assert((SELECT count(*) FROM lp) ="
        "                  (SELECT count(*) FROM up"
        "                    WHERE status = 'succeeded'), 'settle: ledger')"
        "    AS ok"
        ")"
        " SELECT i.ord,"
        "  CASE WHEN u.payment_id IS NOT NULL THEN 'ok'"
        "       WHEN cur.status = i.status"
        "         AND cur.lease_epoch = i.lease_epoch THEN 'already'"
        "       ELSE 'fenced' END,"
        "  cur.status, cur.lease_epoch, chk.ok"
        " FROM input i CROSS JOIN chk"
        " LEFT JOIN up u ON u.payment_id = i.payment_id"
        " LEFT JOIN LATERAL (SELECT c.status, c.lease_epoch FROM payments c"
        "   WHERE u.payment_id IS NULL AND c.payment_id = i.payment_id"
        "   LIMIT 1) cur"
        "  ON true"
        " ORDER BY i.ord",
        11
};

/*
 * $1..$11 one element per item (after in-batch event dedup), $12 the
 * hex SHA-256 of each item's message (NULL: unknown). The inbox
 * insert gates the outbox insert: only an event recorded now gets a
 * result. Inbox rows go in (tenant, key, event) order, like the claim's.
 *
 * cur: a replay repeats what its claim read, and the payment may have
 * moved since (a review resolved by a person or a webhook between the
 * claim and this write): a replay is written only while its payment
 * still holds the replayed status. FOR SHARE waits for a finish in
 * progress and re-checks the row it commits (READ COMMITTED), and a
 * finish that comes later waits for this statement, so a stale review
 * can never be published behind the result that resolved it (found by
 * the model, model/findings). A stale item writes nothing, not even its
 * inbox row: the caller claims it again.
 */
static const struct store_stmt outbox_stmt = {
        STORE_STMT_OUTBOX, "co_outbox_batch",
        "WITH input AS ("
        " SELECT * FROM co_outbox_input($1::uuid[], $2::text[],"
        "  $3::text[], $4::text[], $5::uuid[], $6::text[], $7::text[],"
        "  $8::text[], $9::text[], $10::int[], $11::bigint[]) i"
        "), cur AS ("
        " SELECT p.payment_id, p.status FROM payments p"
        "  WHERE p.payment_id = ANY (ARRAY(SELECT payment_id FROM input"
        "                                  WHERE disposition = 'replay'))"
        "  ORDER BY p.payment_id FOR SHARE"
        "), ok AS ("
        " SELECT i.* FROM input i"
        "  WHERE i.disposition <> 'replay' OR EXISTS (SELECT 1 FROM cur c"
        "   WHERE c.payment_id = i.payment_id AND c.status = i.status)"
        "), ib AS ("
        " INSERT INTO inbox (event_id, tenant_id, idem_key, disposition,"
        "   topic, kafka_partition, kafka_offset, msg_digest)"
        " SELECT intent_event_id, tenant_id, idem_key, disposition, topic,"
        "   kafka_partition, kafka_offset, decode(($12::text[])[ord], 'hex')"
        "  FROM ok ORDER BY tenant_id, idem_key, intent_event_id"
        " ON CONFLICT (tenant_id, event_id) DO NOTHING"
        " RETURNING tenant_id, event_id"
        "), ob AS ("
        " INSERT INTO outbox (event_id, message_key, tenant_id, idem_key,"
        "   payment_id, intent_event_id, status, replayed, payload)"
        " SELECT i.result_event_id, i.tenant_id || '/' || i.idem_key,"
        "   i.tenant_id, i.idem_key, i.payment_id, i.intent_event_id,"
        "   i.status, i.disposition = 'replay', i.result_json"
        "  FROM ok i JOIN ib ON ib.tenant_id = i.tenant_id"
        "   AND ib.event_id = i.intent_event_id"
        "  ORDER BY i.ord"
        " RETURNING event_id"
        ")"
        " SELECT i.ord, ob.event_id IS NOT NULL, k.ord IS NULL"
        " FROM input i LEFT JOIN ob ON ob.event_id = i.result_event_id"
        " LEFT JOIN ok k ON k.ord = i.ord"
        " ORDER BY i.ord",
        12
};

enum { SETTLE_ARRAYS = 11, OUTBOX_ARRAYS = 12 };

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

/* Clears the out part; is the item complete? */
static bool settle_prepare(void *p)
{
        struct settle_item *it = p;
        const char *st         = settle_status_name(it->status);

        it->outcome           = 0;
        it->current_status[0] = '\0';
        it->current_epoch     = 0;
        return it->payment_id && st && it->result_event_id && it->result_json &&
               it->lease_epoch > 0 &&
               (it->status != SETTLE_SUCCEEDED || it->provider_charge_id);
}

/* Payment id order: concurrent settles lock rows in one order. */
static void settle_key(const void *items, size_t i, const char *k[2])
{
        k[0] = ((const struct settle_item *)items)[i].payment_id;
        k[1] = "";
}

static void settle_mark_dup(void *items, size_t i)
{
        ((struct settle_item *)items)[i].outcome = SETTLE_FENCED; /* later */
}

static bool settle_fill(struct store_batch *b, void *items, void *arg,
                        char *errstr, size_t errstr_size)
{
        struct pgarr *arr = b->arr;

        (void)arg;
        (void)errstr;
        (void)errstr_size;
        for (size_t k = 0; k < b->nsent; k++) {
                const struct settle_item *it =
                    (const struct settle_item *)items + store_batch_item(b, k);

                store_pgarr_text(&arr[0], it->payment_id);
                store_pgarr_i64(&arr[1], it->lease_epoch);
                store_pgarr_text(&arr[2], settle_status_name(it->status));
                store_pgarr_text(&arr[3], it->provider_charge_id);
                store_pgarr_text(&arr[4], it->error_code);
                store_pgarr_text(&arr[5], it->error_message);
                store_pgarr_i64(&arr[6], it->attempts);
                store_pgarr_text(&arr[7], it->result_event_id);
                store_pgarr_text(&arr[8], it->result_json);
                store_pgarr_text(&arr[9], it->lease_owner);
                store_pgarr_text(&arr[10], it->result_detail);
        }
        return true;
}

static void settle_read_row(void *items, size_t i, const PGresult *res, int r,
                            void *arg)
{
        struct settle_item *it = (struct settle_item *)items + i;
        const char *o          = PQgetvalue(res, r, 1);

        (void)arg;
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

static const struct store_batch_def settle_def = {
        .what          = "settle",
        .stmt          = &settle_stmt,
        .narrays       = SETTLE_ARRAYS,
        .nfields       = 5,
        .item_size     = sizeof(struct settle_item),
        .prepare       = settle_prepare,
        .incomplete    = "is incomplete",
        .incomplete_rc = STORE_ERR_DATA,
        .key           = settle_key,
        .on_dup        = settle_mark_dup,
        .sorted        = true,
        .fill          = settle_fill,
        .read_row      = settle_read_row,
};

int store_settle_batch(struct store *st, struct settle_item *items, size_t n,
                       char *errstr, size_t errstr_size)
{
        return store_batch_run(st, &settle_def, items, n, NULL, errstr,
                               errstr_size);
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

/* Clears the out part; is the item complete? */
static bool outbox_prepare(void *p)
{
        struct outbox_item *it = p;

        it->written = false;
        it->stale   = false;
        return outbox_disposition(it->kind) && outbox_status(it) &&
               it->result_event_id && it->intent_event_id && it->tenant_id &&
               it->idem_key && it->result_json &&
               (it->kind != OUTBOX_REPLAY || it->payment_id);
}

/* The first item of a (tenant, intent event id) wins; the rest are dups.
 * Sent in that order, so inbox rows are locked in one order. */
static void outbox_key(const void *items, size_t i, const char *k[2])
{
        const struct outbox_item *it = (const struct outbox_item *)items + i;

        k[0] = it->tenant_id;
        k[1] = it->intent_event_id;
}

static bool outbox_fill(struct store_batch *b, void *items, void *arg,
                        char *errstr, size_t errstr_size)
{
        struct pgarr *arr = b->arr;

        (void)arg;
        (void)errstr;
        (void)errstr_size;
        for (size_t k = 0; k < b->nsent; k++) {
                const struct outbox_item *it =
                    (const struct outbox_item *)items + store_batch_item(b, k);

                store_pgarr_text(&arr[0], it->result_event_id);
                store_pgarr_text(&arr[1], it->intent_event_id);
                store_pgarr_text(&arr[2], it->tenant_id);
                store_pgarr_text(&arr[3], it->idem_key);
                store_pgarr_text(
                    &arr[4], it->kind == OUTBOX_REPLAY ? it->payment_id : NULL);
                store_pgarr_text(&arr[5], outbox_disposition(it->kind));
                store_pgarr_text(&arr[6], outbox_status(it));
                store_pgarr_text(&arr[7], it->result_json);
                store_pgarr_text(&arr[8], it->topic);
                store_pgarr_i64_or_null(&arr[9], it->partition);
                store_pgarr_i64_or_null(&arr[10], it->offset);
                store_pgarr_hex_or_null(&arr[11], it->msg_digest,
                                        CRYPTO_SHA256_LEN);
        }
        return true;
}

static void outbox_read_row(void *items, size_t i, const PGresult *res, int r,
                            void *arg)
{
        struct outbox_item *it = (struct outbox_item *)items + i;

        (void)arg;
        it->written = strcmp(PQgetvalue(res, r, 1), "t") == 0;
        it->stale   = strcmp(PQgetvalue(res, r, 2), "t") == 0;
}

static const struct store_batch_def outbox_def = {
        .what          = "outbox",
        .stmt          = &outbox_stmt,
        .narrays       = OUTBOX_ARRAYS,
        .nfields       = 3,
        .item_size     = sizeof(struct outbox_item),
        .prepare       = outbox_prepare,
        .incomplete    = "is incomplete",
        .incomplete_rc = STORE_ERR_DATA,
        .key           = outbox_key,
        .sorted        = true,
        .fill          = outbox_fill,
        .read_row      = outbox_read_row,
};

int store_outbox_batch(struct store *st, struct outbox_item *items, size_t n,
                       char *errstr, size_t errstr_size)
{
        return store_batch_run(st, &outbox_def, items, n, NULL, errstr,
                               errstr_size);
}
