/* SPDX-License-Identifier: Apache-2.0 */
/*
 * store_concurrency: several connections claiming the same keys at the
 * same moment (released through a barrier). Exactly one CLAIM_NEW per
 * key, never an error; the same event id claimed twice at once answered
 * once; a forced deadlock retried by the store without the caller seeing
 * it; a copy claimed while the first copy's settle commits. Each case on its
 * own keys ends with the invariant view empty; one database per run
 * (store_concurrency_<case> runs one case).
 */
#include "cases.h"
#include "storetest.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define THREADS 4
#define NKEYS   100
#define ROUNDS  10

static pthread_barrier_t barrier;

struct worker {
        int id;
        int round;
        struct store *st;
        struct st_intent in[NKEYS];
        struct claim_item c[NKEYS];
        int key_of[NKEYS]; /* c[i] is key key_of[i] */
        int rc;
        char err[512];
};

static struct worker workers[THREADS];
/* the cases' own connection to the test database */
static PGconn *db;

static void *claim_thread(void *arg)
{
        struct worker *w = arg;

        pthread_barrier_wait(&barrier);
        w->rc =
            store_claim_batch(w->st, w->c, NKEYS, "owner", ST_LEASE_MS,
                              ST_SECRET, ST_SECRET_LEN, w->err, sizeof(w->err));
        return NULL;
}

/* Thread t's batch: every key, in its own shuffled order; thread 3 sends
 * another request hash for the even keys. */
static void build_batch(struct worker *w, int round)
{
        unsigned int seed = (unsigned int)(round * 131 + w->id * 7 + 1);

        for (int i = 0; i < NKEYS; i++)
                w->key_of[i] = i;
        for (int i = NKEYS - 1; i > 0; i--) {
                int j        = rand_r(&seed) % (i + 1);
                int t        = w->key_of[i];
                w->key_of[i] = w->key_of[j];
                w->key_of[j] = t;
        }
        for (int i = 0; i < NKEYS; i++) {
                char key[64];
                int k       = w->key_of[i];
                int variant = (w->id == 3 && k % 2 == 0) ? 1 : 0;

                snprintf(key, sizeof(key), "r%d-key-%d", round, k);
                st_intent(&w->in[i], "tenant-c", key, 100 + k, variant);
                st_item(&w->c[i], &w->in[i]);
        }
}

static void test_same_keys(PGconn *pg)
{
        pthread_t th[THREADS];

        for (int round = 0; round < ROUNDS; round++) {
                int new_by[NKEYS];
                int hash_of_winner[NKEYS];

                for (int t = 0; t < THREADS; t++)
                        build_batch(&workers[t], round);
                for (int t = 0; t < THREADS; t++)
                        pthread_create(&th[t], NULL, claim_thread, &workers[t]);
                for (int t = 0; t < THREADS; t++)
                        pthread_join(th[t], NULL);
                for (int k = 0; k < NKEYS; k++)
                        new_by[k] = 0;
                for (int t = 0; t < THREADS; t++) {
                        struct worker *w = &workers[t];

                        if (w->rc != STORE_OK)
                                fprintf(stderr, "thread %d: %s\n", t, w->err);
                        CHECK_EQ_I(w->rc, STORE_OK);
                        for (int i = 0; i < NKEYS; i++) {
                                int k = w->key_of[i];
                                if (w->c[i].outcome == CLAIM_NEW) {
                                        new_by[k]++;
                                        hash_of_winner[k] = w->in[i].variant;
                                }
                        }
                }
                for (int k = 0; k < NKEYS; k++)
                        CHECK_EQ_I(new_by[k], 1);
                /* the losers: in progress with the winner's hash, else
                 * conflict */
                for (int t = 0; t < THREADS; t++) {
                        struct worker *w = &workers[t];
                        for (int i = 0; i < NKEYS; i++) {
                                int k = w->key_of[i];
                                if (w->c[i].outcome == CLAIM_NEW)
                                        continue;
                                CHECK_EQ_I(w->c[i].outcome,
                                           w->in[i].variant == hash_of_winner[k]
                                               ? CLAIM_IN_PROGRESS
                                               : CLAIM_CONFLICT);
                        }
                        for (int i = 0; i < NKEYS; i++)
                                store_claim_item_clear(&w->c[i]);
                }
                CHECK_EQ_I(st_count(pg,
                                    "SELECT count(*) FROM payments WHERE "
                                    "idem_key LIKE 'r%d-key-%%'",
                                    round),
                           NKEYS);
        }
}

/* One event delivered to two consumers at once: answered once. */
static void test_same_event(PGconn *pg)
{
        pthread_t th[2];
        struct st_intent in;
        int nnew = 0, ndup = 0;

        st_intent(&in, "tenant-c", "same-event", 5, 0);
        for (int t = 0; t < 2; t++) {
                workers[t].in[0] = in;
                st_item(&workers[t].c[0], &workers[t].in[0]);
        }
        /* claim_thread claims NKEYS items: pad with keys of their own */
        for (int t = 0; t < 2; t++)
                for (int i = 1; i < NKEYS; i++) {
                        char key[64];
                        snprintf(key, sizeof(key), "same-event-pad-%d-%d", t,
                                 i);
                        st_intent(&workers[t].in[i], "tenant-c", key, 5, 0);
                        st_item(&workers[t].c[i], &workers[t].in[i]);
                }
        pthread_barrier_destroy(&barrier);
        pthread_barrier_init(&barrier, NULL, 2);
        for (int t = 0; t < 2; t++)
                pthread_create(&th[t], NULL, claim_thread, &workers[t]);
        for (int t = 0; t < 2; t++)
                pthread_join(th[t], NULL);
        for (int t = 0; t < 2; t++) {
                if (workers[t].rc != STORE_OK)
                        fprintf(stderr, "thread %d: %s\n", t, workers[t].err);
                CHECK_EQ_I(workers[t].rc, STORE_OK);
                if (workers[t].c[0].outcome == CLAIM_NEW)
                        nnew++;
                else if (workers[t].c[0].outcome == CLAIM_DUP_EVENT)
                        ndup++;
                for (int i = 0; i < NKEYS; i++)
                        store_claim_item_clear(&workers[t].c[i]);
        }
        CHECK_EQ_I(nnew, 1);
        CHECK_EQ_I(ndup, 1);
        /* recorded once: as its payment's first event (0017) */
        CHECK_EQ_I(st_count(pg,
                            "SELECT count(*) FROM payments WHERE "
                            "intent_event_id = '%s'",
                            in.event_id),
                   1);
        CHECK_EQ_I(st_count(pg,
                            "SELECT count(*) FROM inbox WHERE event_id "
                            "= '%s'",
                            in.event_id),
                   0);
        pthread_barrier_destroy(&barrier);
        pthread_barrier_init(&barrier, NULL, THREADS);
}

/*
 * A deadlock the store must absorb: another session has inserted key B's
 * payment and not committed; the store's claim of (A, B) inserts A
 * (keys go in order) and waits for B; the other session then inserts A
 * and waits for the claim. The store's backend detects the deadlock (the
 * other session's deadlock_timeout is long), its statement is rolled
 * back, and the store runs it again once the other session committed:
 * both keys are then copies of the other session's (same request hash).
 */
struct dl_arg {
        struct store *st;
        struct claim_item c[2];
        size_t n; /* items of c claimed by claim_arg_thread */
        int rc;
        char err[512];
};

/* a->n items' claim, on a thread (it waits for a lock). */
static void *claim_arg_thread(void *arg)
{
        struct dl_arg *a = arg;

        a->rc =
            store_claim_batch(a->st, a->c, a->n, "owner", ST_LEASE_MS,
                              ST_SECRET, ST_SECRET_LEN, a->err, sizeof(a->err));
        return NULL;
}

/*
 * Waits (up to 5 s) until a claim waits for a lock that this session (pg)
 * holds; false if it never does (the case would test nothing). Scoped to
 * what the case started: the waiter is a backend of this test's database
 * whose blocker is this very session (pg_blocking_pids), running a
 * statement on payments (the claim). The integration tests share one
 * server, so a probe on any backend that waits for any lock saw other
 * tests' claims and let a case go on before its own claim had started.
 */
static bool wait_for_claim_lock(PGconn *pg)
{
        return st_wait_blocked_by(pg, "%payments%");
}

/*
 * A decoy: another session of this database holds a key's payment row and
 * a third waits for it with a statement on payments, as another test's
 * claim would on the shared server. wait_for_claim_lock must not take
 * that wait for the case's own; with the decoy in place first, a probe
 * that counts any waiting backend returns before the case's claim has
 * started (and the case then fails), so the decoy keeps the probe honest.
 * decoy_end commits and collects the waiter.
 */
struct decoy {
        PGconn *holder, *waiter;
};

static void decoy_start(struct decoy *d)
{
        struct st_intent in;
        struct claim_item c;
        struct store *st = st_store();
        char err[512];

        st_intent(&in, "tenant-decoy", "decoy-row", 7, 0);
        st_item(&c, &in);
        REQUIRE(store_claim_batch(st, &c, 1, "owner", ST_LEASE_MS, ST_SECRET,
                                  ST_SECRET_LEN, err, sizeof(err)) == STORE_OK);
        store_claim_item_clear(&c);
        store_destroy(st);
        d->holder = st_pg();
        d->waiter = st_pg();
        REQUIRE(st_exec(d->holder, true, "BEGIN"));
        REQUIRE(st_exec(d->holder, true,
                        "SELECT 1 FROM payments WHERE tenant_id = "
                        "'tenant-decoy' AND idem_key = 'decoy-row' FOR "
                        "UPDATE"));
        REQUIRE(PQsendQuery(d->waiter,
                            "SELECT 1 FROM payments WHERE tenant_id "
                            "= 'tenant-decoy' AND idem_key = 'decoy-row' FOR "
                            "UPDATE") == 1);
        /* until the decoy really waits, it proves nothing */
        REQUIRE(st_wait_blocked_by(d->holder, NULL));
}

static void decoy_end(struct decoy *d)
{
        PGresult *res;

        CHECK(st_exec(d->holder, true, "COMMIT"));
        while ((res = PQgetResult(d->waiter)) != NULL) {
                CHECK(PQresultStatus(res) == PGRES_TUPLES_OK);
                PQclear(res);
        }
        PQfinish(d->waiter);
        PQfinish(d->holder);
}

/* Inserts, in pg's open transaction, a payment of (tenant-d, key) with
 * the request hash of in, as another claim would. */
static bool insert_key(PGconn *pg, const struct st_intent *in,
                       const struct claim_item *c)
{
        char hex[2 * CRYPTO_SHA256_LEN + 1];

        crypto_hex(c->request_hash, CRYPTO_SHA256_LEN, hex);
        return st_exec(pg, true,
                       "INSERT INTO payments (payment_id, tenant_id, idem_key,"
                       " request_hash, order_id, customer_id, amount,"
                       " currency, payment_method, provider_key, lease_owner,"
                       " lease_epoch, lease_expires_at, intent_event_id,"
                       " expires_at) VALUES (gen_random_uuid(), 'tenant-d',"
                       " '%s', decode('%s', 'hex'), 'o', 'c', %lld, 'VND',"
                       " 'pm', md5(random()::text), 'other', 1, now() +"
                       " interval '1 minute', gen_random_uuid()::text, now()"
                       " + interval '7 days')",
                       in->idem_key, hex, (long long)in->amount);
}

static void test_deadlock_retry(PGconn *pg)
{
        struct store *st = st_store();
        struct st_intent again[2];
        struct dl_arg a;
        struct decoy decoy;
        struct store_stats stats;
        pthread_t th;

        memset(&a, 0, sizeof(a));
        a.st = st;
        st_intent(&again[0], "tenant-d", "dl-a", 10, 0);
        st_intent(&again[1], "tenant-d", "dl-b", 10, 0);
        st_item(&a.c[0], &again[0]);
        st_item(&a.c[1], &again[1]);
        a.n = 2;

        REQUIRE(st_exec(pg, true, "BEGIN"));
        REQUIRE(st_exec(pg, true, "SET LOCAL deadlock_timeout = '60s'"));
        REQUIRE(insert_key(pg, &again[1], &a.c[1]));

        decoy_start(&decoy);
        pthread_create(&th, NULL, claim_arg_thread, &a);
        /* wait until the claim waits for our insert of dl-b */
        CHECK(wait_for_claim_lock(pg));
        /* now insert dl-a, inserted by the claim: a deadlock */
        CHECK(insert_key(pg, &again[0], &a.c[0]));
        REQUIRE(st_exec(pg, true, "COMMIT"));
        pthread_join(th, NULL);
        decoy_end(&decoy);
        if (a.rc != STORE_OK)
                fprintf(stderr, "deadlock claim: %s\n", a.err);
        CHECK_EQ_I(a.rc, STORE_OK);
        CHECK_EQ_I(a.c[0].outcome, CLAIM_IN_PROGRESS);
        CHECK_EQ_I(a.c[1].outcome, CLAIM_IN_PROGRESS);
        store_get_stats(st, &stats);
        CHECK(stats.retries >= 1);
        printf("deadlock retry: %llu retries, %llu statements\n",
               (unsigned long long)stats.retries,
               (unsigned long long)stats.statements);
        for (int i = 0; i < 2; i++)
                store_claim_item_clear(&a.c[i]);
        store_destroy(st);
}

/*
 * A copy claimed while the first copy's settle commits: the claim's
 * snapshot is taken before the commit, its insert of the key's payment
 * waits for the settle's row lock and then finds the key (DO NOTHING),
 * which it reads at its snapshot: still processing, state and outcome in
 * one row (0017). The copy must be in_progress (the result that settle
 * committed answers it), never a replay with the payment's outcome
 * missing. A copy after that is a replay with the payment's outcome.
 */
static void test_settle_after_snapshot(PGconn *pg)
{
        struct store *st = st_store();
        struct st_intent in, copy, later;
        struct claim_item c;
        struct dl_arg a;
        struct decoy decoy;
        pthread_t th;
        char err[512];

        st_intent(&in, "tenant-s", "snap-a", 10, 0);
        st_item(&c, &in);
        REQUIRE(store_claim_batch(st, &c, 1, "owner", ST_LEASE_MS, ST_SECRET,
                                  ST_SECRET_LEN, err, sizeof(err)) == STORE_OK);
        REQUIRE(c.outcome == CLAIM_NEW);

        /* the first copy's settle (a decline: no ledger), not committed */
        REQUIRE(st_exec(pg, true, "BEGIN"));
        REQUIRE(st_exec(pg, true,
                        "WITH u AS (UPDATE payments SET status = 'failed',"
                        " error_code = 'card_declined', error_message ="
                        " 'declined', lease_owner = NULL, lease_expires_at ="
                        " NULL, finished_at = now() WHERE payment_id = '%s'"
                        " RETURNING *)"
                        " INSERT INTO outbox (event_id, message_key,"
                        " tenant_id, idem_key, payment_id, intent_event_id,"
                        " status, replayed, payload) SELECT"
                        " gen_random_uuid(), tenant_id || '/' || idem_key,"
                        " tenant_id, idem_key, payment_id, '%s', 'failed',"
                        " false, '{}' FROM u",
                        c.payment_id, in.event_id));

        memset(&a, 0, sizeof(a));
        a.st = st;
        st_intent(&copy, "tenant-s", "snap-a", 10, 0); /* new event id */
        st_item(&a.c[0], &copy);
        a.n = 1;
        decoy_start(&decoy);
        pthread_create(&th, NULL, claim_arg_thread, &a);
        CHECK(wait_for_claim_lock(pg));
        REQUIRE(st_exec(pg, true, "COMMIT"));
        pthread_join(th, NULL);
        decoy_end(&decoy);
        CHECK_EQ_I(a.rc, STORE_OK);
        CHECK_EQ_I(a.c[0].outcome, CLAIM_IN_PROGRESS);

        st_intent(&later, "tenant-s", "snap-a", 10, 0);
        st_item(&a.c[1], &later);
        REQUIRE(store_claim_batch(st, &a.c[1], 1, "owner", ST_LEASE_MS,
                                  ST_SECRET, ST_SECRET_LEN, err,
                                  sizeof(err)) == STORE_OK);
        CHECK_EQ_I(a.c[1].outcome, CLAIM_REPLAY);
        CHECK(strcmp(a.c[1].stored.status, "failed") == 0);
        CHECK(a.c[1].stored.error_code &&
              strcmp(a.c[1].stored.error_code, "card_declined") == 0);
        CHECK(a.c[1].stored.error_message &&
              strcmp(a.c[1].stored.error_message, "declined") == 0);
        store_claim_item_clear(&c);
        for (int i = 0; i < 2; i++)
                store_claim_item_clear(&a.c[i]);
        store_destroy(st);
}

static void no_violations(void)
{
        CHECK_EQ_I(st_count(db, "SELECT count(*) FROM invariant_violations"),
                   0);
}

static void same_keys(void)
{
        test_same_keys(db);
        no_violations();
}

static void same_event(void)
{
        test_same_event(db);
        no_violations();
}

static void deadlock_retry(void)
{
        test_deadlock_retry(db);
        no_violations();
}

static void settle_after_snapshot(void)
{
        test_settle_after_snapshot(db);
        no_violations();
}

static int setup(void)
{
        int rc = st_begin("store_conc");

        if (rc)
                return rc;
        db = st_pg();
        pthread_barrier_init(&barrier, NULL, THREADS);
        for (int t = 0; t < THREADS; t++) {
                workers[t].id = t;
                workers[t].st = st_store();
        }
        return 0;
}

static void teardown(void)
{
        for (int t = 0; t < THREADS; t++)
                store_destroy(workers[t].st);
        pthread_barrier_destroy(&barrier);
        PQfinish(db);
        st_end();
}

int main(int argc, char **argv)
{
        static const struct test_case cases[] = {
                { "same_keys", same_keys, NULL, NULL },
                { "same_event", same_event, NULL, NULL },
                { "deadlock_retry", deadlock_retry, NULL, NULL },
                { "settle_after_snapshot", settle_after_snapshot, NULL, NULL },
        };
        return st_suite_main("store_concurrency", cases,
                             sizeof(cases) / sizeof(cases[0]), setup, teardown,
                             false, argc, argv);
}
