/* SPDX-License-Identifier: Apache-2.0 */
/*
 * storetest: what the store's integration tests share. A fresh database
 * per test binary (created on the harness's PostgreSQL, migrated with the
 * real runner, dropped at the end), intents with their own string
 * storage, small SQL helpers and CHECK macros that count failures.
 *
 * Never used by the program itself.
 */
#ifndef CO_TESTS_STORETEST_H
#define CO_TESTS_STORETEST_H

#include "store/store_int.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

extern int st_failures;

#define CHECK(cond)                                                            \
        do {                                                                   \
                if (!(cond)) {                                                 \
                        fprintf(stderr, "%s:%d: CHECK failed: %s\n", __FILE__, \
                                __LINE__, #cond);                              \
                        st_failures++;                                         \
                }                                                              \
        } while (0)

#define CHECK_EQ_I(a, b)                                                       \
        do {                                                                   \
                long long _a = (long long)(a), _b = (long long)(b);            \
                if (_a != _b) {                                                \
                        fprintf(stderr,                                        \
                                "%s:%d: CHECK failed: %s == %s "               \
                                "(%lld != %lld)\n",                            \
                                __FILE__, __LINE__, #a, #b, _a, _b);           \
                        st_failures++;                                         \
                }                                                              \
        } while (0)

/* Fatal: the test cannot go on. */
#define REQUIRE(cond)                                                          \
        do {                                                                   \
                if (!(cond)) {                                                 \
                        fprintf(stderr, "%s:%d: REQUIRE failed: %s\n",         \
                                __FILE__, __LINE__, #cond);                    \
                        st_end();                                              \
                        exit(1);                                               \
                }                                                              \
        } while (0)

#define ST_SECRET     ((const unsigned char *)"test-provider-key-secret")
#define ST_SECRET_LEN 24
#define ST_LEASE_MS   30000

/*
 * Skips (returns 77) without the harness; otherwise
 * creates and migrates a fresh database. conninfo (static) for it.
 * Returns 0, 77 (skip) or 1 (setup failed). A suite's setup
 * (tests/common/cases.h) calls it, its teardown calls st_end().
 */
int st_begin(const char *prefix);
const char *st_conninfo(void);
/* Drops the database (idempotent). */
void st_end(void);
/* The CHECKs failed so far (a suite's failure counter, cases.h). */
int st_failed_checks(void);

struct test_case;
/*
 * main() of a store suite (tests/common/cases.h): cases_main() with
 * st_failed_checks as the failure count; chained: the cases are one
 * sequence on the database setup() made.
 */
int st_suite_main(const char *name, const struct test_case *cases,
                  size_t n_cases, int (*setup)(void), void (*teardown)(void),
                  bool chained, int argc, char **argv);

/* A store on the test database, or exits. Owned by the caller. */
struct store *st_store(void);
/* A plain connection to the test database, or exits. PQfinish it. */
PGconn *st_pg(void);

/* An intent and the storage its claim_item points into. */
struct st_intent {
        char event_id[UUID_STR_LEN];
        char tenant_id[65];
        char idem_key[256];
        char order_id[65];
        char customer_id[65];
        char currency[4];
        char payment_method[64];
        int64_t amount;
        int variant; /* part of the request hash: another variant = conflict */
};

/* Fills in an intent with a fresh event id. */
void st_intent(struct st_intent *in, const char *tenant, const char *key,
               int64_t amount, int variant);
/* Points it at in (out part zeroed). */
void st_item(struct claim_item *it, const struct st_intent *in);

/*
 * Builds a settle item for a NEW claim with the result JSON; strings live
 * in buf (>= 1024 bytes) and ev (a fresh result event id).
 */
void st_settle_item(struct settle_item *s, const struct claim_item *c,
                    enum settle_status status, char *ev, char *buf,
                    size_t bufsz);

/*
 * Waits (up to 5 s) until a backend of this database waits for a lock
 * that holder's session holds (pg_blocking_pids), running a statement
 * whose text is LIKE like (NULL: any); false if none does. Asked on a
 * connection of its own: holder may be inside the transaction that holds
 * the lock, and a transaction sees pg_stat_activity as at its first look.
 */
bool st_wait_blocked_by(PGconn *holder, const char *like);

/* Runs sql (printf format) and returns the first value as a number, or
 * -1 on error (printed). */
long long st_count(PGconn *conn, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
/* A counter of the cumulative statistics as every backend has reported
 * it: flushes the statistics of each of others (NULL-terminated) and of
 * conn, clears conn's snapshot of them, then st_count(conn, sql). */
long long st_stat_count(PGconn *conn, PGconn *const *others, const char *sql);
/* Runs sql; true if it succeeded. Prints the error if want_ok and not. */
bool st_exec(PGconn *conn, bool want_ok, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

#endif
