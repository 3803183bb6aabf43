/* SPDX-License-Identifier: Apache-2.0 */
/*
 * claim: the consumer's first transaction, for a whole batch in one
 * statement. Inbox dedup by event id, the idempotency key claimed by
 * INSERT ... ON CONFLICT, the payment created in 'processing' under a
 * lease, the event recorded in the inbox.
 *
 * Must never: create a payment for an event already in the inbox; create
 * a second key or payment for (tenant, key); decide "new" from a SELECT;
 * send the provider-key secret to the server (the payment id and the
 * provider key are derived here, payment/identity.h); decide "new" from
 * the ids (a re-claim of the same intent derives the same payment id).
 */
#include "store/store_int.h"

#include "payment/identity.h"
#include "payment/provider_key.h"
#include "util/crypto.h"
#include "util/uuid.h"
#include "util/xalloc.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/*
 * $1..$14 one array element per item (after in-batch event dedup),
 * $15 the hex SHA-256 of each item's message (NULL: unknown), kept for
 * the sift (store_sift_batch): in the payment a new item creates, in the
 * inbox row of a copy. $16 lease owner, $17 lease ms, $18 key retention
 * ms, $19 true when the call repeats a claim whose answer was lost.
 *
 * The payment row is the idempotency key (0017): UNIQUE (tenant_id,
 * idem_key) with the request hash. The inbox holds copies only: the first
 * event of an intent is the payment's intent_event_id.
 *
 * fresh:  items whose (tenant, event id) is not in the inbox (statement
 *         snapshot): not a recorded copy. One inbox_pkey probe per item
 *         (LATERAL ... LIMIT 1): as NOT EXISTS the planner hashed a
 *         sequential scan of the whole inbox into every claim once the
 *         table had a few thousand rows. IS NOT TRUE, not IS NULL: the
 *         planner takes IS NULL of the probe's column to keep 1 row in
 *         200 and then joined fresh, rep and p by nested loops, every
 *         item's text key against every other's (measured: 2 x 9,900
 *         comparisons in a batch of 100, a third of the claim's time);
 *         IS NOT TRUE keeps half, and those joins are hashed.
 * rep:    the first fresh item of each (tenant, key): it alone may create.
 * p:      the payments of the representatives, in (tenant, key) order (two
 *         batches meet their keys in the same order), ON CONFLICT DO
 *         NOTHING over every unique index: a row comes back only if it
 *         was inserted now, which is the one test of "new" (the payment id
 *         is derived from (tenant, key, request hash), so a copy derives
 *         the id the row already holds). DO NOTHING waits for a
 *         concurrent inserter of the key and skips once it commits.
 * c:      every fresh item judged. An item of a key inserted now: new (the
 *         representative), else a copy in this batch: in_progress with
 *         the same request hash, conflict with another. Otherwise against
 *         the key's payment k, read at the statement's snapshot (one row
 *         holds the state and the outcome: they cannot disagree): absent
 *         means it was committed by a concurrent claim after the snapshot
 *         (DO NOTHING saw it): retry, the caller claims that item again in
 *         a new statement; the intent's first event (intent_event_id) is a
 *         dup_event (its redelivery), or new again for a repeat ($19)
 *         that finds the payment its lost attempt created (the derived
 *         id, this owner, epoch 1, processing, the lease running: read,
 *         not guessed); another hash is a conflict; processing is
 *         in_progress; final is a replay with the payment's outcome (a
 *         tombstone's too: payments are never deleted). k's LIMIT 1 keeps
 *         it one probe of the key index per item not inserted now.
 * ib:     in_progress copies into the inbox (their redelivery is then a
 *         dup_event); one that a concurrent batch recorded first is a
 *         dup_event. Replays, conflicts and rejections get their inbox
 *         row with their result (store_outbox_batch).
 */
static const struct store_stmt claim_stmt = {
        STORE_STMT_CLAIM, "co_claim_batch",
        "WITH input AS ("
        " SELECT * FROM co_claim_input($1::text[], $2::text[],"
        "  $3::text[], $4::text[], $5::uuid[], $6::text[], $7::text[],"
        "  $8::text[], $9::bigint[], $10::text[], $11::text[],"
        "  $12::text[], $13::int[], $14::bigint[]) i"
        "), fresh AS ("
        " SELECT i.*, decode(i.hash_hex, 'hex') AS request_hash FROM input i"
        "  LEFT JOIN LATERAL (SELECT true AS hit FROM inbox b"
        "                     WHERE b.tenant_id = i.tenant_id"
        "                       AND b.event_id = i.event_id LIMIT 1) b"
        "   ON true"
        "  WHERE b.hit IS NOT TRUE"
        "), rep AS ("
        " SELECT DISTINCT ON (tenant_id, idem_key) * FROM fresh"
        "  ORDER BY tenant_id, idem_key, ord"
        "), p AS ("
        " INSERT INTO payments (payment_id, tenant_id, idem_key,"
        "   request_hash, order_id, customer_id, amount, currency,"
        "   payment_method, provider_key, lease_owner, lease_epoch,"
        "   lease_expires_at, intent_event_id, expires_at, msg_digest)"
        " SELECT r.payment_id, r.tenant_id, r.idem_key, r.request_hash,"
        "   r.order_id, r.customer_id, r.amount, r.currency,"
        "   r.payment_method, r.provider_key, $16, 1,"
        "   clock_timestamp() + $17::bigint * interval '1 millisecond',"
        "   r.event_id,"
        "   now() + $18::bigint * interval '1 millisecond',"
        "   decode(($15::text[])[r.ord], 'hex')"
        "  FROM rep r ORDER BY r.tenant_id, r.idem_key"
        " ON CONFLICT DO NOTHING"
        " RETURNING tenant_id, idem_key, lease_epoch"
        "), c AS ("
        " SELECT f.ord, f.event_id, f.tenant_id, f.idem_key, f.topic,"
        "   f.kafka_partition, f.kafka_offset,"
        "   CASE WHEN np.idem_key IS NOT NULL THEN"
        "          CASE WHEN r.ord = f.ord THEN 'new'"
        "               WHEN r.request_hash <> f.request_hash"
        "                 THEN 'conflict'"
        "               ELSE 'in_progress' END"
        "        WHEN k.payment_id IS NULL THEN 'retry'"
        "        WHEN k.intent_event_id = f.event_id THEN"
        "          CASE WHEN $19 AND k.payment_id = f.payment_id"
        "                 AND k.status = 'processing'"
        "                 AND k.lease_owner = $16 AND k.lease_epoch = 1"
        "                 AND k.lease_expires_at > now() THEN 'new'"
        "               ELSE 'dup_event' END"
        "        WHEN k.request_hash <> f.request_hash THEN 'conflict'"
        "        WHEN k.status = 'processing' THEN 'in_progress'"
        "        ELSE 'replay' END AS outcome,"
        "   coalesce(k.payment_id, r.payment_id) AS k_payment_id,"
        "   coalesce(np.lease_epoch, k.lease_epoch) AS lease_epoch,"
        "   k.status, k.provider_charge_id, k.error_code, k.error_message"
        "  FROM fresh f JOIN rep r USING (tenant_id, idem_key)"
        "  LEFT JOIN p np USING (tenant_id, idem_key)"
        "  LEFT JOIN LATERAL (SELECT q.payment_id, q.request_hash,"
        "    q.status, q.provider_charge_id, q.error_code, q.error_message,"
        "    q.intent_event_id, q.lease_owner, q.lease_epoch,"
        "    q.lease_expires_at FROM payments q"
        "   WHERE np.idem_key IS NULL AND q.tenant_id = f.tenant_id"
        "     AND q.idem_key = f.idem_key LIMIT 1) k ON true"
        "), ib AS ("
        " INSERT INTO inbox (event_id, tenant_id, idem_key, disposition,"
        "   topic, kafka_partition, kafka_offset, msg_digest)"
        " SELECT event_id, tenant_id, idem_key, outcome, topic,"
        "   kafka_partition, kafka_offset, decode(($15::text[])[ord], 'hex')"
        "  FROM c WHERE outcome = 'in_progress'"
        "  ORDER BY tenant_id, idem_key, event_id"
        " ON CONFLICT (tenant_id, event_id) DO NOTHING"
        " RETURNING tenant_id, event_id"
        ")"
        " SELECT i.ord,"
        "  CASE WHEN c.ord IS NULL THEN 'dup_event'"
        "       WHEN c.outcome = 'in_progress' AND ib.event_id IS NULL"
        "         THEN 'dup_event'"
        "       ELSE c.outcome END,"
        "  c.k_payment_id, c.lease_epoch, c.status, c.provider_charge_id,"
        "  c.error_code, c.error_message"
        " FROM input i"
        " LEFT JOIN c ON c.ord = i.ord"
        " LEFT JOIN ib ON ib.tenant_id = i.tenant_id"
        "  AND ib.event_id = i.event_id"
        " ORDER BY i.ord",
        19
};

enum { CLAIM_ARRAYS = 15 };

/* Frees a stored outcome's strings and empties it. */
static void outcome_clear(struct store_outcome *o)
{
        free(o->provider_charge_id);
        free(o->error_code);
        free(o->error_message);
        memset(o, 0, sizeof(*o));
}

/* Reads a stored outcome from columns col (status, the key's), col+1
 * (provider charge id), col+2 (error code), col+3 (message): the
 * payment's. */
static void outcome_read(const PGresult *res, int r, int col,
                         struct store_outcome *o)
{
        store_copy_field(res, r, col, o->status, sizeof(o->status));
        o->provider_charge_id = store_strdup_field(res, r, col + 1);
        o->error_code         = store_strdup_field(res, r, col + 2);
        o->error_message      = store_strdup_field(res, r, col + 3);
}

void store_claim_item_clear(struct claim_item *it)
{
        outcome_clear(&it->stored);
        it->outcome = 0;
        memset(it->payment_id, 0, sizeof(it->payment_id));
        memset(it->provider_key, 0, sizeof(it->provider_key));
        it->lease_epoch = 0;
}

/* What store_claim_batch passes to its fill and read_row callbacks. */
struct claim_args {
        const char *owner;
        int64_t lease_ms;
        int64_t retention_ms;
        const unsigned char *pk_secret;
        size_t pk_secret_len;
        const bool *seen; /* NULL, or per item: found in the inbox first */
        bool again;       /* $19: repeats a claim whose answer was lost */
        char num[2][24];  /* $17, $18 */
};

/* Clears the out part; are the in fields there? */
static bool claim_prepare(void *p)
{
        struct claim_item *it = p;

        store_claim_item_clear(it);
        return it->event_id && it->tenant_id && it->idem_key && it->order_id &&
               it->customer_id && it->currency && it->payment_method;
}

/* The inbox is per tenant: (tenant, event id) is an event's identity. */
static void claim_event_key(const void *items, size_t i, const char *k[2])
{
        const struct claim_item *it = (const struct claim_item *)items + i;

        k[0] = it->tenant_id;
        k[1] = it->event_id;
}

/* Found in the inbox by the pre-check: not sent (see inbox_seen_stmt). */
static bool claim_skip(const void *items, size_t i, void *arg)
{
        const struct claim_args *a = arg;

        (void)items;
        return a->seen && a->seen[i];
}

static void claim_mark_dup(void *items, size_t i)
{
        ((struct claim_item *)items)[i].outcome = CLAIM_DUP_EVENT;
}

/* "retry": the item is claimed again (claim_retries); never returned. */
#define CLAIM_RETRY_ ((enum claim_outcome)0)

static enum claim_outcome parse_outcome(const char *s)
{
        if (strcmp(s, "retry") == 0)
                return CLAIM_RETRY_;
        if (strcmp(s, "new") == 0)
                return CLAIM_NEW;
        if (strcmp(s, "in_progress") == 0)
                return CLAIM_IN_PROGRESS;
        if (strcmp(s, "replay") == 0)
                return CLAIM_REPLAY;
        if (strcmp(s, "conflict") == 0)
                return CLAIM_CONFLICT;
        return CLAIM_DUP_EVENT;
}

/*
 * Gives every item sent a fresh payment id and its provider key, puts its
 * fields into the arrays $1..$15 and sets $16..$18.
 */
static bool claim_fill(struct store_batch *b, void *items, void *arg,
                       char *errstr, size_t errstr_size)
{
        struct claim_args *a = arg;
        struct pgarr *arr    = b->arr;

        if (!a->owner || a->lease_ms <= 0 ||
            (!a->pk_secret && a->pk_secret_len)) {
                snprintf(errstr, errstr_size, "claim: bad arguments");
                return false;
        }
        for (size_t k = 0; k < b->nsent; k++) {
                struct claim_item *it =
                    (struct claim_item *)items + store_batch_item(b, k);

                payment_id_derive(a->pk_secret, a->pk_secret_len, it->tenant_id,
                                  it->idem_key, it->request_hash,
                                  it->payment_id);
                payment_provider_key(a->pk_secret, a->pk_secret_len,
                                     it->payment_id, it->provider_key);
                store_pgarr_text(&arr[0], it->event_id);
                store_pgarr_text(&arr[1], it->tenant_id);
                store_pgarr_text(&arr[2], it->idem_key);
                store_pgarr_hex(&arr[3], it->request_hash, CRYPTO_SHA256_LEN);
                store_pgarr_text(&arr[4], it->payment_id);
                store_pgarr_text(&arr[5], it->provider_key);
                store_pgarr_text(&arr[6], it->order_id);
                store_pgarr_text(&arr[7], it->customer_id);
                store_pgarr_i64(&arr[8], it->amount);
                store_pgarr_text(&arr[9], it->currency);
                store_pgarr_text(&arr[10], it->payment_method);
                store_pgarr_text(&arr[11], it->topic);
                store_pgarr_i64_or_null(&arr[12], it->partition);
                store_pgarr_i64_or_null(&arr[13], it->offset);
                store_pgarr_hex_or_null(&arr[14], it->msg_digest,
                                        CRYPTO_SHA256_LEN);
        }
        snprintf(a->num[0], sizeof(a->num[0]), "%lld", (long long)a->lease_ms);
        snprintf(a->num[1], sizeof(a->num[1]), "%lld",
                 (long long)a->retention_ms);
        b->values[15] = a->owner;
        b->values[16] = a->num[0];
        b->values[17] = a->num[1];
        b->values[18] = a->again ? "true" : "false";
        return true;
}

/* Reads one row of the claim's result into its item. */
static void claim_read_row(void *items, size_t i, const PGresult *res, int r,
                           void *arg)
{
        struct claim_item *it = (struct claim_item *)items + i;

        (void)arg;
        it->outcome = parse_outcome(PQgetvalue(res, r, 1));
        switch (it->outcome) {
        case CLAIM_NEW:
                it->lease_epoch = store_i64_field(res, r, 3);
                break;
        case CLAIM_REPLAY:
                outcome_read(res, r, 4, &it->stored);
                break;
        case CLAIM_IN_PROGRESS:
        case CLAIM_CONFLICT:
        case CLAIM_DUP_EVENT:
                break;
        }
        if (it->outcome != CLAIM_NEW) {
                /* the id and key generated here were not used */
                memset(it->provider_key, 0, sizeof(it->provider_key));
                memset(it->payment_id, 0, sizeof(it->payment_id));
        }
        if (it->outcome == CLAIM_REPLAY || it->outcome == CLAIM_IN_PROGRESS)
                store_copy_field(res, r, 2, it->payment_id,
                                 sizeof(it->payment_id));
}

/* Sent in batch order, not sorted: the first item of a key creates (rep
 * orders by ord); the statement itself takes the locks in key order. */
static const struct store_batch_def claim_def = {
        .what          = "claim",
        .stmt          = &claim_stmt,
        .narrays       = CLAIM_ARRAYS,
        .nfields       = 8,
        .item_size     = sizeof(struct claim_item),
        .prepare       = claim_prepare,
        .incomplete    = "lacks a field",
        .incomplete_rc = STORE_ERR_DATA,
        .key           = claim_event_key,
        .on_dup        = claim_mark_dup,
        .sorted        = false,
        .skip          = claim_skip,
        .fill          = claim_fill,
        .read_row      = claim_read_row,
};

/*
 * The pre-check of a replay: which items are recorded events, a copy's
 * (tenant, event id) in the inbox or an intent's first event (its
 * payment's intent_event_id, 0017). A committed record is final, so each
 * of them is CLAIM_DUP_EVENT whatever the claim would find, and the claim
 * leaves them out: a replayed event costs an index probe or two here
 * rather than its share of the claim (fourteen array elements, a payment
 * id, a provider key and the CTE's joins). Events recorded after this
 * look are still caught by the claim itself. LATERAL ... LIMIT 1, as in
 * the claim, so that each probe stays an index probe whatever the planner
 * thinks of the tables.
 */
static const struct store_stmt inbox_seen_stmt = {
        STORE_STMT_INBOX_SEEN, "co_inbox_seen",
        "SELECT i.ord, b.hit IS NOT NULL OR q.hit IS NOT NULL"
        " FROM unnest($1::text[], $2::text[], $3::text[]) WITH ORDINALITY"
        "   AS i(tenant_id, event_id, idem_key, ord)"
        " LEFT JOIN LATERAL (SELECT true AS hit FROM inbox b"
        "   WHERE b.tenant_id = i.tenant_id AND b.event_id = i.event_id"
        "   LIMIT 1) b ON true"
        " LEFT JOIN LATERAL (SELECT true AS hit FROM payments q"
        "   WHERE b.hit IS NULL AND q.tenant_id = i.tenant_id"
        "     AND q.idem_key = i.idem_key"
        "     AND q.intent_event_id = i.event_id LIMIT 1) q ON true",
        3
};

/* Leaves the claim item as it is (the claim clears it); are the fields
 * the look needs there? */
static bool seen_prepare(void *p)
{
        const struct claim_item *it = p;

        return it->tenant_id && it->event_id && it->idem_key;
}

static bool seen_fill(struct store_batch *b, void *items, void *arg,
                      char *errstr, size_t errstr_size)
{
        (void)arg;
        (void)errstr;
        (void)errstr_size;
        for (size_t k = 0; k < b->nsent; k++) {
                const struct claim_item *it =
                    (const struct claim_item *)items + store_batch_item(b, k);

                store_pgarr_text(&b->arr[0], it->tenant_id);
                store_pgarr_text(&b->arr[1], it->event_id);
                store_pgarr_text(&b->arr[2], it->idem_key);
        }
        return true;
}

/* arg: the bool per item that the look sets. */
static void seen_read_row(void *items, size_t i, const PGresult *res, int r,
                          void *arg)
{
        (void)items;
        ((bool *)arg)[i] = PQgetvalue(res, r, 1)[0] == 't';
}

static const struct store_batch_def inbox_seen_def = {
        .what          = "claim pre-check",
        .stmt          = &inbox_seen_stmt,
        .narrays       = 3,
        .nfields       = 2,
        .item_size     = sizeof(struct claim_item),
        .prepare       = seen_prepare,
        .incomplete    = "lacks a field",
        .incomplete_rc = STORE_ERR_DATA,
        .fill          = seen_fill,
        .read_row      = seen_read_row,
};

/*
 * The sift (0015): is each message's (tenant, event id) in the inbox, and
 * was it recorded from a message with the same SHA-256? Read-only; one
 * inbox_pkey probe per item, the row's digest compared here so that only
 * two booleans come back.
 */
static const struct store_stmt sift_stmt = {
        STORE_STMT_SIFT, "co_sift",
        "SELECT i.ord, coalesce(b.hit, q.hit, false),"
        "  coalesce(b.same, q.same, false)"
        " FROM unnest($1::text[], $2::text[], $3::text[], $4::text[])"
        "   WITH ORDINALITY AS i(tenant_id, event_id, digest_hex, idem_key,"
        "   ord)"
        " LEFT JOIN LATERAL (SELECT true AS hit,"
        "   b.msg_digest = decode(i.digest_hex, 'hex') AS same FROM inbox b"
        "   WHERE b.tenant_id = i.tenant_id AND b.event_id = i.event_id"
        "   LIMIT 1) b ON true"
        /* an intent's first event is its payment's (0017), found by key */
        " LEFT JOIN LATERAL (SELECT true AS hit,"
        "   q.msg_digest = decode(i.digest_hex, 'hex') AS same"
        "   FROM payments q WHERE b.hit IS NULL AND i.idem_key <> ''"
        "    AND q.tenant_id = i.tenant_id AND q.idem_key = i.idem_key"
        "    AND q.intent_event_id = i.event_id LIMIT 1) q ON true",
        4
};

static bool sift_prepare(void *p)
{
        struct sift_item *it = p;

        it->recorded = false;
        it->same     = false;
        return it->tenant_id && it->event_id && it->idem_key && it->msg_digest;
}

static bool sift_fill(struct store_batch *b, void *items, void *arg,
                      char *errstr, size_t errstr_size)
{
        (void)arg;
        (void)errstr;
        (void)errstr_size;
        for (size_t k = 0; k < b->nsent; k++) {
                const struct sift_item *it =
                    (const struct sift_item *)items + store_batch_item(b, k);

                store_pgarr_text(&b->arr[0], it->tenant_id);
                store_pgarr_text(&b->arr[1], it->event_id);
                store_pgarr_hex(&b->arr[2], it->msg_digest, CRYPTO_SHA256_LEN);
                store_pgarr_text(&b->arr[3], it->idem_key);
        }
        return true;
}

static void sift_read_row(void *items, size_t i, const PGresult *res, int r,
                          void *arg)
{
        struct sift_item *it = (struct sift_item *)items + i;

        (void)arg;
        it->recorded = PQgetvalue(res, r, 1)[0] == 't';
        it->same     = PQgetvalue(res, r, 2)[0] == 't';
}

static const struct store_batch_def sift_def = {
        .what          = "sift",
        .stmt          = &sift_stmt,
        .narrays       = 4,
        .nfields       = 3,
        .item_size     = sizeof(struct sift_item),
        .prepare       = sift_prepare,
        .incomplete    = "lacks a field",
        .incomplete_rc = STORE_ERR_DATA,
        .fill          = sift_fill,
        .read_row      = sift_read_row,
};

int store_sift_batch(struct store *st, struct sift_item *items, size_t n,
                     char *errstr, size_t errstr_size)
{
        if (n == 0)
                return STORE_OK;
        return store_batch_run(st, &sift_def, items, n, NULL, errstr,
                               errstr_size);
}

/*
 * The items the claim answered "retry" (their key was committed by a
 * concurrent claim after the statement's snapshot) are claimed again, in a
 * statement of their own, whose snapshot sees the key; a few rounds at
 * most (each needs another concurrent first claim of the same key).
 */
#define CLAIM_ROUNDS 5

static int claim_retries(struct store *st, struct claim_item *items, size_t n,
                         struct claim_args *a, char *errstr, size_t errstr_size)
{
        for (int round = 0;; round++) {
                struct claim_item *again;
                size_t *idx, nr = 0;
                int rc;

                for (size_t i = 0; i < n; i++)
                        nr += items[i].outcome == CLAIM_RETRY_;
                if (nr == 0)
                        return STORE_OK;
                if (round == CLAIM_ROUNDS) {
                        snprintf(errstr, errstr_size,
                                 "claim: %zu key(s) still changing after %d "
                                 "rounds",
                                 nr, CLAIM_ROUNDS);
                        return STORE_ERR;
                }
                again = xcalloc(nr, sizeof(*again));
                idx   = xcalloc(nr, sizeof(*idx));
                nr    = 0;
                for (size_t i = 0; i < n; i++)
                        if (items[i].outcome == CLAIM_RETRY_) {
                                again[nr] = items[i];
                                idx[nr++] = i;
                        }
                rc = store_batch_run(st, &claim_def, again, nr, a, errstr,
                                     errstr_size);
                /* each item's answer (and the strings it owns) moves back */
                for (size_t k = 0; k < nr; k++)
                        items[idx[k]] = again[k];
                free(again);
                free(idx);
                if (rc != STORE_OK)
                        return rc;
        }
}

static int claim_batch(struct store *st, struct claim_item *items, size_t n,
                       const char *owner, int64_t lease_ms,
                       const unsigned char *pk_secret, size_t pk_secret_len,
                       bool again, char *errstr, size_t errstr_size)
{
        struct claim_args a = { .owner         = owner,
                                .lease_ms      = lease_ms,
                                .retention_ms  = st->key_retention_ms,
                                .pk_secret     = pk_secret,
                                .pk_secret_len = pk_secret_len,
                                .again         = again };
        bool *seen          = NULL;
        size_t dups         = 0;
        int rc              = STORE_OK;

        /* a repeat must see its own events: no pre-check */
        if (st->claim_precheck && n > 0 && !again) {
                seen   = xcalloc(n, sizeof(*seen));
                rc     = store_batch_run(st, &inbox_seen_def, items, n, seen,
                                         errstr, errstr_size);
                a.seen = seen;
        }
        if (rc == STORE_OK)
                rc = store_batch_run(st, &claim_def, items, n, &a, errstr,
                                     errstr_size);
        if (rc == STORE_OK)
                for (size_t i = 0; i < n; i++)
                        if (seen && seen[i])
                                items[i].outcome = CLAIM_DUP_EVENT;
        a.seen = NULL;
        if (rc == STORE_OK)
                rc = claim_retries(st, items, n, &a, errstr, errstr_size);
        if (rc != STORE_OK) {
                for (size_t i = 0; i < n; i++)
                        store_claim_item_clear(&items[i]);
                free(seen);
                return rc;
        }
        for (size_t i = 0; i < n; i++)
                dups += items[i].outcome == CLAIM_DUP_EVENT;
        /* a batch mostly of recorded events: a replay; the next batch
         * looks first (one statement more while it lasts, and for the
         * first batch after it) */
        st->claim_precheck = n > 0 && dups * 2 >= n;
        free(seen);
        return STORE_OK;
}

int store_claim_batch(struct store *st, struct claim_item *items, size_t n,
                      const char *owner, int64_t lease_ms,
                      const unsigned char *pk_secret, size_t pk_secret_len,
                      char *errstr, size_t errstr_size)
{
        return claim_batch(st, items, n, owner, lease_ms, pk_secret,
                           pk_secret_len, false, errstr, errstr_size);
}

int store_claim_batch_again(struct store *st, struct claim_item *items,
                            size_t n, const char *owner, int64_t lease_ms,
                            const unsigned char *pk_secret,
                            size_t pk_secret_len, char *errstr,
                            size_t errstr_size)
{
        return claim_batch(st, items, n, owner, lease_ms, pk_secret,
                           pk_secret_len, true, errstr, errstr_size);
}

/* ------------------------------------------------------------------ */
/* probe                                                                */

static const struct store_stmt probe_stmt = {
        STORE_STMT_PROBE, "co_probe_keys",
        "SELECT i.ord,"
        "  CASE WHEN p.tenant_id IS NULL"
        "        OR p.request_hash <> decode(i.hash_hex, 'hex') THEN 'none'"
        "       WHEN p.status = 'processing' THEN 'processing'"
        "       ELSE 'final' END,"
        "  p.payment_id, p.status, p.provider_charge_id, p.error_code,"
        "  p.error_message"
        " FROM unnest($1::text[], $2::text[], $3::text[]) WITH ORDINALITY"
        "   AS i(tenant_id, idem_key, hash_hex, ord)"
        " LEFT JOIN payments p ON p.tenant_id = i.tenant_id"
        "  AND p.idem_key = i.idem_key"
        " ORDER BY i.ord",
        3
};

void store_probe_item_clear(struct probe_item *it)
{
        outcome_clear(&it->stored);
        memset(it->payment_id, 0, sizeof(it->payment_id));
        it->outcome = PROBE_NONE;
}

static bool probe_prepare(void *p)
{
        struct probe_item *it = p;

        store_probe_item_clear(it);
        return it->tenant_id && it->idem_key;
}

static bool probe_fill(struct store_batch *b, void *items, void *arg,
                       char *errstr, size_t errstr_size)
{
        (void)arg;
        (void)errstr;
        (void)errstr_size;
        for (size_t k = 0; k < b->nsent; k++) {
                const struct probe_item *it =
                    (const struct probe_item *)items + store_batch_item(b, k);

                store_pgarr_text(&b->arr[0], it->tenant_id);
                store_pgarr_text(&b->arr[1], it->idem_key);
                store_pgarr_hex(&b->arr[2], it->request_hash,
                                CRYPTO_SHA256_LEN);
        }
        return true;
}

/* Reads one row of the probe's result into its item; arg unused. */
static void probe_read_row(void *items, size_t i, const PGresult *res, int r,
                           void *arg)
{
        struct probe_item *it = (struct probe_item *)items + i;
        const char *o         = PQgetvalue(res, r, 1);

        (void)arg;
        if (strcmp(o, "none") == 0)
                return;
        it->outcome = strcmp(o, "final") == 0 ? PROBE_FINAL : PROBE_PROCESSING;
        store_copy_field(res, r, 2, it->payment_id, sizeof(it->payment_id));
        if (it->outcome == PROBE_FINAL)
                outcome_read(res, r, 3, &it->stored);
}

static const struct store_batch_def probe_def = {
        .what          = "probe",
        .stmt          = &probe_stmt,
        .narrays       = 3,
        .nfields       = 7,
        .item_size     = sizeof(struct probe_item),
        .prepare       = probe_prepare,
        .incomplete    = "lacks a field",
        .incomplete_rc = STORE_ERR_DATA,
        .fill          = probe_fill,
        .read_row      = probe_read_row,
};

int store_probe_batch(struct store *st, struct probe_item *items, size_t n,
                      char *errstr, size_t errstr_size)
{
        int rc = store_batch_run(st, &probe_def, items, n, NULL, errstr,
                                 errstr_size);

        if (rc != STORE_OK)
                for (size_t i = 0; i < n; i++)
                        store_probe_item_clear(&items[i]);
        return rc;
}
