/* SPDX-License-Identifier: Apache-2.0 */
/*
 * store_ledger_invariants: a ledger posting is one row with one amount
 * between its kind's two accounts (0016), so it cannot be unbalanced; the
 * database refuses other legs, a second posting of a kind, and any change
 * to a committed posting, whoever writes it; invariant_violations is
 * empty after a normal flow and shows a planted violation of every kind.
 *
 * A chained suite (tests/common/cases.h): the cases run in order on one
 * database; store_ledger_invariants_<case> runs the ones before it first.
 */
#include "cases.h"
#include "storetest.h"

#include <stdlib.h>
#include <string.h>

#define NPAY 16

static struct store *st;
static PGconn *pg;
static struct st_intent in[NPAY];
static struct claim_item c[NPAY];

/* Claims NPAY payments; settles those with a status in want[]. */
static void normal_flow(const enum settle_status *want)
{
        struct settle_item s[NPAY];
        char ev[NPAY][UUID_STR_LEN], buf[NPAY][1024];
        char err[512];
        size_t ns = 0;

        for (int i = 0; i < NPAY; i++) {
                char key[32];
                snprintf(key, sizeof(key), "inv-%d", i);
                st_intent(&in[i], "tenant-i", key, 1000 + i, 0);
                st_item(&c[i], &in[i]);
        }
        REQUIRE(store_claim_batch(st, c, NPAY, "owner", ST_LEASE_MS, ST_SECRET,
                                  ST_SECRET_LEN, err, sizeof(err)) == STORE_OK);
        for (int i = 0; i < NPAY; i++) {
                REQUIRE(c[i].outcome == CLAIM_NEW);
                if (want[i])
                        st_settle_item(&s[ns++], &c[i], want[i], ev[i], buf[i],
                                       sizeof(buf[i]));
        }
        REQUIRE(store_settle_batch(st, s, ns, err, sizeof(err)) == STORE_OK);
        for (size_t i = 0; i < ns; i++)
                REQUIRE(s[i].outcome == SETTLE_OK);
}

/* Runs the statements as one transaction; true if COMMIT succeeded. */
static bool txn(const char *sql)
{
        bool ok;

        REQUIRE(st_exec(pg, true, "BEGIN"));
        if (!st_exec(pg, false, "%s", sql)) {
                (void)st_exec(pg, true, "ROLLBACK");
                return false;
        }
        ok = st_exec(pg, false, "COMMIT");
        return ok;
}

/*
 * A posting is one row with one amount (0016): it cannot be unbalanced.
 * What the database still refuses, whoever writes: legs that are not the
 * kind's accounts, a second posting of a kind for a payment, an amount
 * that is not positive, any change or removal of a posting.
 */
static void test_posting_constraints(void)
{
        const char *pid = c[1].payment_id; /* failed: has no posting */
        char sql[2048];
        long long before = st_count(pg, "SELECT count(*) FROM ledger_postings");

#define POSTING(kind, debit, credit, amount)                                   \
        snprintf(sql, sizeof(sql),                                             \
                 "INSERT INTO ledger_postings (payment_id, kind, tenant_id, "  \
                 "amount, currency, debit_account, credit_account) VALUES "    \
                 "('%s', '%s', 'tenant-i', %d, 'VND', '%s', '%s')",            \
                 pid, kind, amount, debit, credit)
        /* money moved to another account */
        POSTING("charge", "customer_funds:tenant-i", "elsewhere", 100);
        CHECK(!txn(sql));
        /* a charge's legs on another tenant's accounts */
        POSTING("charge", "customer_funds:tenant-x",
                "merchant_payable:tenant-x", 100);
        CHECK(!txn(sql));
        /* a refund written with a charge's legs */
        POSTING("refund", "customer_funds:tenant-i",
                "merchant_payable:tenant-i", 100);
        CHECK(!txn(sql));
        /* no amount */
        POSTING("charge", "customer_funds:tenant-i",
                "merchant_payable:tenant-i", 0);
        CHECK(!txn(sql));
        /* a second charge of a payment that has one */
        snprintf(sql, sizeof(sql),
                 "INSERT INTO ledger_postings (payment_id, kind, tenant_id, "
                 "amount, currency, debit_account, credit_account) SELECT "
                 "payment_id, kind, tenant_id, amount, currency, "
                 "debit_account, credit_account FROM ledger_postings WHERE "
                 "payment_id = '%s'",
                 c[0].payment_id);
        CHECK(!txn(sql));
        /* changing or removing a committed posting, also through the
         * views of the old tables */
        snprintf(sql, sizeof(sql),
                 "UPDATE ledger_postings SET amount = amount + 1 WHERE "
                 "payment_id = '%s'",
                 c[0].payment_id);
        CHECK(!txn(sql));
        snprintf(sql, sizeof(sql),
                 "UPDATE ledger_transactions SET amount = amount + 1 WHERE "
                 "payment_id = '%s'",
                 c[0].payment_id);
        CHECK(!txn(sql));
        snprintf(sql, sizeof(sql),
                 "DELETE FROM ledger_postings WHERE payment_id = '%s'",
                 c[0].payment_id);
        CHECK(!txn(sql));
        snprintf(sql, sizeof(sql),
                 "DELETE FROM ledger_entries WHERE direction = 'credit'");
        CHECK(!txn(sql));
        CHECK_EQ_I(st_count(pg, "SELECT count(*) FROM ledger_postings"),
                   before);
        /* the old tables read as before: a posting, two balanced legs */
        CHECK_EQ_I(st_count(pg,
                            "SELECT count(*) FROM ledger_entries e JOIN "
                            "ledger_transactions t ON t.id = e.txn_id WHERE "
                            "t.payment_id = '%s' AND e.amount = t.amount",
                            c[0].payment_id),
                   2);
        /* a posting of the right shape does commit (the constraints are
         * not a blanket refusal); it is planted below as
         * posting_not_succeeded */
        POSTING("charge", "customer_funds:tenant-i",
                "merchant_payable:tenant-i", 1001);
        CHECK(txn(sql));
#undef POSTING
}

static bool has(const struct store_violation *v, size_t n, const char *kind,
                const char *pid)
{
        for (size_t i = 0; i < n; i++)
                if (strcmp(v[i].kind, kind) == 0 &&
                    (!pid || strcmp(v[i].payment_id, pid) == 0))
                        return true;
        return false;
}

/* The normal flow leaves no violation. */
static void normal_flow_clean(void)
{
        /* index: what the payment is used for */
        static const enum settle_status want[NPAY] = {
                [0]  = SETTLE_SUCCEEDED, /* trigger target */
                [1]  = SETTLE_FAILED,    /* posting_not_succeeded */
                [2]  = SETTLE_FAILED,    /* succeeded_without_posting */
                [3]  = SETTLE_SUCCEEDED, /* unbalanced_posting */
                [4]  = SETTLE_SUCCEEDED, /* posting_amount_mismatch */
                [5]  = 0,                /* key_final_payment_open */
                [6]  = 0,                /* payment_final_key_open */
                [7]  = SETTLE_FAILED,    /* key_status_mismatch */
                [8]  = SETTLE_FAILED,    /* payment_without_key */
                [9]  = SETTLE_FAILED,    /* final_without_result */
                [10] = SETTLE_FAILED,    /* result_status_mismatch */
                [11] = SETTLE_REVIEW,    /* duplicate_final_result */
                [12] = SETTLE_SUCCEEDED, /* stays healthy */
                [13] = 0,                /* stays processing */
                [14] = 0,                /* key_without_payment */
                [15] = SETTLE_FAILED,    /* result_for_unknown_payment */
        };
        struct store_violation *v = NULL;
        size_t nv                 = 0;
        char err[512];

        normal_flow(want);
        REQUIRE(store_invariant_violations(st, &v, &nv, err, sizeof(err)) ==
                STORE_OK);
        CHECK_EQ_I(nv, 0);
        store_violations_free(v, nv);
}

/*
 * The posting index that grows with ids (ledger_postings_id_brin, 0019)
 * leaves the range being filled unsummarized (0025), so a posting writes
 * nothing to it: after the normal flow's postings on a new database,
 * range 0 still has no summary (brin_summarize_range makes one and
 * counts it; it counts 0 for a range that had one, as CREATE INDEX left
 * range 0 of the empty table before 0025).
 */
static void brin_open_range(void)
{
        CHECK_EQ_I(st_count(pg, "SELECT count(*) FROM ledger_postings"), 4);
        CHECK_EQ_I(st_count(pg, "SELECT brin_summarize_range("
                                "'ledger_postings_id_brin'::regclass, 0)"),
                   1);
}

/* One planted violation of every kind, each found. */
static void planted_violations(void)
{
        struct store_violation *v = NULL;
        size_t nv                 = 0;
        char err[512], accounts_def[1024];
        PGresult *res;

#define PLANT(...) CHECK(st_exec(pg, true, __VA_ARGS__))
        PLANT("UPDATE payments SET status = 'succeeded', provider_charge_id "
              "= 'ch_x' WHERE payment_id = '%s'",
              c[2].payment_id);
        /* unbalanced_posting and posting_wrong_accounts (c[3]): a
         * posting has one amount (0016) and its CHECK keeps its accounts;
         * the audit does not trust the CHECK (0020): dropped for the
         * plant, put back below */
        res = PQexec(pg, "SELECT pg_get_constraintdef(oid) FROM pg_constraint"
                         " WHERE conname = 'ledger_postings_accounts'");
        REQUIRE(PQresultStatus(res) == PGRES_TUPLES_OK && PQntuples(res) == 1);
        snprintf(accounts_def, sizeof(accounts_def), "%s",
                 PQgetvalue(res, 0, 0));
        PQclear(res);
        PLANT("ALTER TABLE ledger_postings DROP CONSTRAINT "
              "ledger_postings_accounts");
        PLANT("SET session_replication_role = replica");
        PLANT("UPDATE ledger_postings SET debit_account = credit_account "
              "WHERE payment_id = '%s'",
              c[3].payment_id);
        PLANT("UPDATE ledger_postings SET amount = amount + 5 WHERE "
              "payment_id = '%s'",
              c[4].payment_id);
        PLANT("SET session_replication_role = origin");
        /* key_final_payment_open, payment_final_key_open,
         * key_status_mismatch, payment_without_key, key_without_payment
         * (c[5] .. c[8], c[14]) cannot be planted any more: the payment
         * row is the key (0017); the audit keeps the checks, over the
         * view idempotency_keys */
        PLANT("DELETE FROM outbox WHERE payment_id = '%s'", c[9].payment_id);
        PLANT("UPDATE outbox SET status = 'review' WHERE payment_id = '%s'",
              c[10].payment_id);
        PLANT("INSERT INTO outbox (event_id, message_key, tenant_id, "
              "idem_key, payment_id, intent_event_id, status, payload) "
              "SELECT gen_random_uuid(), message_key, tenant_id, idem_key, "
              "NULL, intent_event_id, status, payload FROM outbox WHERE "
              "payment_id = '%s'",
              c[11].payment_id);

        /* 0012: two uniqueness rules kept by the audit, not an index */
        PLANT("UPDATE payments SET provider_key = (SELECT provider_key FROM "
              "payments WHERE payment_id = '%s') WHERE payment_id = '%s'",
              c[1].payment_id, c[2].payment_id);
        PLANT("INSERT INTO outbox (event_id, message_key, tenant_id, "
              "idem_key, payment_id, intent_event_id, status, payload) "
              "SELECT event_id, message_key, tenant_id, idem_key, "
              "payment_id, intent_event_id, status, payload FROM outbox "
              "WHERE payment_id = '%s'",
              c[10].payment_id);

        PLANT("UPDATE outbox SET payment_id = gen_random_uuid() WHERE "
              "payment_id = '%s'",
              c[15].payment_id);

        REQUIRE(store_invariant_violations(st, &v, &nv, err, sizeof(err)) ==
                STORE_OK);
        for (size_t i = 0; i < nv; i++)
                printf("violation: %-26s %s %s\n", v[i].kind, v[i].payment_id,
                       v[i].detail ? v[i].detail : "");
        CHECK(has(v, nv, "succeeded_without_posting", c[2].payment_id));
        CHECK(has(v, nv, "posting_not_succeeded", c[1].payment_id));
        CHECK(has(v, nv, "posting_amount_mismatch", c[4].payment_id));
        CHECK(has(v, nv, "unbalanced_posting", c[3].payment_id));
        CHECK(has(v, nv, "posting_wrong_accounts", c[3].payment_id));
        CHECK(has(v, nv, "final_without_result", c[9].payment_id));
        CHECK(has(v, nv, "result_status_mismatch", c[10].payment_id));
        CHECK(has(v, nv, "duplicate_final_result", NULL));
        CHECK(has(v, nv, "result_for_unknown_payment", NULL));
        CHECK(has(v, nv, "final_without_result", c[15].payment_id));
        CHECK(has(v, nv, "provider_key_reused", c[1].payment_id));
        CHECK(has(v, nv, "provider_key_reused", c[2].payment_id));
        CHECK(has(v, nv, "result_event_id_reused", c[10].payment_id));
        for (size_t i = 0; i < nv; i++) {
                CHECK(strcmp(v[i].payment_id, c[0].payment_id) != 0);
                CHECK(strcmp(v[i].payment_id, c[12].payment_id) != 0);
                CHECK(strcmp(v[i].payment_id, c[13].payment_id) != 0);
        }
        store_violations_free(v, nv);
        PLANT("SET session_replication_role = replica");
        PLANT("UPDATE ledger_postings SET debit_account = 'customer_funds:' "
              "|| tenant_id WHERE payment_id = '%s'",
              c[3].payment_id);
        PLANT("SET session_replication_role = origin");
        PLANT("ALTER TABLE ledger_postings ADD CONSTRAINT "
              "ledger_postings_accounts %s",
              accounts_def);
}

static int setup(void)
{
        int rc = st_begin("store_inv");

        if (rc)
                return rc;
        st = st_store();
        pg = st_pg();
        return 0;
}

static void teardown(void)
{
        for (int i = 0; i < NPAY; i++)
                store_claim_item_clear(&c[i]);
        PQfinish(pg);
        store_destroy(st);
        st_end();
}

int main(int argc, char **argv)
{
        static const struct test_case cases[] = {
                { "normal_flow_clean", normal_flow_clean, NULL, NULL },
                { "brin_open_range", brin_open_range, NULL, NULL },
                { "posting_constraints", test_posting_constraints, NULL, NULL },
                { "planted_violations", planted_violations, NULL, NULL },
        };
        return st_suite_main("store_ledger_invariants", cases,
                             sizeof(cases) / sizeof(cases[0]), setup, teardown,
                             true, argc, argv);
}
