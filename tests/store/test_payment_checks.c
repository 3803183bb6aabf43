/* SPDX-License-Identifier: Apache-2.0 */
/*
 * store_payment_checks: the CHECK on payments.tenant_id as 0031 writes
 * it (a length and no character outside the class) accepts exactly what
 * the regular expression of 0001 and 0017, '^[A-Za-z0-9._-]{1,64}$',
 * accepted: a catalogue of edge cases and 5,000 random strings, each
 * written into a claimed payment by an UPDATE and told apart by the
 * error the constraint raises.
 *
 * Each case runs on a database of its own.
 */
#include "cases.h"
#include "storetest.h"

#include <stdlib.h>
#include <string.h>

static struct store *st;
static PGconn *pg;

/*
 * For every string of the query strings(v), whether the UPDATE of one
 * payment's tenant_id to it passes payments_tenant_id_check (each in a
 * subtransaction rolled back either way), against the old regular
 * expression: the count of strings where the two disagree, or -1.
 */
static long long disagreements(const char *strings)
{
        static const char fmt[] =
            "DO $$ DECLARE v text; passed boolean; bad bigint := 0; "
            "n bigint := 0; ok bigint := 0; BEGIN "
            "FOR v IN %s LOOP "
            "  BEGIN "
            "    UPDATE payments SET tenant_id = v "
            "     WHERE payment_id = (SELECT payment_id FROM payments LIMIT "
            "1); "
            "    RAISE EXCEPTION USING ERRCODE = 'P0001'; "
            "  EXCEPTION "
            "    WHEN raise_exception THEN passed := true; "
            "    WHEN check_violation THEN passed := false; "
            "  END; "
            "  n := n + 1; "
            "  ok := ok + passed::int; "
            "  IF passed IS DISTINCT FROM (v ~ '^[A-Za-z0-9._-]{1,64}$') THEN "
            "    bad := bad + 1; "
            "    RAISE NOTICE 'disagree: %% (%% bytes): CHECK %%', "
            "                 quote_literal(left(v, 80)), octet_length(v), "
            "                 passed; "
            "  END IF; "
            "END LOOP; "
            "PERFORM set_config('co_test.checked', n::text, false); "
            "PERFORM set_config('co_test.bad', bad::text, false); "
            "PERFORM set_config('co_test.ok', ok::text, false); "
            "END $$";
        size_t len = sizeof(fmt) + strlen(strings);
        char *sql  = malloc(len);
        long long bad;

        REQUIRE(sql);
        snprintf(sql, len, fmt, strings);
        REQUIRE(st_exec(pg, true, "%s", sql));
        free(sql);
        bad = st_count(pg, "SELECT current_setting('co_test.bad')::bigint");
        fprintf(stderr, "%lld strings checked, %lld passed, %lld disagree\n",
                st_count(pg, "SELECT current_setting('co_test.checked')"
                             "::bigint"),
                st_count(pg, "SELECT current_setting('co_test.ok')::bigint"),
                bad);
        return bad;
}

static void tenant_check(void)
{
        struct st_intent in;
        struct claim_item c;
        char err[512];
        long long n;

        st_intent(&in, "tenant-x", "key-1", 500, 0);
        st_item(&c, &in);
        REQUIRE(store_claim_batch(st, &c, 1, "owner-a", ST_LEASE_MS, ST_SECRET,
                                  ST_SECRET_LEN, err, sizeof(err)) == STORE_OK);
        REQUIRE(c.outcome == CLAIM_NEW);
        store_claim_item_clear(&c);

        /* 0031's form is the one in place (the old one would agree) */
        CHECK_EQ_I(st_count(pg,
                            "SELECT count(*) FROM pg_constraint WHERE conrelid "
                            "= 'payments'::regclass AND conname = "
                            "'payments_tenant_id_check' AND "
                            "pg_get_constraintdef(oid) LIKE '%%octet_length%%'"
                            " AND pg_get_constraintdef(oid) NOT LIKE "
                            "'%%{1,64}%%'"),
                   1);

        /* edge cases: lengths 0, 1, 64 and 65 in characters and bytes,
         * every member of the class, its neighbours in ASCII, a newline
         * at either end (a regular expression's $ may match before a
         * final newline elsewhere), characters of 2, 3 and 4 bytes */
        n = disagreements(
            "SELECT unnest(ARRAY["
            "'', 'a', '.', '..', '-', '_', 'Z', 'z', '0', '9', "
            "'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz', "
            "'0123456789._-', repeat('a', 63), repeat('a', 64), "
            "repeat('a', 65), repeat('x', 63) || 'é', repeat('é', 32), "
            "repeat('é', 64), 'a b', ' a', 'a ', E'a\\n', E'\\na', "
            "E'a\\tb', 'a/b', 'a:b', 'a@b', 'a[b', 'a]b', 'a^b', 'a\\b', "
            "'a`b', 'a{b', 'a~b', 'a,b', 'a+b', 'a*b', 'a$', '^a', "
            "'shop-01', 'tenant.x_y-z', 'é', '€', '😀', 'ａ', "
            "'a' || chr(127), chr(1) || 'a', 'A' || chr(160)])");
        CHECK_EQ_I(n, 0);

        /* 5,000 strings of 0 to 70 characters, half of them of 60 to 68,
         * of members and outsiders; pseudo-random from hashint8, so the
         * same strings every run */
        n = disagreements(
            "SELECT (SELECT coalesce(string_agg(substr(alpha, 1 + "
            "((hashint8(i * 1000 + k)::bigint + 2147483648) % "
            "length(alpha))::int, 1), ''), '') FROM generate_series(1, len) "
            "k) FROM (SELECT i, 'abcXYZ019._-' || CASE WHEN i % 4 = 0 THEN "
            "E' /é€\\n:@[]' ELSE '' END AS alpha, CASE WHEN i % 2 = 0 THEN "
            "60 + (hashint8(-i)::bigint + 2147483648) % 9 ELSE "
            "(hashint8(-i)::bigint + 2147483648) % 71 END AS len FROM "
            "generate_series(1, 5000) i) g");
        CHECK_EQ_I(n, 0);
}

static int setup(void)
{
        int rc = st_begin("store_payment_checks");

        if (rc)
                return rc;
        pg = st_pg();
        st = st_store();
        return 0;
}

static void teardown(void)
{
        PQfinish(pg);
        store_destroy(st);
        st_end();
}

int main(int argc, char **argv)
{
        static const struct test_case cases[] = {
                { "tenant_check", tenant_check, NULL, NULL },
        };
        return st_suite_main("store_payment_checks", cases,
                             sizeof(cases) / sizeof(cases[0]), setup, teardown,
                             false, argc, argv);
}
