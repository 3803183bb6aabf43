/* SPDX-License-Identifier: Apache-2.0 */
/*
 * store_webhook: store_webhook_apply on a real PostgreSQL, one case per
 * rule of docs/contract.md §5.3: a processing payment finished by a webhook
 * (and the old lease holder's settle fenced), a review resolved (a new result
 * with resolves_review), the same final outcome ignored, every contradiction
 * recorded with nothing else changed, a refund posted once, a refund of a
 * processing payment, unknown references, a replayed webhook-id, the same
 * id from two connections at once, and a webhook racing a settle. After
 * every case invariant_violations is empty.
 */
#include "cases.h"
#include "storetest.h"
#include "store/webhook.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

static struct store *st;
static PGconn *pg;
static char err[512];
static int seq;

struct pay {
        struct st_intent in;
        struct claim_item c;
};

/* A new processing payment (lease epoch 1, owner-a). */
static struct pay *new_payment(int64_t amount)
{
        struct pay *p = calloc(1, sizeof(*p));
        char key[64];

        REQUIRE(p);
        snprintf(key, sizeof(key), "wh-key-%d", ++seq);
        st_intent(&p->in, "tenant-w", key, amount, 0);
        st_item(&p->c, &p->in);
        REQUIRE(store_claim_batch(st, &p->c, 1, "owner-a", ST_LEASE_MS,
                                  ST_SECRET, ST_SECRET_LEN, err,
                                  sizeof(err)) == STORE_OK);
        REQUIRE(p->c.outcome == CLAIM_NEW);
        return p;
}

static void pay_free(struct pay *p)
{
        store_claim_item_clear(&p->c);
        free(p);
}

/* Settles p (epoch 1) with status; charge id "ch_test" for a success. */
static enum settle_outcome settle(struct store *s, struct pay *p,
                                  enum settle_status status)
{
        struct settle_item it;
        char ev[UUID_STR_LEN], buf[1024];

        st_settle_item(&it, &p->c, status, ev, buf, sizeof(buf));
        REQUIRE(store_settle_batch(s, &it, 1, err, sizeof(err)) == STORE_OK);
        return it.outcome;
}

static struct gateway_event event(enum gateway_event_type t, const char *ref,
                                  const char *charge_id, int64_t amount,
                                  const char *currency)
{
        struct gateway_event ev;

        memset(&ev, 0, sizeof(ev));
        ev.type = t;
        snprintf(ev.reference, sizeof(ev.reference), "%s", ref);
        snprintf(ev.charge_id, sizeof(ev.charge_id), "%s", charge_id);
        ev.amount = amount;
        snprintf(ev.currency, sizeof(ev.currency), "%s", currency);
        return ev;
}

static int apply_on(struct store *s, const char *id,
                    const struct gateway_event *ev,
                    struct store_webhook_out *out)
{
        struct store_webhook_in in = { id, 1796000000, ev, "test-actor" };
        char e[512];
        int rc = store_webhook_apply(s, &in, out, e, sizeof(e));

        if (rc != STORE_OK)
                fprintf(stderr, "store_webhook_apply: %s\n", e);
        return rc;
}

/* Applies ev as webhook id, expects STORE_OK and returns the result. */
static enum store_webhook_result apply(const char *id,
                                       const struct gateway_event *ev,
                                       struct store_webhook_out *out)
{
        REQUIRE(apply_on(st, id, ev, out) == STORE_OK);
        return out->result;
}

/* Everything the store holds about a payment, as one string. */
static void fingerprint(const char *pid, char *out, size_t outsz)
{
        char sql[2048];
        PGresult *res;

        snprintf(sql, sizeof(sql),
                 "SELECT concat_ws('|', p.status, p.lease_epoch,"
                 " p.lease_owner, p.provider_charge_id, p.error_code,"
                 " p.refunded_at, p.finished_at, k.state, k.status,"
                 " k.result_event_id,"
                 " (SELECT count(*) FROM ledger_transactions t"
                 "   WHERE t.payment_id = p.payment_id),"
                 " (SELECT count(*) FROM ledger_entries e JOIN"
                 "   ledger_transactions t ON t.id = e.txn_id"
                 "   WHERE t.payment_id = p.payment_id),"
                 " (SELECT count(*) FROM outbox o"
                 "   WHERE o.payment_id = p.payment_id),"
                 " (SELECT count(*) FROM gateway_evidence g"
                 "   WHERE g.payment_id = p.payment_id))"
                 " FROM payments p JOIN idempotency_keys k"
                 "  ON k.payment_id = p.payment_id"
                 " WHERE p.payment_id = '%s'",
                 pid);
        res = PQexec(pg, sql);
        REQUIRE(PQresultStatus(res) == PGRES_TUPLES_OK && PQntuples(res) == 1);
        snprintf(out, outsz, "%s", PQgetvalue(res, 0, 0));
        PQclear(res);
}

static void no_violations(void)
{
        long long n = st_count(pg, "SELECT count(*) FROM invariant_violations");

        if (n != 0) {
                PGresult *res = PQexec(pg, "SELECT kind, payment_id, detail"
                                           " FROM invariant_violations");
                for (int i = 0; i < PQntuples(res); i++)
                        fprintf(stderr, "violation: %s %s %s\n",
                                PQgetvalue(res, i, 0), PQgetvalue(res, i, 1),
                                PQgetvalue(res, i, 2));
                PQclear(res);
        }
        CHECK_EQ_I(n, 0);
}

/* A count about one payment: sql has one %s for its id. */
#define q(pid, sql) st_count(pg, sql, pid)

static void processing_finished(void)
{
        struct pay *p = new_payment(1000), *f = new_payment(2000),
                   *g           = new_payment(3000);
        struct gateway_event ev = event(GATEWAY_EVENT_CHARGE_SUCCEEDED,
                                        p->c.payment_id, "ch_w1", 1000, "VND");
        struct store_webhook_out out;

        CHECK_EQ_I(apply("msg_p1", &ev, &out), STORE_WEBHOOK_APPLIED);
        CHECK(strcmp(out.payment_id, p->c.payment_id) == 0);
        CHECK(strcmp(out.applied, "succeeded") == 0);
        CHECK(strcmp(out.previous, "processing") == 0);
        CHECK_EQ_I(q(p->c.payment_id,
                     "SELECT count(*) FROM payments WHERE payment_id = '%s'"
                     " AND status = 'succeeded' AND lease_epoch = 2"
                     " AND lease_owner IS NULL AND finished_at IS NOT NULL"
                     " AND provider_charge_id = 'ch_w1'"),
                   1);
        CHECK_EQ_I(q(p->c.payment_id,
                     "SELECT count(*) FROM idempotency_keys k JOIN outbox o"
                     " ON o.event_id = k.result_event_id"
                     " WHERE k.payment_id = '%s' AND k.state = 'final'"
                     " AND k.status = 'succeeded' AND o.status = 'succeeded'"
                     " AND NOT o.resolves_review AND NOT o.replayed"
                     " AND o.message_key = k.tenant_id || '/' || k.idem_key"
                     " AND o.payload LIKE '%%\"provider_charge_id\":"
                     "\"ch_w1\"%%'"
                     " AND o.payload NOT LIKE '%%resolves_review%%'"),
                   1);
        CHECK_EQ_I(q(p->c.payment_id,
                     "SELECT count(*) FROM ledger_transactions t JOIN"
                     " ledger_entries e ON e.txn_id = t.id"
                     " WHERE t.payment_id = '%s' AND t.kind = 'charge'"
                     " AND e.amount = 1000"),
                   2);
        CHECK_EQ_I(q(p->c.payment_id,
                     "SELECT count(*) FROM gateway_evidence WHERE"
                     " payment_id = '%s' AND kind = 'webhook'"
                     " AND request_summary LIKE '%%msg_p1%%'"
                     " AND actor = 'test-actor' AND lease_epoch = 2"),
                   1);
        /* the worker still holding epoch 1 is fenced and writes nothing */
        {
                char before[1024], after[1024];

                fingerprint(p->c.payment_id, before, sizeof(before));
                CHECK_EQ_I(settle(st, p, SETTLE_FAILED), SETTLE_FENCED);
                fingerprint(p->c.payment_id, after, sizeof(after));
                CHECK(strcmp(before, after) == 0);
        }

        /* failed, with the gateway's error, then without one */
        ev = event(GATEWAY_EVENT_CHARGE_FAILED, f->c.payment_id, "ch_w2", 2000,
                   "VND");
        strcpy(ev.error_code, "card_declined");
        strcpy(ev.error_message, "Th\xe1\xba\xbb b\xe1\xbb\x8b t\xe1\xbb\xab");
        CHECK_EQ_I(apply("msg_f1", &ev, &out), STORE_WEBHOOK_APPLIED);
        CHECK(strcmp(out.applied, "failed") == 0);
        CHECK_EQ_I(q(f->c.payment_id,
                     "SELECT count(*) FROM payments WHERE payment_id = '%s'"
                     " AND status = 'failed' AND error_code = 'card_declined'"
                     " AND lease_epoch = 2"),
                   1);
        CHECK_EQ_I(q(f->c.payment_id, "SELECT count(*) FROM ledger_transactions"
                                      " WHERE payment_id = '%s'"),
                   0);
        CHECK_EQ_I(settle(st, f, SETTLE_SUCCEEDED), SETTLE_FENCED);
        ev = event(GATEWAY_EVENT_CHARGE_FAILED, g->c.payment_id, "ch_w3", 3000,
                   "VND");
        CHECK_EQ_I(apply("msg_g1", &ev, &out), STORE_WEBHOOK_APPLIED);
        CHECK_EQ_I(q(g->c.payment_id, "SELECT count(*) FROM payments WHERE"
                                      " payment_id = '%s' AND error_code = "
                                      "'" PAYMENT_WEBHOOK_FAILED_CODE "'"),
                   1);
        no_violations();
        pay_free(p);
        pay_free(f);
        pay_free(g);
}

static void review_resolved(void)
{
        struct pay *p = new_payment(1500), *f = new_payment(1600);
        struct gateway_event ev = event(GATEWAY_EVENT_CHARGE_SUCCEEDED,
                                        p->c.payment_id, "ch_r1", 1500, "VND");
        struct store_webhook_out out;

        CHECK_EQ_I(settle(st, p, SETTLE_REVIEW), SETTLE_OK);
        CHECK_EQ_I(settle(st, f, SETTLE_REVIEW), SETTLE_OK);
        CHECK_EQ_I(apply("msg_r1", &ev, &out), STORE_WEBHOOK_APPLIED);
        CHECK(strcmp(out.previous, "review") == 0);
        CHECK_EQ_I(q(p->c.payment_id,
                     "SELECT count(*) FROM outbox WHERE payment_id = '%s'"
                     " AND NOT replayed"),
                   2);
        CHECK_EQ_I(q(p->c.payment_id,
                     "SELECT count(*) FROM outbox o JOIN idempotency_keys k"
                     " ON k.result_event_id = o.event_id"
                     " WHERE o.payment_id = '%s' AND o.resolves_review"
                     " AND o.status = 'succeeded' AND k.status = 'succeeded'"
                     " AND o.payload LIKE '%%\"provider_charge_id\":"
                     "\"ch_r1\"%%'"
                     " AND o.payload LIKE '%%,\"resolves_review\":true}'"),
                   1);
        CHECK_EQ_I(q(p->c.payment_id,
                     "SELECT count(*) FROM ledger_transactions WHERE"
                     " payment_id = '%s' AND kind = 'charge'"),
                   1);
        ev = event(GATEWAY_EVENT_CHARGE_FAILED, f->c.payment_id, "ch_r2", 1600,
                   "VND");
        CHECK_EQ_I(apply("msg_r2", &ev, &out), STORE_WEBHOOK_APPLIED);
        CHECK_EQ_I(q(f->c.payment_id,
                     "SELECT count(*) FROM payments p JOIN outbox o"
                     " ON o.payment_id = p.payment_id AND o.resolves_review"
                     " WHERE p.payment_id = '%s' AND p.status = 'failed'"
                     " AND o.status = 'failed'"),
                   1);
        /* a later copy of the intent replays the final outcome */
        CHECK_EQ_I(q(f->c.payment_id,
                     "SELECT count(*) FROM idempotency_keys WHERE"
                     " payment_id = '%s' AND status = 'failed'"
                     " AND state = 'final'"),
                   1);
        no_violations();
        pay_free(p);
        pay_free(f);
}

static void final_same_outcome(void)
{
        struct pay *p = new_payment(100), *f = new_payment(200);
        struct gateway_event ev = event(GATEWAY_EVENT_CHARGE_SUCCEEDED,
                                        p->c.payment_id, "ch_test", 100, "VND");
        struct store_webhook_out out;
        char before[1024], after[1024];

        CHECK_EQ_I(settle(st, p, SETTLE_SUCCEEDED), SETTLE_OK);
        CHECK_EQ_I(settle(st, f, SETTLE_FAILED), SETTLE_OK);
        fingerprint(p->c.payment_id, before, sizeof(before));
        CHECK_EQ_I(apply("msg_s1", &ev, &out), STORE_WEBHOOK_IGNORED);
        CHECK(strcmp(out.detail, "already succeeded") == 0);
        fingerprint(p->c.payment_id, after, sizeof(after));
        CHECK(strcmp(before, after) == 0);
        ev = event(GATEWAY_EVENT_CHARGE_FAILED, f->c.payment_id, "ch_f", 200,
                   "VND");
        fingerprint(f->c.payment_id, before, sizeof(before));
        CHECK_EQ_I(apply("msg_s2", &ev, &out), STORE_WEBHOOK_IGNORED);
        fingerprint(f->c.payment_id, after, sizeof(after));
        CHECK(strcmp(before, after) == 0);
        CHECK_EQ_I(st_count(pg, "SELECT count(*) FROM webhook_events WHERE"
                                " result = 'ignored'"),
                   2);
        no_violations();
        pay_free(p);
        pay_free(f);
}

struct contra {
        enum settle_status settled; /* 0: stays processing */
        enum gateway_event_type type;
        const char *charge_id;
        int64_t amount_delta;
        const char *currency;
        const char *detail;
};

static void contradictions(void)
{
        static const struct contra cs[] = {
                { SETTLE_FAILED, GATEWAY_EVENT_CHARGE_SUCCEEDED, "ch_test", 0,
                  "VND", "status failed, webhook charge.succeeded" },
                { SETTLE_SUCCEEDED, GATEWAY_EVENT_CHARGE_FAILED, "ch_test", 0,
                  "VND", "status succeeded, webhook charge.failed" },
                { 0, GATEWAY_EVENT_CHARGE_SUCCEEDED, "ch_a", 1, "VND",
                  "amount differs" },
                { SETTLE_SUCCEEDED, GATEWAY_EVENT_CHARGE_REFUNDED, "ch_test",
                  -1, "VND", "amount differs" },
                { SETTLE_REVIEW, GATEWAY_EVENT_CHARGE_SUCCEEDED, "ch_a", 0,
                  "USD", "currency differs" },
                { SETTLE_SUCCEEDED, GATEWAY_EVENT_CHARGE_SUCCEEDED, "ch_other",
                  0, "VND", "charge id differs" },
                { SETTLE_FAILED, GATEWAY_EVENT_CHARGE_REFUNDED, "ch_test", 0,
                  "VND", "refund of a failed payment" },
        };
        size_t n = sizeof(cs) / sizeof(cs[0]);

        for (size_t i = 0; i < n; i++) {
                struct pay *p = new_payment(700);
                struct gateway_event ev =
                    event(cs[i].type, p->c.payment_id, cs[i].charge_id,
                          700 + cs[i].amount_delta, cs[i].currency);
                struct store_webhook_out out;
                char before[1024], after[1024], id[32];

                if (cs[i].settled)
                        CHECK_EQ_I(settle(st, p, cs[i].settled), SETTLE_OK);
                fingerprint(p->c.payment_id, before, sizeof(before));
                snprintf(id, sizeof(id), "msg_c%zu", i);
                CHECK_EQ_I(apply(id, &ev, &out), STORE_WEBHOOK_CONTRADICTION);
                if (strcmp(out.detail, cs[i].detail) != 0) {
                        fprintf(stderr, "case %zu: detail %s\n", i, out.detail);
                        CHECK(0);
                }
                fingerprint(p->c.payment_id, after, sizeof(after));
                CHECK(strcmp(before, after) == 0);
                CHECK_EQ_I(q(p->c.payment_id,
                             "SELECT count(*) FROM webhook_contradictions"
                             " WHERE payment_id = '%s'"),
                           1);
                /* a processing payment's worker still settles it */
                if (!cs[i].settled)
                        CHECK_EQ_I(settle(st, p, SETTLE_SUCCEEDED), SETTLE_OK);
                pay_free(p);
        }
        CHECK_EQ_I(st_count(pg, "SELECT count(*) FROM webhook_contradictions"),
                   (long long)n);
        no_violations();
}

static void refunds(void)
{
        struct pay *p = new_payment(900), *r = new_payment(950);
        struct gateway_event ev = event(GATEWAY_EVENT_CHARGE_REFUNDED,
                                        p->c.payment_id, "ch_test", 900, "VND");
        struct store_webhook_out out;

        CHECK_EQ_I(settle(st, p, SETTLE_SUCCEEDED), SETTLE_OK);
        CHECK_EQ_I(apply("msg_rf1", &ev, &out), STORE_WEBHOOK_APPLIED);
        CHECK(strcmp(out.applied, "refunded") == 0);
        CHECK_EQ_I(apply("msg_rf2", &ev, &out), STORE_WEBHOOK_IGNORED);
        CHECK(strcmp(out.detail, "refund already posted") == 0);
        /* a late charge.succeeded changes nothing either */
        ev.type = GATEWAY_EVENT_CHARGE_SUCCEEDED;
        CHECK_EQ_I(apply("msg_rf3", &ev, &out), STORE_WEBHOOK_IGNORED);
        CHECK_EQ_I(q(p->c.payment_id,
                     "SELECT count(*) FROM ledger_transactions t JOIN"
                     " ledger_entries e ON e.txn_id = t.id"
                     " WHERE t.payment_id = '%s' AND t.kind = 'refund'"
                     " AND ((e.direction = 'debit' AND e.account ="
                     "  'merchant_payable:tenant-w') OR (e.direction ="
                     "  'credit' AND e.account = 'customer_funds:tenant-w'))"),
                   2);
        CHECK_EQ_I(q(p->c.payment_id,
                     "SELECT count(*) FROM ledger_transactions WHERE"
                     " payment_id = '%s'"),
                   2);
        CHECK_EQ_I(q(p->c.payment_id,
                     "SELECT count(*) FROM payments WHERE payment_id = '%s'"
                     " AND status = 'succeeded' AND refunded_at IS NOT NULL"),
                   1);
        /* a refund of a payment still processing proves the charge */
        ev = event(GATEWAY_EVENT_CHARGE_REFUNDED, r->c.payment_id, "ch_rr", 950,
                   "VND");
        CHECK_EQ_I(apply("msg_rf4", &ev, &out), STORE_WEBHOOK_APPLIED);
        CHECK(strcmp(out.applied, "refunded") == 0);
        CHECK_EQ_I(q(r->c.payment_id,
                     "SELECT count(*) FROM payments WHERE payment_id = '%s'"
                     " AND status = 'succeeded' AND refunded_at IS NOT NULL"
                     " AND provider_charge_id = 'ch_rr' AND lease_epoch = 2"),
                   1);
        CHECK_EQ_I(q(r->c.payment_id,
                     "SELECT count(DISTINCT kind) FROM ledger_transactions"
                     " WHERE payment_id = '%s'"),
                   2);
        CHECK_EQ_I(q(r->c.payment_id,
                     "SELECT count(*) FROM outbox WHERE payment_id = '%s'"
                     " AND status = 'succeeded'"),
                   1);
        CHECK_EQ_I(settle(st, r, SETTLE_SUCCEEDED), SETTLE_FENCED);
        no_violations();
        pay_free(p);
        pay_free(r);
}

static void unknown_and_duplicate(void)
{
        struct pay *p           = new_payment(400);
        struct gateway_event ev = event(GATEWAY_EVENT_CHARGE_SUCCEEDED,
                                        "not-a-uuid", "ch_u", 400, "VND");
        struct store_webhook_out out;
        char before[1024], after[1024];

        CHECK_EQ_I(apply("msg_u1", &ev, &out), STORE_WEBHOOK_UNKNOWN_REFERENCE);
        CHECK(out.payment_id[0] == '\0');
        snprintf(ev.reference, sizeof(ev.reference),
                 "00000000-0000-4000-8000-000000000000");
        CHECK_EQ_I(apply("msg_u2", &ev, &out), STORE_WEBHOOK_UNKNOWN_REFERENCE);
        CHECK_EQ_I(apply("msg_u2", &ev, &out), STORE_WEBHOOK_DUPLICATE);
        CHECK_EQ_I(st_count(pg, "SELECT count(*) FROM webhook_events WHERE"
                                " result = 'unknown_reference'"
                                " AND payment_id IS NULL"),
                   2);
        /* a replayed id changes nothing, whatever its body says now */
        ev = event(GATEWAY_EVENT_CHARGE_SUCCEEDED, p->c.payment_id, "ch_d", 400,
                   "VND");
        CHECK_EQ_I(apply("msg_d1", &ev, &out), STORE_WEBHOOK_APPLIED);
        fingerprint(p->c.payment_id, before, sizeof(before));
        CHECK_EQ_I(apply("msg_d1", &ev, &out), STORE_WEBHOOK_DUPLICATE);
        ev.type = GATEWAY_EVENT_CHARGE_REFUNDED;
        CHECK_EQ_I(apply("msg_d1", &ev, &out), STORE_WEBHOOK_DUPLICATE);
        fingerprint(p->c.payment_id, after, sizeof(after));
        CHECK(strcmp(before, after) == 0);
        CHECK_EQ_I(st_count(pg, "SELECT count(*) FROM webhook_events WHERE"
                                " webhook_id = 'msg_d1' AND result = 'applied'"
                                " AND applied_status = 'succeeded'"),
                   1);
        no_violations();
        pay_free(p);
}

static pthread_barrier_t barrier;

struct racer {
        struct store *st;
        struct pay *p;
        const char *id; /* NULL: settle instead */
        struct gateway_event ev;
        struct store_webhook_out out;
        enum settle_outcome settled;
        int rc;
};

static void *race_thread(void *arg)
{
        struct racer *r = arg;

        pthread_barrier_wait(&barrier);
        if (r->id) {
                r->rc = apply_on(r->st, r->id, &r->ev, &r->out);
        } else {
                r->settled = settle(r->st, r->p, SETTLE_SUCCEEDED);
                r->rc      = STORE_OK;
        }
        return NULL;
}

static void race(struct racer *r)
{
        pthread_t th[2];

        for (int t = 0; t < 2; t++)
                pthread_create(&th[t], NULL, race_thread, &r[t]);
        for (int t = 0; t < 2; t++)
                pthread_join(th[t], NULL);
}

static void concurrent_same_id(void)
{
        struct racer r[2];

        memset(r, 0, sizeof(r));
        for (int t = 0; t < 2; t++)
                r[t].st = st_store();
        for (int i = 0; i < 20; i++) {
                struct pay *p = new_payment(500);
                char id[32];
                int applied = 0, dup = 0;

                snprintf(id, sizeof(id), "msg_cc%d", i);
                for (int t = 0; t < 2; t++) {
                        r[t].id = id;
                        r[t].ev = event(GATEWAY_EVENT_CHARGE_SUCCEEDED,
                                        p->c.payment_id, "ch_cc", 500, "VND");
                }
                race(r);
                for (int t = 0; t < 2; t++) {
                        CHECK_EQ_I(r[t].rc, STORE_OK);
                        applied += r[t].out.result == STORE_WEBHOOK_APPLIED;
                        dup += r[t].out.result == STORE_WEBHOOK_DUPLICATE;
                }
                CHECK_EQ_I(applied, 1);
                CHECK_EQ_I(dup, 1);
                CHECK_EQ_I(q(p->c.payment_id,
                             "SELECT count(*) FROM ledger_transactions WHERE"
                             " payment_id = '%s'"),
                           1);
                pay_free(p);
        }
        for (int t = 0; t < 2; t++)
                store_destroy(r[t].st);
        no_violations();
}

static void race_with_settle(void)
{
        struct racer r[2];
        int webhook_won = 0, settle_won = 0;

        memset(r, 0, sizeof(r));
        for (int t = 0; t < 2; t++)
                r[t].st = st_store();
        for (int i = 0; i < 30; i++) {
                struct pay *p = new_payment(600);
                char id[32];

                snprintf(id, sizeof(id), "msg_rs%d", i);
                r[0].id = id;
                r[0].ev = event(GATEWAY_EVENT_CHARGE_SUCCEEDED, p->c.payment_id,
                                "ch_test", 600, "VND");
                r[1].id = NULL;
                r[1].p  = p;
                race(r);
                CHECK_EQ_I(r[0].rc, STORE_OK);
                if (r[0].out.result == STORE_WEBHOOK_APPLIED) {
                        CHECK_EQ_I(r[1].settled, SETTLE_FENCED);
                        webhook_won++;
                } else {
                        CHECK_EQ_I(r[0].out.result, STORE_WEBHOOK_IGNORED);
                        CHECK_EQ_I(r[1].settled, SETTLE_OK);
                        settle_won++;
                }
                CHECK_EQ_I(q(p->c.payment_id,
                             "SELECT count(*) FROM ledger_transactions WHERE"
                             " payment_id = '%s'"),
                           1);
                CHECK_EQ_I(q(p->c.payment_id,
                             "SELECT count(*) FROM outbox WHERE"
                             " payment_id = '%s'"),
                           1);
                pay_free(p);
        }
        fprintf(stderr, "race: webhook won %d, settle won %d\n", webhook_won,
                settle_won);
        CHECK_EQ_I(webhook_won + settle_won, 30);
        for (int t = 0; t < 2; t++)
                store_destroy(r[t].st);
        no_violations();
}

static int setup(void)
{
        int rc = st_begin("store_webhook");

        if (rc)
                return rc;
        st = st_store();
        pg = st_pg();
        pthread_barrier_init(&barrier, NULL, 2);
        return 0;
}

static void teardown(void)
{
        pthread_barrier_destroy(&barrier);
        PQfinish(pg);
        store_destroy(st);
        st_end();
}

int main(int argc, char **argv)
{
        static const struct test_case cases[] = {
                { "processing_finished", processing_finished, NULL, NULL },
                { "review_resolved", review_resolved, NULL, NULL },
                { "final_same_outcome", final_same_outcome, NULL, NULL },
                { "contradictions", contradictions, NULL, NULL },
                { "refunds", refunds, NULL, NULL },
                { "unknown_and_duplicate", unknown_and_duplicate, NULL, NULL },
                { "concurrent_same_id", concurrent_same_id, NULL, NULL },
                { "race_with_settle", race_with_settle, NULL, NULL },
        };
        return st_suite_main("store_webhook", cases,
                             sizeof(cases) / sizeof(cases[0]), setup, teardown,
                             false, argc, argv);
}
