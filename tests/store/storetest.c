/* SPDX-License-Identifier: Apache-2.0 */
/* storetest: helpers of the store's integration tests (see storetest.h). */
#include "storetest.h"
#include "cases.h"

#include "store/migrate.h"
#include "testenv.h"
#include "util/crypto.h"

#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

int st_failures;

static char st_db[128];
static char st_ci[1024];

int st_begin(const char *prefix)
{
        struct migrate_report rep;
        char err[512];

        /* Only PostgreSQL is needed (not the broker). */
        if (!testenv_pg()) {
                printf("SKIP: CHARGEONCE_TEST_PG is not set; run through "
                       "tests/harness/with-services\n");
                return TESTENV_SKIP;
        }
        if (testenv_db_create(prefix, st_db, sizeof(st_db), st_ci,
                              sizeof(st_ci)) < 0)
                return 1;
        if (store_migrate_run(st_ci, &rep, err, sizeof(err)) != 0) {
                fprintf(stderr, "migrate: %s\n", err);
                st_end();
                return 1;
        }
        return 0;
}

const char *st_conninfo(void)
{
        return st_ci;
}

void st_end(void)
{
        if (st_db[0]) {
                testenv_db_drop(st_db);
                st_db[0] = '\0';
        }
}

int st_failed_checks(void)
{
        return st_failures;
}

struct store *st_store(void)
{
        char err[512];
        struct store *st = store_connect(st_ci, err, sizeof(err));

        if (!st) {
                fprintf(stderr, "store_connect: %s\n", err);
                st_end();
                exit(1);
        }
        return st;
}

PGconn *st_pg(void)
{
        PGconn *c = PQconnectdb(st_ci);

        if (PQstatus(c) != CONNECTION_OK) {
                fprintf(stderr, "connect: %s", PQerrorMessage(c));
                PQfinish(c);
                st_end();
                exit(1);
        }
        return c;
}

void st_intent(struct st_intent *in, const char *tenant, const char *key,
               int64_t amount, int variant)
{
        memset(in, 0, sizeof(*in));
        if (!uuid_v4(in->event_id))
                abort();
        snprintf(in->tenant_id, sizeof(in->tenant_id), "%s", tenant);
        snprintf(in->idem_key, sizeof(in->idem_key), "%s", key);
        snprintf(in->order_id, sizeof(in->order_id), "ord-%s", key);
        snprintf(in->customer_id, sizeof(in->customer_id), "cus-1");
        snprintf(in->currency, sizeof(in->currency), "VND");
        snprintf(in->payment_method, sizeof(in->payment_method), "pm_tok_%d",
                 variant);
        in->amount  = amount;
        in->variant = variant;
}

void st_item(struct claim_item *it, const struct st_intent *in)
{
        char canon[512];
        int len;

        memset(it, 0, sizeof(*it));
        it->event_id       = in->event_id;
        it->tenant_id      = in->tenant_id;
        it->idem_key       = in->idem_key;
        it->order_id       = in->order_id;
        it->customer_id    = in->customer_id;
        it->amount         = in->amount;
        it->currency       = in->currency;
        it->payment_method = in->payment_method;
        it->topic          = "payments.intents";
        it->partition      = 0;
        it->offset         = 1;
        len = snprintf(canon, sizeof(canon), "%s|%s|%lld|%d", in->tenant_id,
                       in->idem_key, (long long)in->amount, in->variant);
        crypto_sha256(canon, (size_t)len, it->request_hash);
}

void st_settle_item(struct settle_item *s, const struct claim_item *c,
                    enum settle_status status, char *ev, char *buf,
                    size_t bufsz)
{
        static const char *names[] = { "", "succeeded", "failed", "review" };

        memset(s, 0, sizeof(*s));
        if (!uuid_v4(ev))
                abort();
        snprintf(buf, bufsz,
                 "{\"schema_version\":1,\"event_id\":\"%s\","
                 "\"intent_event_id\":\"%s\",\"payment_id\":\"%s\","
                 "\"status\":\"%s\",\"replayed\":false}",
                 ev, c->event_id, c->payment_id, names[status]);
        s->payment_id      = c->payment_id;
        s->lease_epoch     = c->lease_epoch;
        s->status          = status;
        s->result_event_id = ev;
        s->result_json     = buf;
        s->attempts        = 1;
        if (status == SETTLE_SUCCEEDED) {
                s->provider_charge_id = "ch_test";
        } else if (status == SETTLE_FAILED) {
                s->error_code    = "card_declined";
                s->error_message = "The card was declined";
        } else {
                s->error_code = "outcome_unknown";
        }
}

static PGresult *vexec(PGconn *conn, const char *fmt, va_list ap)
{
        char sql[8192];

        vsnprintf(sql, sizeof(sql), fmt, ap);
        return PQexec(conn, sql);
}

long long st_count(PGconn *conn, const char *fmt, ...)
{
        va_list ap;
        PGresult *res;
        long long v = -1;

        va_start(ap, fmt);
        res = vexec(conn, fmt, ap);
        va_end(ap);
        if (PQresultStatus(res) == PGRES_TUPLES_OK && PQntuples(res) > 0 &&
            !PQgetisnull(res, 0, 0))
                v = strtoll(PQgetvalue(res, 0, 0), NULL, 10);
        else if (PQresultStatus(res) != PGRES_TUPLES_OK)
                fprintf(stderr, "st_count: %s", PQresultErrorMessage(res));
        PQclear(res);
        return v;
}

long long st_stat_count(PGconn *conn, PGconn *const *others, const char *sql)
{
        for (size_t i = 0; others && others[i]; i++)
                PQclear(PQexec(others[i], "SELECT pg_stat_force_next_flush()"));
        PQclear(PQexec(conn, "SELECT pg_stat_force_next_flush()"));
        PQclear(PQexec(conn, "SELECT pg_stat_clear_snapshot()"));
        return st_count(conn, "%s", sql);
}

bool st_exec(PGconn *conn, bool want_ok, const char *fmt, ...)
{
        va_list ap;
        PGresult *res;
        bool ok;

        va_start(ap, fmt);
        res = vexec(conn, fmt, ap);
        va_end(ap);
        ok = PQresultStatus(res) == PGRES_COMMAND_OK ||
             PQresultStatus(res) == PGRES_TUPLES_OK;
        if (!ok && want_ok)
                fprintf(stderr, "st_exec: %s", PQresultErrorMessage(res));
        PQclear(res);
        return ok;
}

int st_suite_main(const char *name, const struct test_case *cases,
                  size_t n_cases, int (*setup)(void), void (*teardown)(void),
                  bool chained, int argc, char **argv)
{
        const struct test_suite suite = {
                .name     = name,
                .cases    = cases,
                .n_cases  = n_cases,
                .setup    = setup,
                .teardown = teardown,
                .failures = st_failed_checks,
                .chained  = chained,
        };

        return cases_main(&suite, argc, argv);
}

bool st_wait_blocked_by(PGconn *holder, const char *like)
{
        PGconn *probe = st_pg();
        char *lit     = PQescapeLiteral(probe, like ? like : "%",
                                        strlen(like ? like : "%"));
        bool seen     = false;

        for (int i = 0; i < 500 && !seen && lit; i++) {
                seen = st_count(probe,
                                "SELECT count(*) FROM pg_stat_activity"
                                " WHERE datname = current_database()"
                                " AND wait_event_type = 'Lock'"
                                " AND %d = ANY (pg_blocking_pids(pid))"
                                " AND query LIKE %s",
                                PQbackendPID(holder), lit) > 0;
                if (!seen)
                        usleep(10000);
        }
        PQfreemem(lit);
        PQfinish(probe);
        return seen;
}
