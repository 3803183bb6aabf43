/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The migration runner's migrations without a transaction
 * (MIGRATE_NO_TRANSACTION, store/migrate_plan.h), on a real PostgreSQL,
 * with lists of test migrations numbered 9001.. on top of the schema:
 *
 *  - an index built CONCURRENTLY stops no write: an INSERT with a 2 s
 *    lock_timeout goes through while the build runs (held at its end by
 *    an older snapshot; a transaction's CREATE INDEX would hold SHARE on
 *    the table until its COMMIT), and the index is valid at the end;
 *  - run again, nothing is applied;
 *  - an invalid index left by an interrupted build is dropped and built
 *    again, one already built is skipped;
 *  - a statement that is not a no-op when run again, or that takes a lock
 *    stopping reads or writes, is refused before anything runs.
 */
#include "storetest.h"

#include "cases.h"
#include "store/migrate.h"
#include "store/migrate_plan.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static PGconn *pg;
static char err[1024];

#define NT MIGRATE_NO_TRANSACTION "\n"
#define MIG(n, text)                                                           \
        {                                                                      \
                n, text, sizeof(text) - 1, 1                                   \
        }

static const struct migration_src list[] = {
        MIG("9001_big.sql",
            "CREATE TABLE big (id bigint PRIMARY KEY, v int NOT NULL);\n"
            "INSERT INTO big SELECT g, g % 1000 FROM generate_series(1,"
            " 300000) g;\n"),
        MIG("9002_big_v.sql",
            NT "-- the index the readers need\n"
               "CREATE INDEX CONCURRENTLY IF NOT EXISTS big_v ON big (v);\n"
               "COMMENT ON INDEX big_v IS 'built; concurrently';\n"),
        MIG("9003_big_v_id.sql",
            NT "CREATE INDEX CONCURRENTLY IF NOT EXISTS big_v_id ON big (v,"
               " id);\n"
               "CREATE INDEX CONCURRENTLY IF NOT EXISTS big_v ON big (v);\n"
               "ANALYZE big;\n"),
};

struct run {
        const struct migration_src *l;
        unsigned n;
        struct migrate_report rep;
        int rc;
        char err[1024];
};

static void *run_thread(void *p)
{
        struct run *r = p;

        r->rc = store_migrate_run_list(st_conninfo(), r->l, r->n, &r->rep,
                                       r->err, sizeof(r->err));
        return NULL;
}

static void no_transaction_index(void)
{
        struct run r = { .l = list, .n = 1 };
        pthread_t th;
        PGconn *w, *x;
        PGresult *res;
        bool seen = false, inserted = false;

        run_thread(&r);
        REQUIRE(r.rc == 0);
        CHECK_EQ_I(r.rep.applied, 1);
        /* the build, while a writer writes */
        r = (struct run){ .l = list, .n = 2 };
        w = st_pg();
        REQUIRE(st_exec(w, true, "SET lock_timeout = '2s'"));
        /* an old snapshot, which the build waits for at its end (within
         * migrate's lock_timeout), so that it is seen running */
        x = st_pg();
        REQUIRE(st_exec(x, true, "BEGIN ISOLATION LEVEL REPEATABLE READ"));
        REQUIRE(st_count(x, "SELECT count(*) FROM big WHERE id = 1") == 1);
        pthread_create(&th, NULL, run_thread, &r);
        for (int i = 0; i < 2000 && !seen; i++) {
                seen = st_count(pg, "SELECT count(*) FROM"
                                    " pg_stat_progress_create_index WHERE"
                                    " datname = current_database()") > 0;
                if (!seen)
                        usleep(1000);
        }
        CHECK(seen);
        /* an INSERT while the index is being built goes through */
        res      = PQexec(w, "INSERT INTO big VALUES (300001, 7)");
        inserted = PQresultStatus(res) == PGRES_COMMAND_OK;
        if (!inserted)
                fprintf(stderr, "insert: %s", PQresultErrorMessage(res));
        PQclear(res);
        CHECK(inserted);
        /* and the build had not ended: it waits for x's snapshot */
        CHECK(st_count(pg, "SELECT count(*) FROM"
                           " pg_stat_progress_create_index WHERE datname ="
                           " current_database()") == 1);
        REQUIRE(st_exec(x, true, "COMMIT"));
        pthread_join(th, NULL);
        if (r.rc)
                fprintf(stderr, "migrate: %s\n", r.err);
        CHECK_EQ_I(r.rc, 0);
        CHECK_EQ_I(r.rep.applied, 1);
        CHECK_EQ_I(r.rep.present, 1);
        CHECK_EQ_I(st_count(pg, "SELECT count(*) FROM pg_index WHERE"
                                " indexrelid = 'big_v'::regclass AND"
                                " indisvalid"),
                   1);
        CHECK_EQ_I(st_count(pg, "SELECT count(*) FROM schema_migrations"
                                " WHERE version = 9002"),
                   1);
        PQfinish(w);
        PQfinish(x);
}

static void rerun_noop(void)
{
        struct run r = { .l = list, .n = 2 };

        run_thread(&r);
        CHECK_EQ_I(r.rc, 0);
        CHECK_EQ_I(r.rep.applied, 0);
        CHECK_EQ_I(r.rep.present, 2);
}

static void invalid_index_rebuilt(void)
{
        struct run r = { .l = list, .n = 3 };

        /* what an interrupted CREATE INDEX CONCURRENTLY leaves */
        REQUIRE(st_exec(pg, true, "CREATE INDEX big_v_id ON big (v)"));
        REQUIRE(st_exec(pg, true,
                        "UPDATE pg_index SET indisvalid = false WHERE"
                        " indexrelid = 'big_v_id'::regclass"));
        run_thread(&r);
        if (r.rc)
                fprintf(stderr, "migrate: %s\n", r.err);
        CHECK_EQ_I(r.rc, 0);
        CHECK_EQ_I(r.rep.applied, 1);
        /* built again, with the migration's columns */
        CHECK_EQ_I(st_count(pg, "SELECT count(*) FROM pg_index WHERE"
                                " indexrelid = 'big_v_id'::regclass AND"
                                " indisvalid AND indnatts = 2"),
                   1);
        /* big_v, built by 9002, was skipped: still one index of that name */
        CHECK_EQ_I(st_count(pg, "SELECT count(*) FROM pg_indexes WHERE"
                                " indexname = 'big_v'"),
                   1);
}

static void refused(void)
{
        static const struct migration_src bad[][1] = {
                { MIG("9004_bad.sql",
                      NT "CREATE INDEX CONCURRENTLY IF NOT EXISTS ok_i ON big"
                         " (id, v);\n"
                         "CREATE TABLE nope (a int);\n") },
                { MIG("9004_bad.sql",
                      NT "CREATE INDEX CONCURRENTLY big_v2 ON big (v);\n") },
                { MIG("9004_bad.sql",
                      NT "CREATE INDEX IF NOT EXISTS big_v3 ON big (v);\n") },
                { MIG("9004_bad.sql",
                      NT "UPDATE big SET v = 0 WHERE id = 1;\n") },
        };
        static const char *const why[] = { "line 3: CREATE TABLE nope",
                                           "line 2: CREATE INDEX CONCURRENTLY",
                                           "line 2: CREATE INDEX big",
                                           "line 2: UPDATE big" };

        for (size_t i = 0; i < sizeof(bad) / sizeof(*bad); i++) {
                struct migration_src l[4] = { list[0], list[1], list[2],
                                              bad[i][0] };
                struct run r              = { .l = l, .n = 4 };

                run_thread(&r);
                printf("refused: %s\n", r.err);
                CHECK_EQ_I(r.rc, -1);
                CHECK(strstr(r.err, why[i]) != NULL);
                CHECK(strstr(r.err, "9004_bad.sql") != NULL);
        }
        /* nothing of it ran */
        CHECK_EQ_I(st_count(pg, "SELECT count(*) FROM pg_class WHERE relname"
                                " IN ('nope', 'ok_i', 'big_v2', 'big_v3')"),
                   0);
        CHECK_EQ_I(st_count(pg, "SELECT count(*) FROM schema_migrations"
                                " WHERE version = 9004"),
                   0);
}

static int setup(void)
{
        int rc = st_begin("store_migrate");

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
                { "no_transaction_index", no_transaction_index, NULL, NULL },
                { "rerun_noop", rerun_noop, NULL, NULL },
                { "invalid_index_rebuilt", invalid_index_rebuilt, NULL, NULL },
                { "refused", refused, NULL, NULL },
        };
        (void)err;
        return st_suite_main("store_migrate", cases,
                             sizeof(cases) / sizeof(cases[0]), setup, teardown,
                             true, argc, argv);
}
