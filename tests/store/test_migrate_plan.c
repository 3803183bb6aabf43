/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Unit tests of store/migrate_plan: the steps and locks read from a
 * migration's text. A hand-written migration that holds every form the
 * reader knows, and the traps around them (a ';' in a comment, a string,
 * a quoted identifier and a dollar-quoted body; nested comments; FROM in
 * extract()), each step checked against the lock PostgreSQL's manual
 * ("Explicit Locking", "ALTER TABLE") gives. Then every migration of sql/
 * as the binary carries it: no statement it does not understand but the
 * dynamic SQL of DO blocks, the big ones' locks as they are, and the
 * line numbers those of the files.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "store/migrate.h"
#include "store/migrate_plan.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char sample[] =
    "-- a comment; with a semicolon\n"               /* 1 */
    "/* nested /* comment; */ still; */\n"           /* 2 */
    "CREATE TABLE IF NOT EXISTS fresh (id bigint,\n" /* 3 */
    "  p uuid REFERENCES payments (payment_id), note text DEFAULT 'a;b');\n"
    "CREATE INDEX CONCURRENTLY IF NOT EXISTS big_x ON ONLY big USING brin "
    "(x);\n"
    "CREATE UNIQUE INDEX ON big (y) WHERE z;\n"                       /* 6 */
    "ALTER TABLE big ADD COLUMN c int;\n"                             /* 7 */
    "ALTER TABLE big ADD CONSTRAINT c_pos CHECK (c > 0) NOT VALID;\n" /* 8 */
    "ALTER TABLE big VALIDATE CONSTRAINT c_pos;\n"                    /* 9 */
    "ALTER TABLE IF EXISTS ONLY big ALTER COLUMN c SET NOT NULL,\n"   /* 10 */
    "  ADD COLUMN d text;\n"
    "ALTER TABLE big ALTER COLUMN c DROP NOT NULL;\n" /* 12 */
    "ALTER TABLE big ADD FOREIGN KEY (c) REFERENCES other (id) NOT VALID;\n"
    "UPDATE big b SET x = extract(epoch FROM b.t)\n" /* 14 */
    "  FROM other o WHERE o.id = b.c;\n"
    "DELETE FROM ONLY big USING other WHERE big.c = other.id;\n" /* 16 */
    "WITH gone AS (DELETE FROM queue RETURNING *)\n"             /* 17 */
    "INSERT INTO archive SELECT * FROM gone\n"
    "  ON CONFLICT (id) DO UPDATE SET n = 1;\n"
    "LOCK TABLE big IN SHARE ROW EXCLUSIVE MODE;\n"         /* 20 */
    "LOCK other;\n"                                         /* 21 */
    "DROP TABLE IF EXISTS old_a, \"Old;B\";\n"              /* 22 */
    "DROP INDEX CONCURRENTLY big_x;\n"                      /* 23 */
    "DROP TRIGGER IF EXISTS trg ON big;\n"                  /* 24 */
    "CREATE OR REPLACE VIEW v AS SELECT 1 FROM big;\n"      /* 25 */
    "CREATE VIEW w AS SELECT 2;\n"                          /* 26 */
    "COMMENT ON TABLE big IS 'x; y';\n"                     /* 27 */
    "CREATE FUNCTION f() RETURNS int LANGUAGE sql AS $f$\n" /* 28 */
    "  SELECT 1; DROP TABLE never_seen;\n"
    "$f$;\n"
    "DO $body$\n" /* 31 */
    "DECLARE n int;\n"
    "        m text := 'a;b';\n"
    "BEGIN\n"
    "        SELECT count(*) INTO n FROM big;\n" /* 35 */
    "        IF n > 0 THEN RAISE EXCEPTION 'no; never'; END IF;\n"
    "        EXECUTE 'DROP TABLE x';\n" /* 37 */
    "        n := 2;\n"
    "        IF n > 1 THEN DROP VIEW v; END IF;\n" /* 39 */
    "END\n"
    "$body$;\n"
    "VACUUM big;\n"                                        /* 42 */
    "SELECT E'it''s; \\' ok' FROM other;\n"                /* 43 */
    "CREATE TRIGGER t2 AFTER INSERT ON big FOR EACH ROW\n" /* 44 */
    "  EXECUTE FUNCTION f();\n"
    "CREATE OR REPLACE FUNCTION f() RETURNS int\n" /* 46 */
    "  LANGUAGE plpgsql AS $$ BEGIN RETURN 2; END $$;\n";

struct want {
        const char *what, *target;
        enum migrate_lock lock;
        bool creates, reads_all, in_do, unknown;
        unsigned line;
};

#define AE MIGRATE_LOCK_ACCESS_EXCLUSIVE
#define NO MIGRATE_LOCK_NONE

static const struct want want[] = {
        { "CREATE TABLE", "fresh", NO, true, false, false, false, 3 },
        { "FOREIGN KEY", "payments", MIGRATE_LOCK_SHARE_ROW_EXCLUSIVE, false,
          false, false, false, 3 },
        { "CREATE INDEX CONCURRENTLY", "big",
          MIGRATE_LOCK_SHARE_UPDATE_EXCLUSIVE, false, true, false, false, 5 },
        { "CREATE INDEX", "big", MIGRATE_LOCK_SHARE, false, true, false, false,
          6 },
        { "ALTER TABLE", "big", AE, false, false, false, false, 7 },
        { "ALTER TABLE", "big", AE, false, false, false, false, 8 },
        { "ALTER TABLE", "big", MIGRATE_LOCK_SHARE_UPDATE_EXCLUSIVE, false,
          true, false, false, 9 },
        { "ALTER TABLE", "big", AE, false, true, false, false, 10 },
        { "ALTER TABLE", "big", AE, false, false, false, false, 12 },
        { "ALTER TABLE", "big", MIGRATE_LOCK_SHARE_ROW_EXCLUSIVE, false, false,
          false, false, 13 },
        { "FOREIGN KEY", "other", MIGRATE_LOCK_SHARE_ROW_EXCLUSIVE, false,
          false, false, false, 13 },
        { "UPDATE", "big", MIGRATE_LOCK_ROW_EXCLUSIVE, false, true, false,
          false, 14 },
        { "reads", "other", MIGRATE_LOCK_ACCESS_SHARE, false, true, false,
          false, 14 },
        { "DELETE", "big", MIGRATE_LOCK_ROW_EXCLUSIVE, false, true, false,
          false, 16 },
        { "reads", "other", MIGRATE_LOCK_ACCESS_SHARE, false, true, false,
          false, 16 },
        { "DELETE", "queue", MIGRATE_LOCK_ROW_EXCLUSIVE, false, true, false,
          false, 17 },
        { "INSERT", "archive", MIGRATE_LOCK_ROW_EXCLUSIVE, false, false, false,
          false, 17 },
        { "reads", "gone", MIGRATE_LOCK_ACCESS_SHARE, false, true, false, false,
          17 },
        { "LOCK", "big", MIGRATE_LOCK_SHARE_ROW_EXCLUSIVE, false, false, false,
          false, 20 },
        { "LOCK", "other", AE, false, false, false, false, 21 },
        { "DROP TABLE", "old_a", AE, false, false, false, false, 22 },
        { "DROP TABLE", "Old;B", AE, false, false, false, false, 22 },
        { "DROP INDEX", "big_x", MIGRATE_LOCK_SHARE_UPDATE_EXCLUSIVE, false,
          false, false, false, 23 },
        { "DROP TRIGGER", "big", AE, false, false, false, false, 24 },
        { "CREATE VIEW", "v", AE, false, false, false, false, 25 },
        { "CREATE VIEW", "w", NO, true, false, false, false, 26 },
        { "COMMENT", "", NO, false, false, false, false, 27 },
        { "CREATE FUNCTION", "f", NO, true, false, false, false, 28 },
        { "DO", "", NO, false, false, false, false, 31 },
        { "reads", "big", MIGRATE_LOCK_ACCESS_SHARE, false, true, true, false,
          35 },
        { "EXECUTE", "", NO, false, false, true, true, 37 },
        { "DROP VIEW", "v", AE, false, false, true, false, 39 },
        { "VACUUM", "", NO, false, false, false, true, 42 },
        { "reads", "other", MIGRATE_LOCK_ACCESS_SHARE, false, true, false,
          false, 43 },
        { "CREATE TRIGGER", "big", MIGRATE_LOCK_SHARE_ROW_EXCLUSIVE, false,
          false, false, false, 44 },
        /* OR REPLACE: an earlier migration's function changed in place */
        { "REPLACE FUNCTION", "f", NO, false, false, false, false, 46 },
};

static void test_sample(void **state)
{
        size_t nw = sizeof(want) / sizeof(*want), n;
        struct migrate_step s[64];

        (void)state;
        n = migrate_plan(sample, strlen(sample), 1, s, 64);
        for (size_t i = 0; i < n && i < 64; i++)
                printf("%2zu %-26s %-10s %-26s %d %d %d %d %u\n", i, s[i].what,
                       s[i].target, migrate_lock_name(s[i].lock), s[i].creates,
                       s[i].reads_all, s[i].in_do, s[i].unknown, s[i].line);
        assert_int_equal(n, nw);
        for (size_t i = 0; i < nw; i++) {
                printf("step %zu\n", i);
                assert_string_equal(s[i].what, want[i].what);
                assert_string_equal(s[i].target, want[i].target);
                assert_int_equal(s[i].lock, want[i].lock);
                assert_int_equal(s[i].creates, want[i].creates);
                assert_int_equal(s[i].reads_all, want[i].reads_all);
                assert_int_equal(s[i].in_do, want[i].in_do);
                assert_int_equal(s[i].unknown, want[i].unknown);
                assert_int_equal(s[i].line, want[i].line);
        }
        /* a small out: the count still says how many there are */
        assert_int_equal(migrate_plan(sample, strlen(sample), 1, s, 2), nw);
        assert_int_equal(migrate_plan("", 0, 1, NULL, 0), 0);
        /* an unterminated string or comment ends the text, no overrun */
        assert_int_equal(migrate_plan("SELECT 'abc", 11, 1, s, 64), 1);
        assert_int_equal(migrate_plan("DROP TABLE a /* b", 17, 1, s, 64), 1);
        assert_int_equal(migrate_plan("DO $x$ DROP TABLE a;", 20, 1, s, 64), 2);
}

/* The statements of the sample: 26 (a DO block is one), each from its
 * first token to before its ';', with its first line. */
static void test_split(void **state)
{
        struct migrate_span sp[64];
        size_t n = migrate_split(sample, strlen(sample), 1, sp, 64);

        (void)state;
        assert_int_equal(n, 26);
        assert_int_equal(sp[0].line, 3);
        assert_memory_equal(sample + sp[0].off, "CREATE TABLE IF NOT EXISTS",
                            26);
        assert_int_equal(sample[sp[0].off + sp[0].len - 1], ')');
        assert_int_equal(sp[11].line, 17); /* WITH, three lines */
        assert_int_equal(sp[20].line, 28); /* CREATE FUNCTION, its body */
        assert_int_equal(sp[21].line, 31); /* DO */
        assert_memory_equal(sample + sp[21].off, "DO $body$", 9);
        assert_int_equal(sample[sp[21].off + sp[21].len - 1], '$');
        assert_int_equal(sp[24].line, 44);
        assert_int_equal(sp[25].line, 46);
        assert_int_equal(migrate_split("  ;; -- x\n", 10, 1, sp, 64), 0);
}

/* ALTER TABLE ... SET ( storage parameters ): SHARE UPDATE EXCLUSIVE
 * when every one is fillfactor, a toast or autovacuum one or
 * parallel_workers (PostgreSQL 15's ALTER TABLE page), else ACCESS
 * EXCLUSIVE; with another subcommand, the stronger. */
static void test_storage_params(void **state)
{
        static const struct {
                const char *sql;
                enum migrate_lock lock;
        } cases[] = {
                { "ALTER TABLE t SET (fillfactor = 50)",
                  MIGRATE_LOCK_SHARE_UPDATE_EXCLUSIVE },
                { "ALTER TABLE t SET (autovacuum_vacuum_scale_factor = 0,"
                  " toast.autovacuum_enabled = off, parallel_workers = 2)",
                  MIGRATE_LOCK_SHARE_UPDATE_EXCLUSIVE },
                { "ALTER TABLE t SET (toast_tuple_target = 128)",
                  MIGRATE_LOCK_SHARE_UPDATE_EXCLUSIVE },
                { "ALTER TABLE t SET (fillfactor = 50), ADD COLUMN c int", AE },
                { "ALTER TABLE t SET (user_catalog_table = true)", AE },
                { "ALTER TABLE t SET (fillfactor = 50, user_catalog_table)",
                  AE },
                { "ALTER TABLE t SET LOGGED", AE },
                { "ALTER TABLE t SET ()", AE },
        };
        struct migrate_step st[4];

        (void)state;
        for (size_t i = 0; i < sizeof(cases) / sizeof(*cases); i++) {
                printf("%s\n", cases[i].sql);
                assert_int_equal(
                    migrate_plan(cases[i].sql, strlen(cases[i].sql), 1, st, 4),
                    1);
                assert_string_equal(st[0].what, "ALTER TABLE");
                assert_int_equal(st[0].lock, cases[i].lock);
        }
}

static void test_no_transaction_ok(void **state)
{
        static const struct {
                const char *sql;
                bool ok;
        } cases[] = {
                { "CREATE INDEX CONCURRENTLY IF NOT EXISTS i ON t (a)", true },
                { "CREATE INDEX CONCURRENTLY i ON t (a)", false },
                { "CREATE INDEX CONCURRENTLY IF NOT EXISTS ON t (a)", false },
                { "CREATE INDEX IF NOT EXISTS i ON t (a)", false },
                { "DROP INDEX CONCURRENTLY IF EXISTS i", true },
                { "DROP INDEX IF EXISTS i", false },
                { "DROP INDEX CONCURRENTLY i", false },
                { "ALTER TABLE t VALIDATE CONSTRAINT c", true },
                { "ALTER TABLE t ADD COLUMN c int", false },
                { "ANALYZE t", true },
                { "COMMENT ON INDEX i IS 'x'", true },
                { "UPDATE t SET a = 1", false },
                { "VACUUM t", false },
        };
        struct migrate_step s[4];

        (void)state;
        for (size_t i = 0; i < sizeof(cases) / sizeof(*cases); i++) {
                size_t n =
                    migrate_plan(cases[i].sql, strlen(cases[i].sql), 1, s, 4);
                bool ok = n > 0;

                for (size_t k = 0; k < n && k < 4; k++)
                        ok = ok && migrate_step_no_transaction_ok(&s[k]);
                printf("%s: %d\n", cases[i].sql, ok);
                assert_int_equal(ok, cases[i].ok);
        }
        migrate_plan(
            "CREATE INDEX CONCURRENTLY IF NOT EXISTS \"Big_I\" ON t (a)", 55, 1,
            s, 4);
        assert_string_equal(s[0].index, "Big_I");
        assert_true(s[0].if_exists);
}

static void test_lock_names(void **state)
{
        (void)state;
        assert_string_equal(migrate_lock_name(MIGRATE_LOCK_NONE), "-");
        assert_string_equal(migrate_lock_name(AE), "AccessExclusiveLock");
        assert_string_equal(migrate_lock_blocks(AE), "reads and writes");
        assert_string_equal(migrate_lock_blocks(MIGRATE_LOCK_SHARE), "writes");
        assert_null(migrate_lock_blocks(MIGRATE_LOCK_SHARE_UPDATE_EXCLUSIVE));
        assert_null(migrate_lock_blocks(MIGRATE_LOCK_ROW_EXCLUSIVE));
}

/* The step of migration `name` whose what and target are given. */
static const struct migrate_step *step_of(const struct migrate_step *s,
                                          size_t n, const char *what,
                                          const char *target)
{
        for (size_t i = 0; i < n; i++)
                if (!strcmp(s[i].what, what) && !strcmp(s[i].target, target))
                        return &s[i];
        return NULL;
}

/* The file line of the first occurrence of text in m. */
static unsigned line_of(const struct migration_src *m, const char *text)
{
        const char *at = strstr(m->sql, text);
        unsigned line  = m->line0;

        assert_non_null(at);
        for (const char *p = m->sql; p < at; p++)
                line += *p == '\n';
        return line;
}

static void test_migrations(void **state)
{
        (void)state;
        assert_true(migrations_embedded_n >= 20);
        for (unsigned i = 0; i < migrations_embedded_n; i++) {
                const struct migration_src *m = &migrations_embedded[i];
                size_t n = migrate_plan(m->sql, m->len, m->line0, NULL, 0);
                struct migrate_step *s = calloc(n ? n : 1, sizeof(*s));
                const struct migrate_step *k;

                assert_non_null(s);
                assert_int_equal(migrate_plan(m->sql, m->len, m->line0, s, n),
                                 n);
                assert_true(n > 0);
                for (size_t j = 0; j < n; j++) {
                        if (s[j].unknown)
                                printf("%s:%u: %s\n", m->name, s[j].line,
                                       s[j].what);
                        /* dynamic SQL alone is not read */
                        assert_true(!s[j].unknown ||
                                    !strcmp(s[j].what, "EXECUTE"));
                }
                if (!strncmp(m->name, "0016_", 5)) {
                        k = step_of(s, n, "DROP TABLE", "ledger_entries");
                        assert_non_null(k);
                        assert_int_equal(k->lock, AE);
                        assert_true(k->in_do);
                        k = step_of(s, n, "INSERT", "ledger_postings");
                        assert_non_null(k);
                        assert_int_equal(k->line,
                                         line_of(m, "INSERT INTO ledger_"));
                }
                if (!strncmp(m->name, "0017_", 5)) {
                        k = step_of(s, n, "UPDATE", "payments");
                        assert_non_null(k);
                        assert_true(k->reads_all);
                        k = step_of(s, n, "reads", "idempotency_keys");
                        assert_non_null(k);
                        k = step_of(s, n, "CREATE INDEX", "inbox");
                        assert_non_null(k);
                        assert_int_equal(k->lock, MIGRATE_LOCK_SHARE);
                }
                if (!strncmp(m->name, "0019_", 5)) {
                        k = step_of(s, n, "CREATE INDEX", "ledger_postings");
                        assert_non_null(k);
                        assert_int_equal(k->lock, MIGRATE_LOCK_SHARE);
                        assert_int_equal(
                            k->line,
                            line_of(m, "CREATE INDEX ledger_postings"));
                        /* the file's own line, the licence line counted */
                        assert_int_equal(m->line0, 2);
                }
                free(s);
        }
}

int main(void)
{
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_sample),
                cmocka_unit_test(test_split),
                cmocka_unit_test(test_storage_params),
                cmocka_unit_test(test_no_transaction_ok),
                cmocka_unit_test(test_lock_names),
                cmocka_unit_test(test_migrations),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
