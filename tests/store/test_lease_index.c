/* SPDX-License-Identifier: Apache-2.0 */
/*
 * store_lease_index: the payments' one index on their leases (0029,
 * 0030). The settle is a HOT update that keeps the lease's expiry; a
 * review holds 'infinity' and the review queue and its gauge find it
 * there; the updates of an earlier release are put right by the trigger;
 * gc finds final payments through the lease index and those of before
 * 0029 (no expiry) through payments_unleased_idx; the reconciler's
 * cursor does not pass a claim that commits late.
 *
 * Each case runs on a database of its own.
 */
#include "cases.h"
#include "storetest.h"

#include "store/gauges.h"
#include "store/gc.h"
#include "store/review.h"

#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define N 40

static struct store *st;
static PGconn *pg;
static char err[512];
static struct st_intent in[N];
static struct claim_item c[N];

static void claim(int n, const char *prefix)
{
        for (int i = 0; i < n; i++) {
                char key[64];
                snprintf(key, sizeof(key), "%s-%d", prefix, i);
                st_intent(&in[i], "tenant-x", key, 500 + i, 0);
                st_item(&c[i], &in[i]);
        }
        REQUIRE(store_claim_batch(st, c, (size_t)n, "owner-a", ST_LEASE_MS,
                                  ST_SECRET, ST_SECRET_LEN, err,
                                  sizeof(err)) == STORE_OK);
        for (int i = 0; i < n; i++)
                REQUIRE(c[i].outcome == CLAIM_NEW);
}

static void settle(int n, enum settle_status (*status)(int))
{
        static struct settle_item s[N];
        static char ev[N][40], buf[N][1024];

        for (int i = 0; i < n; i++)
                st_settle_item(&s[i], &c[i], status(i), ev[i], buf[i],
                               sizeof(buf[i]));
        REQUIRE(store_settle_batch(st, s, (size_t)n, err, sizeof(err)) ==
                STORE_OK);
        for (int i = 0; i < n; i++)
                CHECK_EQ_I(s[i].outcome, SETTLE_OK);
}

static enum settle_status ok_or_declined(int i)
{
        return i % 4 == 3 ? SETTLE_FAILED : SETTLE_SUCCEEDED;
}

static enum settle_status review(int i)
{
        (void)i;
        return SETTLE_REVIEW;
}

/* The expiries of the payments of tenant-x, in one string. */
static char *expiries(void)
{
        PGresult *res = PQexec(pg, "SELECT string_agg(lease_expires_at::text,"
                                   " ',' ORDER BY idem_key) FROM payments"
                                   " WHERE tenant_id = 'tenant-x'");
        char *s;

        REQUIRE(PQresultStatus(res) == PGRES_TUPLES_OK);
        s = strdup(PQgetvalue(res, 0, 0));
        PQclear(res);
        REQUIRE(s);
        return s;
}

static long long stat_of_payments(const char *column)
{
        PGconn *const others[] = { store_pgconn(st), NULL };
        char sql[256];

        snprintf(sql, sizeof(sql),
                 "SELECT %s FROM pg_stat_user_tables WHERE relname ="
                 " 'payments'",
                 column);
        return st_stat_count(pg, others, sql);
}

/*
 * The settle a HOT update: no new index entry, the expiry kept. HOT also
 * needs room on the page (fillfactor 40 leaves it for a batch's rows;
 * a row's size varies, and the last of a page may find none); with an
 * index whose key or predicate names a column the settle changes, none
 * would be.
 */
static void hot_settle(void)
{
        long long upd0, hot0, hot;
        char *before, *after;

        claim(N, "hot");
        before = expiries();
        upd0   = stat_of_payments("n_tup_upd");
        hot0   = stat_of_payments("n_tup_hot_upd");
        settle(N, ok_or_declined);
        CHECK_EQ_I(stat_of_payments("n_tup_upd") - upd0, N);
        hot = stat_of_payments("n_tup_hot_upd") - hot0;
        printf("hot_settle: %lld of %d settles HOT\n", hot, N);
        CHECK(hot >= N * 3 / 4);
        after = expiries();
        CHECK(!strcmp(before, after));
        free(before);
        free(after);
        CHECK_EQ_I(st_count(pg, "SELECT count(*) FROM payments WHERE"
                                " status IN ('succeeded', 'failed') AND"
                                " lease_owner IS NULL AND lease_expires_at"
                                " >= finished_at"),
                   N);
        /* the indexes the settle would have to leave alone */
        CHECK_EQ_I(st_count(pg, "SELECT count(*) FROM pg_indexes WHERE"
                                " tablename = 'payments'"),
                   4);
}

/* Review: 'infinity', found by the queue and the gauge; a payment that
 * leaves review by hand gets now(). */
static void review_infinity(void)
{
        struct store_review_row *rows = NULL;
        struct store_gauges g;
        size_t n      = 0;
        int64_t total = 0;

        claim(3, "rev");
        settle(3, review);
        CHECK_EQ_I(st_count(pg, "SELECT count(*) FROM payments WHERE"
                                " status = 'review' AND lease_expires_at ="
                                " 'infinity'"),
                   3);
        REQUIRE(store_gauges(st, 5000, &g, err, sizeof(err)) == STORE_OK);
        CHECK_EQ_I(g.review, 3);
        CHECK(g.processing_oldest_s == 0);
        REQUIRE(store_review_list(st, 10, &rows, &n, &total, err,
                                  sizeof(err)) == STORE_OK);
        CHECK_EQ_I(n, 3);
        CHECK_EQ_I(total, 3);
        store_review_rows_free(rows, n);
        CHECK(st_exec(pg, true,
                      "UPDATE payments SET status = 'failed' WHERE"
                      " idem_key = 'rev-0'"));
        CHECK_EQ_I(st_count(pg, "SELECT count(*) FROM payments WHERE"
                                " idem_key = 'rev-0' AND lease_expires_at"
                                " BETWEEN now() - interval '1 minute' AND"
                                " now()"),
                   1);
        REQUIRE(store_gauges(st, 5000, &g, err, sizeof(err)) == STORE_OK);
        CHECK_EQ_I(g.review, 2);
}

/* What a release before 0029 writes, put right by payments_lease_kept. */
static void earlier_release(void)
{
        claim(3, "old");
        CHECK(st_exec(pg, true,
                      "CREATE TEMP TABLE was AS SELECT idem_key,"
                      " lease_expires_at FROM payments"));
        /* its settle and its review clear the lease */
        CHECK(st_exec(pg, true,
                      "UPDATE payments SET status = 'succeeded',"
                      " provider_charge_id = 'ch_old', lease_owner = NULL,"
                      " lease_expires_at = NULL, finished_at = now() WHERE"
                      " idem_key = 'old-0'"));
        CHECK(st_exec(pg, true,
                      "UPDATE payments SET status = 'review', error_code ="
                      " 'outcome_unknown', lease_owner = NULL,"
                      " lease_expires_at = NULL, finished_at = now() WHERE"
                      " idem_key = 'old-1'"));
        CHECK_EQ_I(st_count(pg, "SELECT count(*) FROM payments p JOIN was w"
                                " USING (idem_key) WHERE p.idem_key = 'old-0'"
                                " AND p.lease_expires_at = w.lease_expires_at"),
                   1);
        CHECK_EQ_I(st_count(pg, "SELECT count(*) FROM payments WHERE"
                                " idem_key = 'old-1' AND lease_expires_at ="
                                " 'infinity'"),
                   1);
        /* its gc's tombstone keeps the lease */
        CHECK(st_exec(pg, true,
                      "UPDATE payments SET tombstoned_at = now(),"
                      " payment_method = NULL WHERE idem_key = 'old-0'"));
        CHECK_EQ_I(st_count(pg, "SELECT count(*) FROM payments WHERE"
                                " idem_key = 'old-0' AND lease_expires_at IS"
                                " NULL"),
                   1);
        /* a processing payment is never given a lease by it */
        CHECK(!st_exec(pg, false,
                       "UPDATE payments SET lease_expires_at = NULL WHERE"
                       " idem_key = 'old-2'"));
}

#define HAND_PAYMENT                                                           \
        "INSERT INTO payments (payment_id, tenant_id, idem_key,"               \
        " request_hash, order_id, customer_id, amount, currency,"              \
        " payment_method, status, provider_key, provider_charge_id,"           \
        " lease_owner, lease_expires_at, intent_event_id, expires_at,"         \
        " created_at, finished_at) VALUES (gen_random_uuid(), 'tenant-h',"     \
        " '%s', sha256('%s'::bytea), 'o', 'c', 100, 'VND', 'pm_tok', '%s',"    \
        " 'pk-%s', %s, %s, %s, 'ev-%s', now() - interval '1 day',"             \
        " now() - interval '%s', %s)"

/* gc through both indexes: final payments with an expiry (0029) and
 * without (before it); what is not due stays. */
static void gc_both_indexes(void)
{
        struct store_gc_counts n;
        int64_t run;

        /* final, before 0029: no expiry */
        CHECK(st_exec(pg, true, HAND_PAYMENT, "h-old", "h-old", "succeeded",
                      "h-old", "'ch'", "NULL", "NULL", "h-old", "40 days",
                      "now() - interval '40 days'"));
        /* final since: its last lease's expiry */
        CHECK(st_exec(pg, true, HAND_PAYMENT, "h-new", "h-new", "failed",
                      "h-new", "NULL", "NULL", "now() - interval '39 days'",
                      "h-new", "40 days", "now() - interval '39 days'"));
        /* final a day ago, and one of before 0029 too */
        CHECK(st_exec(pg, true, HAND_PAYMENT, "h-young", "h-young", "failed",
                      "h-young", "NULL", "NULL", "now() - interval '1 day'",
                      "h-young", "40 days", "now() - interval '1 day'"));
        CHECK(st_exec(pg, true, HAND_PAYMENT, "h-young-old", "h-young-old",
                      "succeeded", "h-young-old", "'ch'", "NULL", "NULL",
                      "h-young-old", "40 days", "now() - interval '1 day'"));
        /* processing, its lease long run out; in review */
        CHECK(st_exec(pg, true, HAND_PAYMENT, "h-proc", "h-proc", "processing",
                      "h-proc", "NULL", "'gone'", "now() - interval '39 days'",
                      "h-proc", "40 days", "NULL"));
        CHECK(st_exec(pg, true, HAND_PAYMENT, "h-rev", "h-rev", "review",
                      "h-rev", "NULL", "NULL", "'infinity'", "h-rev", "40 days",
                      "now() - interval '39 days'"));
        REQUIRE(store_gc_begin(st, 30LL * 86400 * 1000, &run, err,
                               sizeof(err)) == STORE_OK);
        REQUIRE(store_gc_batch(st, run, 30LL * 86400 * 1000, 100, &n, err,
                               sizeof(err)) == STORE_OK);
        CHECK_EQ_I(n.tombstones, 2);
        CHECK_EQ_I(st_count(pg, "SELECT count(*) FROM payments WHERE"
                                " tombstoned_at IS NOT NULL AND idem_key IN"
                                " ('h-old', 'h-new') AND lease_expires_at IS"
                                " NULL"),
                   2);
        CHECK_EQ_I(st_count(pg, "SELECT count(*) FROM payments WHERE"
                                " tombstoned_at IS NULL"),
                   4);
        /* neither index holds a tombstone */
        CHECK(st_exec(pg, true, "SET enable_seqscan = off"));
        CHECK_EQ_I(st_count(pg, "SELECT count(*) FROM payments WHERE"
                                " lease_expires_at IS NULL AND tombstoned_at"
                                " IS NULL"),
                   1);
        CHECK_EQ_I(st_count(pg, "SELECT count(*) FROM payments WHERE"
                                " lease_expires_at < 'infinity'"),
                   2);
        CHECK(st_exec(pg, true, "RESET enable_seqscan"));
        /* a second batch finds nothing */
        REQUIRE(store_gc_batch(st, run, 30LL * 86400 * 1000, 100, &n, err,
                               sizeof(err)) == STORE_OK);
        CHECK_EQ_I(n.tombstones, 0);
}

/* One takeover by the reconciler (which moves its cursor first): the
 * payments taken, *p owned by the caller. */
static size_t take(struct store_payment **p)
{
        size_t n = 0;

        REQUIRE(store_takeover_expired(st, "reconciler", ST_LEASE_MS, 10, NULL,
                                       0, p, &n, err, sizeof(err)) == STORE_OK);
        return n;
}

/* Up to passes takeovers, until one takes something: what it took (*p,
 * owned by the caller), or 0 and *p NULL. */
static size_t take_until_found(int passes, struct store_payment **p)
{
        for (int pass = 0; pass < passes; pass++) {
                size_t n = take(p);

                if (n > 0)
                        return n;
                store_payments_free(*p, 0);
        }
        *p = NULL;
        return 0;
}

/*
 * A claim that began before the reconciler's cursor moved and commits
 * after: its lease ran out long ago, and the takeover must still find it
 * (the barrier: the cursor waits for the transactions writing payments
 * when it was taken).
 */
static void late_claim(void)
{
        PGconn *b               = st_pg();
        struct store_payment *p = NULL;
        size_t n                = 0;

        CHECK(st_exec(b, true, "BEGIN"));
        CHECK(st_exec(b, true, HAND_PAYMENT, "late", "late", "processing",
                      "late", "NULL", "'gone'",
                      "now() + interval '10 milliseconds'", "late", "1 second",
                      "NULL"));
        /* past the cursor's margin, the claim still open */
        usleep(1300 * 1000);
        for (int pass = 0; pass < 3; pass++) {
                n = take(&p);
                CHECK_EQ_I(n, 0);
                store_payments_free(p, n);
        }
        CHECK_EQ_I(st_count(pg, "SELECT count(*) FROM reconcile_cursor WHERE"
                                " barrier_vxids <> '{}'"),
                   1);
        CHECK(st_exec(b, true, "COMMIT"));
        n = take_until_found(2, &p);
        CHECK_EQ_I(n, 1);
        if (n == 1)
                CHECK(!strcmp(p[0].idem_key, "late"));
        store_payments_free(p, n);
        /* the cursor then moves on past it */
        for (int pass = 0; pass < 2; pass++) {
                n = take(&p);
                store_payments_free(p, n);
        }
        CHECK_EQ_I(st_count(pg, "SELECT count(*) FROM reconcile_cursor WHERE"
                                " through > (SELECT created_at FROM payments"
                                " WHERE idem_key = 'late')"),
                   1);
        /* the cursor's row removed by hand: the next pass makes it again
         * at its start and takes over what ran out */
        CHECK(st_exec(pg, true, "DELETE FROM reconcile_cursor"));
        CHECK(st_exec(pg, true,
                      "UPDATE payments SET lease_expires_at = now() -"
                      " interval '1 hour' WHERE idem_key = 'late'"));
        n = take_until_found(2, &p);
        CHECK_EQ_I(n, 1);
        store_payments_free(p, n);
        CHECK_EQ_I(st_count(pg, "SELECT count(*) FROM reconcile_cursor"), 1);
        PQfinish(b);
}

static int setup(void)
{
        int rc = st_begin("store_lease_index");

        if (rc)
                return rc;
        pg = st_pg();
        st = st_store();
        return 0;
}

static void teardown(void)
{
        for (int i = 0; i < N; i++)
                store_claim_item_clear(&c[i]);
        PQfinish(pg);
        store_destroy(st);
        st_end();
}

int main(int argc, char **argv)
{
        static const struct test_case cases[] = {
                { "hot_settle", hot_settle, NULL, NULL },
                { "review_infinity", review_infinity, NULL, NULL },
                { "earlier_release", earlier_release, NULL, NULL },
                { "gc_both_indexes", gc_both_indexes, NULL, NULL },
                { "late_claim", late_claim, NULL, NULL },
        };
        return st_suite_main("store_lease_index", cases,
                             sizeof(cases) / sizeof(cases[0]), setup, teardown,
                             false, argc, argv);
}
