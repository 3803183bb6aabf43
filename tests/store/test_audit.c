/* SPDX-License-Identifier: Apache-2.0 */
/*
 * store_audit: the periodic audit's steps (store/audit.c,
 * docs/data-model.md "The periodic audit"). The first step makes the
 * cursor at the feeds' ends (what was written before is left to the whole
 * view); a step reads the rows written since the last one, through
 * indexes only (no sequential scan of any table it reads), and checks the
 * payments they name; what it finds stays reported until repaired; a row
 * of a transaction still open at a step is read when it commits, however
 * many rows committed after it meanwhile (the outbox by its primary key,
 * the ledger by its BRIN index); an aborted insert's id is forgotten once
 * every writer of its time has ended; a step reads at most its limit and
 * says it is behind; a payment claimed after the last step's snapshot is
 * checked from the rows read alone.
 *
 * A chained suite (tests/common/cases.h): the cases run in order on one
 * database; store_audit_<case> runs the ones before it first.
 */
#include "cases.h"
#include "storetest.h"

#include "store/audit.h"

#include <stdlib.h>
#include <string.h>

#define NPAY 16

static struct store *st, *au;
static PGconn *pg, *late;
static struct st_intent in[NPAY];
static struct claim_item c[NPAY];
static int flows;

/* Claims n new payments and settles them: succeeded, except every
 * fifth failed; their ids in pid (unless NULL). */
static void flow_ids(int n, char (*pid)[UUID_STR_LEN])
{
        struct st_intent fi;
        struct claim_item fc;
        struct settle_item s;
        char ev[UUID_STR_LEN], buf[1024], key[48], err[512];

        for (int i = 0; i < n; i++) {
                snprintf(key, sizeof(key), "flow-%d-%d", flows, i);
                st_intent(&fi, "tenant-a", key, 500 + i, 0);
                st_item(&fc, &fi);
                REQUIRE(store_claim_batch(st, &fc, 1, "owner", ST_LEASE_MS,
                                          ST_SECRET, ST_SECRET_LEN, err,
                                          sizeof(err)) == STORE_OK);
                REQUIRE(fc.outcome == CLAIM_NEW);
                if (pid)
                        memcpy(pid[i], fc.payment_id, UUID_STR_LEN);
                st_settle_item(&s, &fc,
                               i % 5 == 4 ? SETTLE_FAILED : SETTLE_SUCCEEDED,
                               ev, buf, sizeof(buf));
                REQUIRE(store_settle_batch(st, &s, 1, err, sizeof(err)) ==
                        STORE_OK);
                store_claim_item_clear(&fc);
        }
        flows++;
}

static void flow(int n)
{
        flow_ids(n, NULL);
}

/* One step; REQUIREs it to succeed. */
static struct store_violation *step(int64_t limit, size_t *n,
                                    struct store_audit_info *info)
{
        struct store_violation *v = NULL;
        char err[512];
        int rc = store_audit_step(au, limit, &v, n, info, err, sizeof(err));

        if (rc != STORE_OK)
                fprintf(stderr, "audit step: %s\n", err);
        REQUIRE(rc == STORE_OK);
        for (size_t i = 0; i < *n; i++)
                printf("step: %-26s %s %s\n", v[i].kind, v[i].payment_id,
                       v[i].detail ? v[i].detail : "");
        return v;
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

/* Sequential scans of the tables a step reads, as the statistics show
 * them once every backend has reported (the audit's own included). */
static long long seq_scans(void)
{
        PGconn *const others[] = { store_pgconn(au), store_pgconn(st), late,
                                   NULL };

        return st_stat_count(pg, others,
                             "SELECT sum(seq_scan) FROM pg_stat_user_tables"
                             " WHERE relname IN ('payments', 'outbox', "
                             "'ledger_postings', 'gateway_evidence', "
                             "'webhook_events')");
}

/* Scans of the two indexes a step reads a payment's postings and
 * results through. */
static long long lookups(void)
{
        PGconn *const others[] = { store_pgconn(au), NULL };

        return st_stat_count(pg, others,
                             "SELECT sum(idx_scan) FROM pg_stat_user_indexes"
                             " WHERE indexrelname IN ('ledger_postings_pkey',"
                             " 'outbox_payment_idx')");
}

static long long holes(const char *feed)
{
        return st_count(pg,
                        "SELECT cardinality(%s_holes) FROM audit_cursor"
                        " WHERE id = 1",
                        feed);
}

#define PLANT(...) CHECK(st_exec(pg, true, __VA_ARGS__))

/* A copy of payment pid's result with another status (NULL: the same)
 * and payment id (NULL: the same), on conn. */
static bool result_copy(PGconn *conn, const char *pid, const char *status,
                        const char *other_pid)
{
        return st_exec(conn, true,
                       "INSERT INTO outbox (event_id, message_key, tenant_id,"
                       " idem_key, payment_id, intent_event_id, status,"
                       " payload) SELECT gen_random_uuid(), message_key,"
                       " tenant_id, idem_key, %s%s%s, intent_event_id, %s%s%s,"
                       " payload FROM outbox WHERE payment_id = '%s'"
                       " ORDER BY id LIMIT 1",
                       other_pid ? "'" : "",
                       other_pid ? other_pid : "payment_id",
                       other_pid ? "'::uuid" : "", status ? "'" : "",
                       status ? status : "status", status ? "'" : "", pid);
}

/* A copy of payment pid's first result under the same event id. */
static bool result_copy_event(const char *pid)
{
        return st_exec(pg, true,
                       "INSERT INTO outbox (event_id, message_key, tenant_id,"
                       " idem_key, payment_id, intent_event_id, status,"
                       " payload, replayed) SELECT event_id, message_key,"
                       " tenant_id, idem_key, payment_id, intent_event_id,"
                       " status, payload, true FROM outbox WHERE payment_id"
                       " = '%s' ORDER BY id LIMIT 1",
                       pid);
}

/* A charge posting of payment pid (whatever its status), on conn. */
static bool charge_posting(PGconn *conn, const char *pid)
{
        return st_exec(conn, true,
                       "INSERT INTO ledger_postings (payment_id, kind,"
                       " tenant_id, amount, currency, debit_account,"
                       " credit_account) SELECT payment_id, 'charge',"
                       " tenant_id, amount, currency, 'customer_funds:' ||"
                       " tenant_id, 'merchant_payable:' || tenant_id"
                       " FROM payments WHERE payment_id = '%s'",
                       pid);
}

/* Removes payment pid's postings (the ledger is append-only: replica). */
static void unpost(const char *pid)
{
        PLANT("SET session_replication_role = replica");
        PLANT("DELETE FROM ledger_postings WHERE payment_id = '%s'"
              " AND kind = 'charge'",
              pid);
        PLANT("SET session_replication_role = origin");
}

/*
 * Payments, and a violation, written before the first step: the first
 * step makes the cursor at the feeds' ends and reads nothing; the next
 * reads nothing either. The whole view still sees the violation.
 */
static void starts_at_end(void)
{
        static const enum settle_status want[NPAY] = {
                SETTLE_SUCCEEDED, SETTLE_FAILED,
                SETTLE_SUCCEEDED, SETTLE_SUCCEEDED,
                SETTLE_SUCCEEDED, SETTLE_SUCCEEDED,
                SETTLE_SUCCEEDED, SETTLE_SUCCEEDED,
                SETTLE_FAILED,    SETTLE_FAILED,
                SETTLE_SUCCEEDED, SETTLE_SUCCEEDED,
                SETTLE_SUCCEEDED, 0,
                SETTLE_FAILED,    SETTLE_REVIEW,
        };
        struct settle_item s[NPAY];
        char ev[NPAY][UUID_STR_LEN], buf[NPAY][1024], err[512];
        struct store_violation *v = NULL, *full = NULL;
        struct store_audit_info info;
        size_t ns = 0, n = 0, nf = 0;

        for (int i = 0; i < NPAY; i++) {
                char key[32];

                snprintf(key, sizeof(key), "aud-%d", i);
                st_intent(&in[i], "tenant-a", key, 1000 + i, 0);
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
        CHECK(charge_posting(pg, c[8].payment_id));

        v = step(1000, &n, &info);
        CHECK(info.started);
        CHECK_EQ_I(n, 0);
        store_violations_free(v, n);
        CHECK_EQ_I(st_count(pg, "SELECT outbox_through FROM audit_cursor"),
                   st_count(pg, "SELECT max(id) FROM outbox"));
        v = step(1000, &n, &info);
        CHECK(!info.started && !info.behind);
        CHECK_EQ_I(info.rows, 0);
        CHECK_EQ_I(n, 0);
        store_violations_free(v, n);
        REQUIRE(store_invariant_violations(st, &full, &nf, err, sizeof(err)) ==
                STORE_OK);
        CHECK(has(full, nf, "posting_not_succeeded", c[8].payment_id));
        store_violations_free(full, nf);
}

/* New payments: read once (their results and postings), no violation,
 * no table scanned; the step after reads nothing. */
static void new_rows_clean(void)
{
        long long ob  = st_count(pg, "SELECT max(id) FROM outbox");
        long long lp  = st_count(pg, "SELECT max(id) FROM ledger_postings");
        long long seq = 0;
        struct store_audit_info info;
        struct store_violation *v;
        size_t n = 0;

        flow(10);
        seq = seq_scans();
        v   = step(1000, &n, &info);
        CHECK_EQ_I(seq_scans(), seq);
        CHECK_EQ_I(n, 0);
        store_violations_free(v, n);
        CHECK_EQ_I(
            info.rows,
            st_count(pg, "SELECT count(*) FROM outbox WHERE id > %lld", ob) +
                st_count(pg,
                         "SELECT count(*) FROM ledger_postings WHERE"
                         " id > %lld",
                         lp));
        CHECK_EQ_I(info.rows, 18); /* 10 results, 8 charges */
        v = step(1000, &n, &info);
        CHECK_EQ_I(info.rows, 0);
        store_violations_free(v, n);
}

/*
 * A violation of each kind the step checks, planted by rows the feeds
 * carry: found, through indexes only; found again by the next step (no
 * new row names them); gone once repaired.
 */
static void planted(void)
{
        const char *unknown = "0b7e1e5c-5a35-4c51-9a1e-d0b1a3b2c4d5";
        struct store_audit_info info;
        struct store_violation *v;
        long long seq;
        size_t n = 0;

        CHECK(charge_posting(pg, c[1].payment_id));
        CHECK(result_copy(pg, c[3].payment_id, NULL, NULL));
        CHECK(result_copy(pg, c[4].payment_id, "failed", NULL));
        CHECK(result_copy(pg, c[5].payment_id, NULL, unknown));
        PLANT("UPDATE payments SET status = 'succeeded', provider_charge_id"
              " = 'ch_x' WHERE payment_id = '%s'",
              c[9].payment_id);
        CHECK(result_copy(pg, c[9].payment_id, "succeeded", NULL));
        PLANT("UPDATE payments SET refunded_at = now() WHERE payment_id = '%s'",
              c[10].payment_id);
        PLANT("INSERT INTO gateway_evidence (payment_id, kind, outcome)"
              " VALUES ('%s', 'webhook', 'refund')",
              c[10].payment_id);
        PLANT("INSERT INTO webhook_events (webhook_id, event_type, reference,"
              " payment_id, provider_charge_id, amount, currency) VALUES"
              " ('wh_audit_1', 'charge.succeeded', '%s', '%s', 'ch_test',"
              " 1011, 'VND')",
              c[11].payment_id, c[11].payment_id);
        PLANT("INSERT INTO gateway_evidence (payment_id, kind, outcome)"
              " VALUES ('%s', 'webhook', 'ignored')",
              c[11].payment_id);

        seq = seq_scans();
        v   = step(1000, &n, &info);
        CHECK_EQ_I(seq_scans(), seq);
        for (int pass = 0; pass < 2; pass++) {
                CHECK(has(v, n, "posting_not_succeeded", c[1].payment_id));
                CHECK(has(v, n, "duplicate_final_result", c[3].payment_id));
                CHECK(has(v, n, "result_status_mismatch", c[4].payment_id));
                CHECK(has(v, n, "result_for_unknown_payment", unknown));
                CHECK(has(v, n, "succeeded_without_posting", c[9].payment_id));
                CHECK(has(v, n, "refund_flag_mismatch", c[10].payment_id));
                CHECK(has(v, n, "webhook_without_result", c[11].payment_id));
                for (size_t i = 0; i < n; i++) {
                        CHECK(strcmp(v[i].payment_id, c[0].payment_id) != 0);
                        CHECK(strcmp(v[i].payment_id, c[8].payment_id) != 0);
                        CHECK(strcmp(v[i].payment_id, c[12].payment_id) != 0);
                }
                store_violations_free(v, n);
                v = step(1000, &n, &info); /* nothing new: still there */
                CHECK_EQ_I(info.rows, 0);
        }
        store_violations_free(v, n);

        unpost(c[1].payment_id);
        PLANT("DELETE FROM outbox WHERE id IN (SELECT max(id) FROM outbox"
              " WHERE payment_id IN ('%s', '%s', '%s', '%s')"
              " GROUP BY payment_id)",
              c[3].payment_id, c[4].payment_id, c[9].payment_id, unknown);
        PLANT("UPDATE payments SET status = 'failed', provider_charge_id ="
              " NULL WHERE payment_id = '%s'",
              c[9].payment_id);
        PLANT("UPDATE payments SET refunded_at = NULL WHERE payment_id = '%s'",
              c[10].payment_id);
        PLANT("UPDATE webhook_events SET result = 'ignored' WHERE webhook_id"
              " = 'wh_audit_1'");
        v = step(1000, &n, &info);
        CHECK_EQ_I(n, 0);
        store_violations_free(v, n);
        CHECK_EQ_I(st_count(pg, "SELECT cardinality(open_payments) FROM"
                                " audit_cursor"),
                   0);
}

/* A result of a transaction open at two steps, while later rows commit:
 * its id is a hole, kept; read once it commits. */
static void late_commit(void)
{
        struct store_audit_info info;
        struct store_violation *v;
        size_t n = 0;

        REQUIRE(st_exec(late, true, "BEGIN"));
        CHECK(result_copy(late, c[7].payment_id, NULL, NULL));
        flow(5);
        for (int i = 0; i < 2; i++) {
                v = step(1000, &n, &info);
                CHECK(!has(v, n, "duplicate_final_result", c[7].payment_id));
                CHECK_EQ_I(n, 0);
                store_violations_free(v, n);
                CHECK_EQ_I(holes("outbox"), 1);
        }
        REQUIRE(st_exec(late, true, "COMMIT"));
        v = step(1000, &n, &info);
        CHECK(has(v, n, "duplicate_final_result", c[7].payment_id));
        CHECK_EQ_I(info.rows, 1);
        store_violations_free(v, n);
        CHECK_EQ_I(holes("outbox"), 0);
        PLANT("DELETE FROM outbox WHERE id = (SELECT max(id) FROM outbox"
              " WHERE payment_id = '%s')",
              c[7].payment_id);
        v = step(1000, &n, &info);
        CHECK_EQ_I(n, 0);
        store_violations_free(v, n);
}

/* The same for a posting, read through the ledger's BRIN index. */
static void late_posting(void)
{
        struct store_audit_info info;
        struct store_violation *v;
        size_t n = 0;

        REQUIRE(st_exec(late, true, "BEGIN"));
        CHECK(charge_posting(late, c[14].payment_id));
        flow(5);
        v = step(1000, &n, &info);
        CHECK(!has(v, n, "posting_not_succeeded", c[14].payment_id));
        store_violations_free(v, n);
        CHECK_EQ_I(holes("postings"), 1);
        REQUIRE(st_exec(late, true, "COMMIT"));
        v = step(1000, &n, &info);
        CHECK(has(v, n, "posting_not_succeeded", c[14].payment_id));
        store_violations_free(v, n);
        CHECK_EQ_I(holes("postings"), 0);
        unpost(c[14].payment_id);
        v = step(1000, &n, &info);
        CHECK_EQ_I(n, 0);
        store_violations_free(v, n);
}

/* An insert rolled back leaves a hole; once every writer of its time has
 * ended, it is forgotten. */
static void aborted_insert(void)
{
        struct store_audit_info info;
        struct store_violation *v;
        size_t n = 0;

        REQUIRE(st_exec(late, true, "BEGIN"));
        CHECK(result_copy(late, c[0].payment_id, NULL, NULL));
        CHECK(charge_posting(late, c[1].payment_id));
        REQUIRE(st_exec(late, true, "ROLLBACK"));
        flow(3);
        v = step(1000, &n, &info);
        CHECK_EQ_I(n, 0);
        store_violations_free(v, n);
        CHECK_EQ_I(holes("outbox"), 1);
        CHECK_EQ_I(holes("postings"), 1);
        for (int i = 0; i < 3 && holes("outbox") + holes("postings"); i++) {
                v = step(1000, &n, &info);
                CHECK_EQ_I(n, 0);
                store_violations_free(v, n);
        }
        CHECK_EQ_I(holes("outbox"), 0);
        CHECK_EQ_I(holes("postings"), 0);
}

/* More new rows than a step reads: behind until it has caught up, every
 * row read once. */
static void behind(void)
{
        long long ob = st_count(pg, "SELECT max(id) FROM outbox");
        long long lp = st_count(pg, "SELECT max(id) FROM ledger_postings");
        struct store_audit_info info;
        struct store_violation *v;
        int64_t rows = 0;
        int steps    = 0;
        size_t n     = 0;

        flow(12);
        do {
                v = step(5, &n, &info);
                CHECK_EQ_I(n, 0);
                store_violations_free(v, n);
                rows += info.rows;
                steps++;
        } while (info.behind && steps < 10);
        CHECK(!info.behind);
        CHECK(steps >= 3);
        CHECK_EQ_I(
            rows,
            st_count(pg, "SELECT count(*) FROM outbox WHERE id > %lld", ob) +
                st_count(pg,
                         "SELECT count(*) FROM ledger_postings WHERE"
                         " id > %lld",
                         lp));
}

/* The cursor removed: the next step makes it again at the ends. */
static void cursor_lost(void)
{
        struct store_audit_info info;
        struct store_violation *v;
        size_t n = 0;

        PLANT("DELETE FROM audit_cursor");
        flow(2);
        v = step(1000, &n, &info);
        CHECK(info.started);
        store_violations_free(v, n);
        v = step(1000, &n, &info);
        CHECK(!info.started);
        CHECK_EQ_I(info.rows, 0);
        store_violations_free(v, n);
}

/*
 * Payments claimed after the last step's snapshot are fresh: checked from
 * the feed rows alone, their postings and results never looked up. A
 * violation of each kind planted among them before the step is found as
 * the look-ups find it, then checked again by look-up (reported, so rows
 * written before a claim could name it) until repaired. A payment
 * claimed before that snapshot and settled after is looked up.
 */
static void fresh(void)
{
        char pid[9][UUID_STR_LEN], ev[UUID_STR_LEN], buf[1024], err[512];
        struct store_audit_info info;
        struct store_violation *v;
        struct settle_item si;
        struct claim_item q;
        struct st_intent qi;
        long long scans;
        size_t n = 0;

        v = step(1000, &n, &info); /* the snapshot after cursor_lost's */
        store_violations_free(v, n);

        /* clean: ten fresh payments, no posting or result looked up */
        flow(10);
        scans = lookups();
        v     = step(1000, &n, &info);
        CHECK_EQ_I(n, 0);
        store_violations_free(v, n);
        CHECK_EQ_I(info.fresh, 10);
        CHECK_EQ_I(lookups(), scans);

        /* after a step of an earlier release (it counts the step and
         * leaves the snapshot): none fresh */
        flow(3);
        PLANT("UPDATE audit_cursor SET steps = steps + 1");
        v = step(1000, &n, &info);
        CHECK_EQ_I(n, 0);
        store_violations_free(v, n);
        CHECK_EQ_I(info.fresh, 0);

        /* claimed before a step, settled after it, a result copied: not
         * fresh, its rows looked up */
        st_intent(&qi, "tenant-a", "aud-fresh-q", 4242, 0);
        st_item(&q, &qi);
        REQUIRE(store_claim_batch(st, &q, 1, "owner", ST_LEASE_MS, ST_SECRET,
                                  ST_SECRET_LEN, err, sizeof(err)) == STORE_OK);
        REQUIRE(q.outcome == CLAIM_NEW);
        v = step(1000, &n, &info);
        store_violations_free(v, n);
        st_settle_item(&si, &q, SETTLE_SUCCEEDED, ev, buf, sizeof(buf));
        REQUIRE(store_settle_batch(st, &si, 1, err, sizeof(err)) == STORE_OK);
        CHECK(result_copy(pg, q.payment_id, NULL, NULL));

        /* and nine fresh ones, seven of them made wrong before the step
         * (a posting on other accounts the table's CHECK refuses) */
        flow_ids(9, pid);
        unpost(pid[0]);
        CHECK(result_copy(pg, pid[1], NULL, NULL));
        CHECK(result_copy(pg, pid[2], "failed", NULL));
        PLANT("INSERT INTO ledger_postings (payment_id, kind, tenant_id,"
              " amount, currency, debit_account, credit_account) SELECT"
              " payment_id, 'refund', tenant_id, amount, currency,"
              " 'merchant_payable:' || tenant_id, 'customer_funds:' ||"
              " tenant_id FROM payments WHERE payment_id = '%s'",
              pid[3]);
        CHECK(charge_posting(pg, pid[4])); /* the fifth: failed */
        CHECK(result_copy_event(q.payment_id));
        CHECK(result_copy_event(pid[8]));
        PLANT("SET session_replication_role = replica");
        PLANT("UPDATE ledger_postings SET amount = amount + 1 WHERE"
              " payment_id = '%s'",
              pid[5]);
        PLANT("SET session_replication_role = origin");
        scans = lookups();
        v     = step(1000, &n, &info);
        CHECK_EQ_I(info.fresh, 9);
        CHECK(lookups() > scans); /* q's, and the wrong ones' rows */
        for (int pass = 0; pass < 2; pass++) {
                CHECK(has(v, n, "duplicate_final_result", q.payment_id));
                CHECK(has(v, n, "succeeded_without_posting", pid[0]));
                CHECK(has(v, n, "duplicate_final_result", pid[1]));
                CHECK(has(v, n, "result_status_mismatch", pid[2]));
                CHECK(has(v, n, "refund_flag_mismatch", pid[3]));
                CHECK(has(v, n, "posting_not_succeeded", pid[4]));
                CHECK(has(v, n, "posting_amount_mismatch", pid[5]));
                CHECK(has(v, n, "result_event_id_reused", q.payment_id));
                CHECK(has(v, n, "result_event_id_reused", pid[8]));
                for (size_t i = 0; i < n; i++)
                        CHECK(strcmp(v[i].payment_id, pid[6]) != 0 &&
                              strcmp(v[i].payment_id, pid[7]) != 0);
                store_violations_free(v, n);
                v = step(1000, &n, &info); /* reported: looked up */
                CHECK_EQ_I(info.fresh, 0);
        }
        store_violations_free(v, n);

        PLANT("DELETE FROM outbox WHERE id IN (SELECT max(id) FROM outbox"
              " WHERE payment_id IN ('%s', '%s', '%s') GROUP BY payment_id)",
              q.payment_id, pid[1], pid[2]);
        PLANT("DELETE FROM outbox WHERE id IN (SELECT max(id) FROM outbox"
              " WHERE payment_id IN ('%s', '%s') GROUP BY payment_id)",
              q.payment_id, pid[8]);
        PLANT("SET session_replication_role = replica");
        PLANT("DELETE FROM ledger_postings WHERE payment_id = '%s'"
              " OR (payment_id = '%s' AND kind = 'refund')",
              pid[4], pid[3]);
        PLANT("UPDATE ledger_postings SET amount = amount - 1 WHERE"
              " payment_id = '%s'",
              pid[5]);
        PLANT("SET session_replication_role = origin");
        CHECK(charge_posting(pg, pid[0]));
        v = step(1000, &n, &info);
        CHECK_EQ_I(n, 0);
        store_violations_free(v, n);
        store_claim_item_clear(&q);
}

static int setup(void)
{
        bool lead = false;
        char err[512];
        int rc = st_begin("store_audit");

        if (rc)
                return rc;
        st   = st_store();
        au   = st_store();
        pg   = st_pg();
        late = st_pg();
        REQUIRE(store_audit_lead(au, 30000, &lead, err, sizeof(err)) ==
                STORE_OK);
        REQUIRE(lead);
        return 0;
}

static void teardown(void)
{
        for (int i = 0; i < NPAY; i++)
                store_claim_item_clear(&c[i]);
        PQfinish(late);
        PQfinish(pg);
        store_destroy(au);
        store_destroy(st);
        st_end();
}

int main(int argc, char **argv)
{
        static const struct test_case cases[] = {
                { "starts_at_end", starts_at_end, NULL, NULL },
                { "new_rows_clean", new_rows_clean, NULL, NULL },
                { "planted", planted, NULL, NULL },
                { "late_commit", late_commit, NULL, NULL },
                { "late_posting", late_posting, NULL, NULL },
                { "aborted_insert", aborted_insert, NULL, NULL },
                { "behind", behind, NULL, NULL },
                { "cursor_lost", cursor_lost, NULL, NULL },
                { "fresh", fresh, NULL, NULL },
        };
        return st_suite_main("store_audit", cases,
                             sizeof(cases) / sizeof(cases[0]), setup, teardown,
                             true, argc, argv);
}
