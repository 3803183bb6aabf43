/* SPDX-License-Identifier: Apache-2.0 */
/*
 * store_throughput: claim + settle in batches of 100, printed as intents/s
 * (one connection, then two in parallel: the cases one_connection and
 * two_connections). Measures, never asserts a speed: it fails only if a
 * call fails or an invariant breaks.
 */
#include "cases.h"
#include "storetest.h"

#include "util/timeutil.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#define BATCH   100
#define BATCHES 100

/* time spent in claim / settle calls by the single-connection run (us) */
static int64_t claim_us, settle_us;

struct runner {
        int id;
        int rc;
        char err[512];
};

static int run_batches(int id, char *err, size_t errsz)
{
        struct store *st        = st_store();
        struct st_intent *in    = calloc(BATCH, sizeof(*in));
        struct claim_item *c    = calloc(BATCH, sizeof(*c));
        struct settle_item *s   = calloc(BATCH, sizeof(*s));
        char(*ev)[UUID_STR_LEN] = calloc(BATCH, sizeof(*ev));
        char(*buf)[512]         = calloc(BATCH, sizeof(*buf));
        int64_t t;
        int rc = -1;

        if (!in || !c || !s || !ev || !buf)
                goto done;
        for (int b = 0; b < BATCHES; b++) {
                for (int i = 0; i < BATCH; i++) {
                        char key[64];
                        snprintf(key, sizeof(key), "tp-%d-%d-%d", id, b, i);
                        st_intent(&in[i], "tenant-tp", key, 1000, 0);
                        st_item(&c[i], &in[i]);
                }
                t = time_mono_us();
                if (store_claim_batch(st, c, BATCH, "owner", ST_LEASE_MS,
                                      ST_SECRET, ST_SECRET_LEN, err,
                                      errsz) != STORE_OK)
                        goto done;
                if (id == 0)
                        claim_us += time_mono_us() - t;
                for (int i = 0; i < BATCH; i++)
                        st_settle_item(&s[i], &c[i], SETTLE_SUCCEEDED, ev[i],
                                       buf[i], sizeof(buf[i]));
                t = time_mono_us();
                if (store_settle_batch(st, s, BATCH, err, errsz) != STORE_OK)
                        goto done;
                if (id == 0)
                        settle_us += time_mono_us() - t;
                for (int i = 0; i < BATCH; i++) {
                        if (c[i].outcome != CLAIM_NEW ||
                            s[i].outcome != SETTLE_OK) {
                                snprintf(err, errsz, "unexpected outcome");
                                goto done;
                        }
                        store_claim_item_clear(&c[i]);
                }
        }
        rc = 0;
done:
        free(in);
        free(c);
        free(s);
        free(ev);
        free(buf);
        store_destroy(st);
        return rc;
}

static void *runner_thread(void *arg)
{
        struct runner *r = arg;

        r->rc = run_batches(r->id, r->err, sizeof(r->err));
        return NULL;
}

static PGconn *pg;

/* Postings so far: each case counts its own. */
static long long postings(void)
{
        return st_count(pg, "SELECT count(*) FROM ledger_transactions");
}

static void one_connection(void)
{
        long long before = postings();
        int64_t t0, t1;
        char err[512];
        int rc;

        t0 = time_mono_us();
        rc = run_batches(0, err, sizeof(err));
        t1 = time_mono_us();
        if (rc)
                fprintf(stderr, "run: %s\n", err);
        CHECK_EQ_I(rc, 0);
        printf("claim+settle, batches of %d, 1 connection: %d intents in "
               "%.2f s = %.0f intents/s\n",
               BATCH, BATCH * BATCHES, (double)(t1 - t0) / 1e6,
               (double)BATCH * BATCHES * 1e6 / (double)(t1 - t0));

        printf("  per batch of %d: claim %.1f ms, settle %.1f ms\n", BATCH,
               (double)claim_us / 1e3 / BATCHES,
               (double)settle_us / 1e3 / BATCHES);
        CHECK_EQ_I(postings() - before, BATCH * BATCHES);
        CHECK_EQ_I(st_count(pg, "SELECT count(*) FROM invariant_violations"),
                   0);
}

static void two_connections(void)
{
        long long before = postings();
        struct runner r[2];
        pthread_t th[2];
        int64_t t0, t1;

        t0 = time_mono_us();
        for (int i = 0; i < 2; i++) {
                r[i].id = i + 1;
                pthread_create(&th[i], NULL, runner_thread, &r[i]);
        }
        for (int i = 0; i < 2; i++) {
                pthread_join(th[i], NULL);
                if (r[i].rc)
                        fprintf(stderr, "run %d: %s\n", i, r[i].err);
                CHECK_EQ_I(r[i].rc, 0);
        }
        t1 = time_mono_us();
        printf("claim+settle, batches of %d, 2 connections: %d intents in "
               "%.2f s = %.0f intents/s\n",
               BATCH, 2 * BATCH * BATCHES, (double)(t1 - t0) / 1e6,
               2.0 * BATCH * BATCHES * 1e6 / (double)(t1 - t0));
        CHECK_EQ_I(postings() - before, 2 * BATCH * BATCHES);
        CHECK_EQ_I(st_count(pg, "SELECT count(*) FROM invariant_violations"),
                   0);
}

static int setup(void)
{
        int rc = st_begin("store_tp");

        if (rc)
                return rc;
        pg = st_pg();
        return 0;
}

static void teardown(void)
{
        PQfinish(pg);
        st_end();
}

int main(int argc, char **argv)
{
        static const struct test_case cases[] = {
                { "one_connection", one_connection, NULL, NULL },
                { "two_connections", two_connections, NULL, NULL },
        };
        return st_suite_main("store_throughput", cases,
                             sizeof(cases) / sizeof(cases[0]), setup, teardown,
                             false, argc, argv);
}
