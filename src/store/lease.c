/* SPDX-License-Identifier: Apache-2.0 */
/*
 * lease: renewal of the leases of in-flight payments, and takeover of
 * expired ones by compare-and-swap on lease_epoch.
 *
 * Must never: take over a payment whose lease has not expired; take one
 * payment for two owners (the epoch CAS and SKIP LOCKED make the second
 * taker find nothing); change the payment id or the provider key (a
 * takeover continues the same payment, it never starts it over); renew a
 * lease under an epoch that is no longer the payment's.
 */
#include "store/store_int.h"
#include "util/xalloc.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* $1 payment ids, $2 epochs, $3 owner, $4 lease ms. */
static const struct store_stmt renew_stmt = {
        STORE_STMT_RENEW, "co_lease_renew",
        "WITH input AS ("
        " SELECT * FROM unnest($1::uuid[], $2::bigint[]) WITH ORDINALITY"
        "  AS i(payment_id, lease_epoch, ord)"
        "), up AS ("
        " UPDATE payments p"
        "   SET lease_expires_at = clock_timestamp()"
        "     + $4::bigint * interval '1 millisecond',"
        "       updated_at = now()"
        "  FROM input i"
        "  WHERE p.payment_id = i.payment_id AND p.status = 'processing'"
        "    AND p.lease_epoch = i.lease_epoch AND p.lease_owner = $3"
        " RETURNING p.payment_id"
        ")"
        " SELECT i.ord, u.payment_id IS NOT NULL"
        " FROM input i LEFT JOIN up u ON u.payment_id = i.payment_id"
        " ORDER BY i.ord",
        4
};

#define TAKEN_COLUMNS                                                          \
        " p.payment_id, p.tenant_id, p.idem_key, p.order_id,"                  \
        " p.customer_id, p.amount, p.currency, p.payment_method,"              \
        " p.provider_key, p.provider_charge_id, p.lease_epoch, p.attempts,"    \
        " p.intent_event_id,"                                                  \
        " (extract(epoch FROM p.created_at) * 1000)::bigint"

/*
 * The reconciler's cursor (0029; model/reconcile_cursor.pml): every
 * processing payment's expiry is at or after reconcile_cursor.through,
 * so the takeover reads payments_lease_idx from there to now() only, the
 * payments whose lease ran out since about the last pass, not the
 * history that the index also holds (a settle keeps its lease, 0029).
 *
 * It moves in two statements, each its own snapshot, run before each
 * takeover by any reconciler:
 *   (1) have all the transactions of the barrier ended, and the
 *       barrier's time;
 *   (2) once they have: through moves to the barrier's time, or to the
 *       earliest expiry below it of a payment still processing (an
 *       expired one not taken over yet), whichever is lower; the new
 *       barrier is this statement's time less CURSOR_MARGIN and the
 *       transactions writing payments now. Nothing changes when another
 *       reconciler moved the barrier since (1) (compare and swap).
 * Why nothing can be passed: (2)'s snapshot comes after every
 * transaction of the old barrier ended, so it sees what they wrote. Any
 * other transaction that writes a processing payment's lease took its
 * lock on payments after the old barrier was taken, and every statement
 * that writes one reads the clock while it runs, after its locks
 * (clock_timestamp(), not now(), the transaction's start: a statement
 * that waited behind a lock, a migration's say, would write a time from
 * before the barrier): it writes that time plus the lease, or (a
 * release) less 1 ms, after the old barrier's time, which is
 * CURSOR_MARGIN before. A long transaction writing payments holds the
 * cursor where it is, nothing more.
 */
#define CURSOR_MARGIN "interval '1 second'"

/* The barrier's transactions: those holding or awaiting a lock to write
 * payments now. */
#define PAYMENT_WRITERS_SQL STORE_WRITERS_SQL("'payments'::regclass")

static const struct store_stmt cursor_check_stmt = {
        STORE_STMT_CURSOR_CHECK, "co_reconcile_cursor_check",
        "SELECT c.barrier_vxids IS NULL OR NOT EXISTS (SELECT 1 FROM pg_locks"
        " l WHERE l.virtualtransaction = ANY (c.barrier_vxids)),"
        " c.barrier_at FROM reconcile_cursor c WHERE c.id = 1",
        0
};

/* $1 the barrier's time as (1) read it (NULL: no barrier yet). */
static const struct store_stmt cursor_advance_stmt = {
        STORE_STMT_CURSOR_ADVANCE, "co_reconcile_cursor_advance",
        "UPDATE reconcile_cursor c SET through ="
        " CASE WHEN $1::timestamptz IS NULL THEN c.through"
        " ELSE greatest(c.through, least($1::timestamptz, coalesce("
        "  (SELECT p.lease_expires_at FROM payments p"
        "    WHERE p.lease_expires_at >= c.through"
        "      AND p.lease_expires_at < $1::timestamptz"
        "      AND p.status = 'processing'"
        "    ORDER BY p.lease_expires_at LIMIT 1), $1::timestamptz))) END,"
        " barrier_at = now() - " CURSOR_MARGIN ","
        " barrier_vxids = " PAYMENT_WRITERS_SQL ","
        " advanced_at = now()"
        " WHERE c.id = 1 AND c.barrier_at IS NOT DISTINCT FROM $1::timestamptz",
        1
};

/* The cursor's row made again at its start, where someone removed it:
 * -infinity is always safe (the takeover reads the whole index once). */
static const struct store_stmt cursor_restore_stmt = {
        STORE_STMT_CURSOR_RESTORE, "co_reconcile_cursor_restore",
        "INSERT INTO reconcile_cursor (id) VALUES (1) ON CONFLICT DO NOTHING", 0
};

/* (1), then (2) when the barrier's transactions have ended. */
static int cursor_move(struct store *st, char *errstr, size_t errstr_size)
{
        const char *v[1];
        PGresult *res;
        bool ended;
        char *at;
        int rc;

        res =
            store_exec(st, &cursor_check_stmt, NULL, &rc, errstr, errstr_size);
        if (!res)
                return rc;
        if (PQntuples(res) == 0) {
                PQclear(res);
                res = store_exec(st, &cursor_restore_stmt, NULL, &rc, errstr,
                                 errstr_size);
                if (!res)
                        return rc;
                PQclear(res);
                return STORE_OK;
        }
        if (PQntuples(res) != 1 || PQnfields(res) != 2) {
                PQclear(res);
                snprintf(errstr, errstr_size,
                         "reconcile cursor: unexpected result shape");
                return STORE_ERR;
        }
        ended = !strcmp(PQgetvalue(res, 0, 0), "t");
        at    = PQgetisnull(res, 0, 1) ? NULL : xstrdup(PQgetvalue(res, 0, 1));
        PQclear(res);
        if (!ended) {
                free(at);
                return STORE_OK;
        }
        v[0] = at;
        res = store_exec(st, &cursor_advance_stmt, v, &rc, errstr, errstr_size);
        free(at);
        if (!res)
                return rc;
        PQclear(res);
        return STORE_OK;
}

/*
 * $1 owner, $2 lease ms, $3 limit, $4 the payments the caller holds (not
 * taken). The candidates are locked with SKIP LOCKED, so a concurrent
 * taker skips them; the UPDATE re-checks status and expiry on the row it
 * locked. The range starts at the cursor (above).
 */
static const struct store_stmt takeover_stmt = {
        STORE_STMT_TAKEOVER, "co_takeover_expired",
        "WITH cand AS ("
        " SELECT payment_id FROM payments"
        "  WHERE status = 'processing' AND lease_expires_at < now()"
        "    AND" STORE_LEASE_FROM_CURSOR
        "    AND payment_id <> ALL ($4::uuid[])"
        "  ORDER BY lease_expires_at LIMIT $3"
        "  FOR UPDATE SKIP LOCKED"
        ")"
        " UPDATE payments p SET lease_owner = $1,"
        "   lease_epoch = p.lease_epoch + 1,"
        "   lease_expires_at = clock_timestamp()"
        "     + $2::bigint * interval '1 millisecond',"
        "   updated_at = now()"
        "  FROM cand"
        "  WHERE p.payment_id = cand.payment_id AND p.status = 'processing'"
        "    AND p.lease_expires_at < now()"
        " RETURNING" TAKEN_COLUMNS,
        4
};

/* $1 payment id, $2 expected epoch, $3 owner, $4 lease ms. */
static const struct store_stmt takeover_one_stmt = {
        STORE_STMT_TAKEOVER_ONE, "co_takeover_one",
        "UPDATE payments SET lease_owner = $3,"
        "   lease_epoch = lease_epoch + 1,"
        "   lease_expires_at = clock_timestamp()"
        "     + $4::bigint * interval '1 millisecond',"
        "   updated_at = now()"
        " WHERE payment_id = $1 AND lease_epoch = $2"
        "   AND status = 'processing' AND lease_expires_at < now()"
        " RETURNING lease_epoch",
        4
};

/* What store_lease_renew passes to its fill callback. */
struct renew_args {
        const char *owner;
        int64_t lease_ms;
        char ms[24]; /* $4 */
};

/* Clears the out part; is there a payment? */
static bool renew_prepare(void *p)
{
        struct lease_item *it = p;

        it->renewed = false;
        return it->payment_id != NULL;
}

static bool renew_fill(struct store_batch *b, void *items, void *arg,
                       char *errstr, size_t errstr_size)
{
        struct renew_args *a = arg;

        if (!a->owner || a->lease_ms <= 0) {
                snprintf(errstr, errstr_size, "lease renew: bad arguments");
                return false;
        }
        for (size_t k = 0; k < b->nsent; k++) {
                const struct lease_item *it =
                    (const struct lease_item *)items + store_batch_item(b, k);

                store_pgarr_text(&b->arr[0], it->payment_id);
                store_pgarr_i64(&b->arr[1], it->lease_epoch);
        }
        snprintf(a->ms, sizeof(a->ms), "%lld", (long long)a->lease_ms);
        b->values[2] = a->owner;
        b->values[3] = a->ms;
        return true;
}

/* A payment twice in the batch: each copy says the same. */
static void renew_read_row(void *items, size_t i, const PGresult *res, int r,
                           void *arg)
{
        (void)arg;
        if (strcmp(PQgetvalue(res, r, 1), "t") == 0)
                ((struct lease_item *)items)[i].renewed = true;
}

static const struct store_batch_def renew_def = {
        .what          = "lease renew",
        .stmt          = &renew_stmt,
        .narrays       = 2,
        .nfields       = 2,
        .item_size     = sizeof(struct lease_item),
        .prepare       = renew_prepare,
        .incomplete    = "has no payment",
        .incomplete_rc = STORE_ERR,
        .fill          = renew_fill,
        .read_row      = renew_read_row,
};

int store_lease_renew(struct store *st, struct lease_item *items, size_t n,
                      const char *owner, int64_t lease_ms, char *errstr,
                      size_t errstr_size)
{
        struct renew_args a = { .owner = owner, .lease_ms = lease_ms };

        return store_batch_run(st, &renew_def, items, n, &a, errstr,
                               errstr_size);
}

void store_payments_free(struct store_payment *p, size_t n)
{
        if (!p)
                return;
        for (size_t i = 0; i < n; i++) {
                free(p[i].tenant_id);
                free(p[i].idem_key);
                free(p[i].order_id);
                free(p[i].customer_id);
                free(p[i].payment_method);
                free(p[i].provider_charge_id);
                free(p[i].intent_event_id);
        }
        free(p);
}

int store_takeover_expired(struct store *st, const char *owner,
                           int64_t lease_ms, size_t max,
                           const char *const *held, size_t n_held,
                           struct store_payment **out, size_t *n_out,
                           char *errstr, size_t errstr_size)
{
        const char *values[4];
        char ms[24], lim[24];
        struct store_payment *p = NULL;
        size_t np               = 0;
        PGresult *res           = NULL;
        int rc                  = STORE_ERR;
        struct pgarr ids;

        *out   = NULL;
        *n_out = 0;
        if (!owner || lease_ms <= 0) {
                snprintf(errstr, errstr_size, "takeover: bad arguments");
                return STORE_ERR;
        }
        if (max == 0)
                return STORE_OK;
        if ((rc = cursor_move(st, errstr, errstr_size)) != STORE_OK)
                return rc;
        snprintf(ms, sizeof(ms), "%lld", (long long)lease_ms);
        snprintf(lim, sizeof(lim), "%zu", max);
        store_pgarr_init(&ids);
        for (size_t i = 0; i < n_held; i++)
                store_pgarr_text(&ids, held[i]);
        values[0] = owner;
        values[1] = ms;
        values[2] = lim;
        values[3] = store_pgarr_finish(&ids);
        if (!values[3]) {
                snprintf(errstr, errstr_size, "takeover: %zu held payments",
                         n_held);
                store_pgarr_free(&ids);
                return STORE_ERR;
        }
        res = store_exec(st, &takeover_stmt, values, &rc, errstr, errstr_size);
        store_pgarr_free(&ids);
        if (!res)
                return rc;
        p = store_rows_calloc(res, sizeof(*p));
        for (int r = 0; r < PQntuples(res); r++, np++) {
                struct store_payment *t = &p[r];

                store_copy_field(res, r, 0, t->payment_id,
                                 sizeof(t->payment_id));
                t->tenant_id   = store_strdup_field(res, r, 1);
                t->idem_key    = store_strdup_field(res, r, 2);
                t->order_id    = store_strdup_field(res, r, 3);
                t->customer_id = store_strdup_field(res, r, 4);
                t->amount      = store_i64_field(res, r, 5);
                store_copy_field(res, r, 6, t->currency, sizeof(t->currency));
                t->payment_method = store_strdup_field(res, r, 7);
                store_copy_field(res, r, 8, t->provider_key,
                                 sizeof(t->provider_key));
                t->provider_charge_id = store_strdup_field(res, r, 9);
                t->lease_epoch        = store_i64_field(res, r, 10);
                t->attempts           = (int32_t)store_i64_field(res, r, 11);
                t->intent_event_id    = store_strdup_field(res, r, 12);
                t->created_at_ms      = store_i64_field(res, r, 13);
        }
        *out   = p;
        *n_out = np;
        PQclear(res);
        return STORE_OK;
}

int store_takeover_one(struct store *st, const char *payment_id,
                       int64_t expected_epoch, const char *owner,
                       int64_t lease_ms, int64_t *new_epoch, char *errstr,
                       size_t errstr_size)
{
        const char *values[4];
        char ep[24], ms[24];
        PGresult *res;
        int rc;

        if (!payment_id || !owner || lease_ms <= 0) {
                snprintf(errstr, errstr_size, "takeover: bad arguments");
                return STORE_ERR;
        }
        snprintf(ep, sizeof(ep), "%lld", (long long)expected_epoch);
        snprintf(ms, sizeof(ms), "%lld", (long long)lease_ms);
        values[0] = payment_id;
        values[1] = ep;
        values[2] = owner;
        values[3] = ms;
        res       = store_exec(st, &takeover_one_stmt, values, &rc, errstr,
                               errstr_size);
        if (!res)
                return rc;
        rc = 0;
        if (PQntuples(res) == 1) {
                *new_epoch = store_i64_field(res, 0, 0);
                rc         = 1;
        }
        PQclear(res);
        return rc;
}

void store_lease_owner_instance(
    const char *name, const unsigned char nonce[STORE_LEASE_NONCE_BYTES],
    char *out, size_t out_size)
{
        char hex[2 * STORE_LEASE_NONCE_BYTES + 1];

        for (size_t i = 0; i < STORE_LEASE_NONCE_BYTES; i++)
                snprintf(hex + 2 * i, 3, "%02x", nonce[i]);
        snprintf(out, out_size, "%s#%s", name, hex);
}

int store_leases_release(struct store *st, const char *owner,
                         bool every_instance, int64_t *n, char *errstr,
                         size_t errstr_size)
{
        /* lease_expires_at - 1 ms: expired for any takeover from now on,
         * the epoch untouched (the takeover raises it: fencing as ever).
         * Below 'infinity': the end of payments_lease_idx is the review
         * queue, which a processing payment never reaches (0029's CHECK),
         * and which would otherwise be read at every start and stop.
         * $2: also every instance of the name $1 (store_lease_owner_instance:
         * the name, '#', 16 hex digits) */
        static const struct store_stmt release_stmt = {
                STORE_STMT_RELEASE, "co_leases_release",
                "UPDATE payments SET lease_expires_at = clock_timestamp()"
                " - interval"
                " '1 millisecond', updated_at = now()"
                " WHERE status = 'processing' AND lease_expires_at >= now()"
                "   AND lease_expires_at < 'infinity'"
                "   AND (lease_owner = $1"
                "     OR ($2::boolean"
                "         AND starts_with(lease_owner, $1 || '#')"
                "         AND substr(lease_owner, length($1) + 2)"
                "             ~ '^[0-9a-f]{16}$'))",
                2
        };
        const char *values[2] = { owner, every_instance ? "t" : "f" };
        PGresult *res;
        int rc;

        *n = 0;
        if (!owner || !*owner) {
                snprintf(errstr, errstr_size, "release: no owner");
                return STORE_ERR;
        }
        res = store_exec(st, &release_stmt, values, &rc, errstr, errstr_size);
        if (!res)
                return rc;
        *n = strtoll(PQcmdTuples(res), NULL, 10);
        PQclear(res);
        return STORE_OK;
}
