/* SPDX-License-Identifier: Apache-2.0 */
/*
 * test_tls: chargeonce over real TLS to all three of its peers
 * (docs/security.md), on services made for it by `tests/harness/services.sh
 * start-tls` (once per run, under the harness's folder): a test PKI (CA A
 * trusted; certificates right, for the wrong host, from an unknown CA B), a
 * PostgreSQL with ssl = on that refuses TCP without TLS, a Kafka broker
 * with one SSL listener per certificate set, and the gateway simulator
 * serving HTTPS.
 *
 *   test_tls verified            the whole consume path with sslmode=
 *                                verify-full, security.protocol=SSL and
 *                                https, each trusting CA A only
 *   test_tls pg_wrong_host       PostgreSQL's certificate names another
 *   test_tls pg_unknown_ca       host / comes from CA B: consume exits
 *                                with libpq's certificate error
 *   test_tls kafka_wrong_host    the broker's: librdkafka's handshake
 *   test_tls kafka_unknown_ca    error, no intent consumed
 *   test_tls gateway_wrong_host  the gateway's: curl's certificate error,
 *   test_tls gateway_unknown_ca  nothing charged, and the payment is left
 *                                processing (no evidence, never failed)
 *
 * Each refusal asserts the library's own words for that failure, so it
 * cannot pass for another reason (a refused connection, a wrong port).
 * PostgreSQL serves one certificate at a time: each case sets the one it
 * needs (pg_use), and the cases hold one ctest resource lock.
 */
#include "cases.h"
#include "scenario.h"
#include "testenv.h"

#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define T_WAIT 60000

enum cert_set { RIGHT, WRONG, UNKNOWN };
static const char *const set_name[] = { "right", "wrong", "unknown" };
/* the TLS broker's SSL listener of each set (services.sh start-tls) */
static const char *const kafka_var[] = { "CHARGEONCE_TEST_TLS_KAFKA_RIGHT",
                                         "CHARGEONCE_TEST_TLS_KAFKA_WRONG",
                                         "CHARGEONCE_TEST_TLS_KAFKA_UNKNOWN" };

static void sleep_ms(int ms)
{
        struct timespec ts = { ms / 1000, (long)(ms % 1000) * 1000000L };
        nanosleep(&ts, NULL);
}

static const char *env(const char *name)
{
        const char *v = getenv(name);
        SC_CHECK(v && *v, "%s is not set (services.sh start-tls)", name);
        return v;
}

/* Sets every "export NAME=VALUE" (VALUE maybe in '') of path. */
static int load_env(const char *path)
{
        FILE *f = fopen(path, "r");
        char line[1024];

        if (!f)
                return -1;
        while (fgets(line, sizeof(line), f)) {
                char *name = line, *eq, *v;
                size_t n;

                if (strncmp(name, "export ", 7) != 0 ||
                    !(eq = strchr(name, '=')))
                        continue;
                name += 7;
                *eq  = '\0';
                v    = eq + 1;
                n    = strcspn(v, "\n");
                v[n] = '\0';
                if (n >= 2 && v[0] == '\'' && v[n - 1] == '\'') {
                        v[n - 1] = '\0';
                        v++;
                }
                setenv(name, v, 1);
        }
        fclose(f);
        return 0;
}

/*
 * Starts the TLS services (or finds them running) and points the tests'
 * own clients at them: CHARGEONCE_TEST_PG at the TLS server's Unix socket
 * (the tests' own setup needs no TLS) and CHARGEONCE_TEST_KAFKA at the
 * TLS broker's plaintext listener. chargeonce gets the TLS ends only.
 */
static int tls_setup(void)
{
        const char *dir = getenv("CHARGEONCE_TEST_DIR");
        const char *src = getenv("CHARGEONCE_SOURCE_DIR");
        char cmd[2048], path[600];

        if (!testenv_have_services())
                return TESTENV_SKIP;
        if (!dir || !src) {
                fprintf(stderr, "SKIP: CHARGEONCE_TEST_DIR or "
                                "CHARGEONCE_SOURCE_DIR is not set; run "
                                "through tests/harness/with-services\n");
                return TESTENV_SKIP;
        }
        snprintf(cmd, sizeof(cmd),
                 "'%s/tests/harness/services.sh' start-tls '%s' "
                 ">>'%s/start-tls.out' 2>&1",
                 src, dir, dir);
        if (system(cmd) != 0) {
                snprintf(cmd, sizeof(cmd), "cat '%s/start-tls.out' >&2", dir);
                if (system(cmd) != 0)
                        fprintf(stderr, "(no start-tls.out)\n");
                fprintf(stderr, "services.sh start-tls failed\n");
                return 1;
        }
        snprintf(path, sizeof(path), "%s/tls/tls.env", dir);
        if (load_env(path) < 0) {
                fprintf(stderr, "cannot read %s\n", path);
                return 1;
        }
        setenv("CHARGEONCE_TEST_PG", env("CHARGEONCE_TEST_TLS_PG"), 1);
        setenv("CHARGEONCE_TEST_KAFKA", env("CHARGEONCE_TEST_TLS_KAFKA"), 1);
        return 0;
}

/*
 * Makes the TLS PostgreSQL serve set's certificate, and waits until a new
 * backend shows it (the postmaster has reloaded; backends are its forks).
 */
static void pg_use(enum cert_set set)
{
        const char *ssl = env("CHARGEONCE_TEST_TLS_PG_SSL");
        char want[600], sql[800];
        PGconn *c           = PQconnectdb(env("CHARGEONCE_TEST_TLS_PG"));
        const char *kinds[] = { "cert", "key" }, *ext[] = { "crt", "key" };
        const char *v;

        SC_CHECK(PQstatus(c) == CONNECTION_OK, "admin connection: %s",
                 PQerrorMessage(c));
        for (int i = 0; i < 2; i++) {
                snprintf(sql, sizeof(sql),
                         "ALTER SYSTEM SET ssl_%s_file = '%s/%s.%s'", kinds[i],
                         ssl, set_name[set], ext[i]);
                PGresult *res = PQexec(c, sql);

                SC_CHECK(PQresultStatus(res) == PGRES_COMMAND_OK, "%s: %s", sql,
                         PQresultErrorMessage(res));
                PQclear(res);
        }
        v = testenv_pg_value(c, "SELECT pg_reload_conf()");
        SC_CHECK(v && !strcmp(v, "t"), "pg_reload_conf");
        PQfinish(c);
        snprintf(want, sizeof(want), "%s/%s.crt", ssl, set_name[set]);
        for (int i = 0; i < 200; i++) {
                bool done;

                c    = PQconnectdb(env("CHARGEONCE_TEST_TLS_PG"));
                v    = testenv_pg_value(c, "SHOW ssl_cert_file");
                done = v && !strcmp(v, want);
                PQfinish(c);
                if (done)
                        return;
                sleep_ms(100);
        }
        SC_CHECK(false, "PostgreSQL did not take %s", want);
}

/* The simulator's options for a certificate set. */
static const char *sim_opts(enum cert_set set)
{
        static char o[1400];
        const char *d = env("CHARGEONCE_TEST_TLS_CERTS");

        snprintf(o, sizeof(o), "--tls-cert %s/%s.crt --tls-key %s/%s.key", d,
                 set_name[set], d, set_name[set]);
        return o;
}

/*
 * chargeonce's -X settings: every peer over TLS trusting CA A alone,
 * PostgreSQL by the name localhost (its DNS SAN), the broker's listener of
 * kafka_set, and the gateway's CA file (the simulator's https:// URL comes
 * from co_start). extra: more settings (NULL-terminated) or NULL.
 */
static const char *const *tls_xs(struct scenario *sc, enum cert_set kafka_set,
                                 const char *const *extra)
{
        static char b[4][1200];
        static const char *xs[32];
        const char *ca = env("CHARGEONCE_TEST_TLS_CA");
        /* the by-hand proof that the refusals test the checks
         * (docs/testing.md): every check off, every refusal must fail */
        const bool weak = getenv("CHARGEONCE_TEST_TLS_WEAKEN") != NULL;
        int n           = 0;

        char conninfo[1024], path[300];

        /* libpq's require still checks the chain given a root file */
        snprintf(conninfo, sizeof(conninfo),
                 "host=localhost port=%s user=postgres dbname=%s"
                 " sslmode=%s%s%s",
                 env("CHARGEONCE_TEST_TLS_PGPORT"), sc->db,
                 weak ? "require" : "verify-full",
                 weak ? "" : " sslrootcert=", weak ? "" : ca);
        /* a file, as production mode wants a secret */
        sc_secret_file(sc, "tls_conninfo", conninfo, path, sizeof(path));
        snprintf(b[0], sizeof(b[0]), "db.conninfo_file=%s", path);
        snprintf(b[1], sizeof(b[1]), "kafka.bootstrap.servers=%s",
                 env(kafka_var[kafka_set]));
        snprintf(b[2], sizeof(b[2]), "kafka.ssl.ca.location=%s", ca);
        snprintf(b[3], sizeof(b[3]), "gateway.ca_file=%s", ca);
        for (int i = 0; i < 4; i++)
                xs[n++] = b[i];
        xs[n++] = "kafka.security.protocol=SSL";
        if (weak) {
                xs[n++] = "kafka.ssl.endpoint.identification.algorithm=none";
                xs[n++] = "kafka.enable.ssl.certificate.verification=false";
                xs[n++] = "gateway.tls_verify=false";
        }
        xs[n++] = "consumer.batch_linger=2ms";
        xs[n++] = "gateway.max_attempts=3";
        for (int i = 0; extra && extra[i] && n < 31; i++)
                xs[n++] = extra[i];
        xs[n] = NULL;
        return xs;
}

/* Whether the file holds every one of the NULL-terminated strings. */
static bool log_has(const char *path, const char *const *want)
{
        FILE *f = fopen(path, "r");
        char *text;
        long n;
        bool all = true;

        if (!f)
                return false;
        fseek(f, 0, SEEK_END);
        n = ftell(f);
        fseek(f, 0, SEEK_SET);
        text = calloc(1, (size_t)(n > 0 ? n : 0) + 1);
        SC_CHECK(text, "oom");
        if (n > 0 && fread(text, 1, (size_t)n, f) != (size_t)n)
                all = false;
        fclose(f);
        for (int i = 0; all && want[i]; i++)
                all = strstr(text, want[i]) != NULL;
        free(text);
        return all;
}

static bool wait_log(const char *path, const char *const *want, int ms)
{
        for (int t = 0; t < ms; t += 200) {
                if (log_has(path, want))
                        return true;
                sleep_ms(200);
        }
        return log_has(path, want);
}

static void produce_one(struct scenario *sc, const char *key)
{
        struct intent_spec is = { NULL,  "shop-tls", key,       "o-tls-1",
                                  12500, "VND",      "pm_tok_1" };
        sc_produce_intent(sc, 0, &is, NULL);
        sc_flush(sc);
}

/* ------------------------------------------------------------------ */

/* The happy path runs in production mode (docs/security.md): every secret
 * through a file (co_start, tls_xs), a provider-key secret of 32 bytes or
 * more, TLS with verification to all three peers. */
#define TLS_PROVIDER_SECRET "tls-test-provider-key-secret-0123456789"

static void verified(void)
{
        struct scenario sc;
        struct sim s;
        struct co c;
        struct sc_msg *m;
        size_t n;
        json_t *st;
        int rc;
        char pk[300], pk_x[340];
        /* weakened (the by-hand proof), production would refuse it */
        const char *extra[] = { getenv("CHARGEONCE_TEST_TLS_WEAKEN")
                                    ? "security.mode=development"
                                    : "security.mode=production",
                                pk_x, NULL };

        sc_init(&sc, "tls_ok", 1);
        sc_secret_file(&sc, "tls_provider_key", TLS_PROVIDER_SECRET, pk,
                       sizeof(pk));
        snprintf(pk_x, sizeof(pk_x), "provider_key.secret_file=%s", pk);
        pg_use(RIGHT);
        sim_start(&sc, &s, sim_opts(RIGHT));
        SC_CHECK(!strncmp(s.url, "https://", 8), "simulator at %s", s.url);
        co_start(&sc, &c, "consume", &s, tls_xs(&sc, RIGHT, extra), NULL);
        produce_one(&sc, "tls-ok-0001");
        SC_CHECK(sc_wait_consumed(&sc, T_WAIT), "the intent was not consumed");
        SC_CHECK(sc_wait_sql(&sc,
                             "SELECT count(*) = 1 FROM outbox WHERE status ="
                             " 'succeeded' AND" SC_PUBLISHED,
                             T_WAIT),
                 "no published result");
        /* chargeonce's own sessions are TLS (pg_hba refuses TCP without,
         * and this says so from the server's side) */
        SC_CHECK(sc_sql_long(&sc,
                             "SELECT count(*) FROM pg_stat_ssl JOIN"
                             " pg_stat_activity USING (pid) WHERE datname ="
                             " '%s' AND client_addr IS NOT NULL AND ssl",
                             sc.db) >= 1,
                 "no TLS session of chargeonce in pg_stat_ssl");
        n = sc_read_topic(&sc, sc.t_results, 1500, &m);
        SC_CHECK(n == 1 && m[0].value &&
                     strstr(m[0].value, "\"status\":\"succeeded\""),
                 "%zu results, first %s", n, n ? m[0].value : "-");
        sc_messages_free(m, n);
        st = sim_stats(&s);
        SC_CHECK(sim_stat(st, "succeeded_charges") == 1 &&
                     sim_charges_order(st, "shop-tls", "o-tls-1") == 1,
                 "charges at the simulator: %ld",
                 sim_stat(st, "succeeded_charges"));
        json_decref(st);
        sc_check_invariants(&sc);
        rc = co_stop(&c, SIGTERM, 60000);
        SC_CHECK(rc == 0, "chargeonce consume exited %d on SIGTERM", rc);
        printf("verified: one intent through verify-full, SSL and https, "
               "charged once, result published\n");
        sim_stop(&s);
        sc_cleanup(&sc);
}

/*
 * PostgreSQL with a certificate chargeonce must refuse: consume cannot
 * open its store and exits with an error status, libpq's reason logged.
 */
static void pg_refused(enum cert_set set, const char *const *want)
{
        struct scenario sc;
        struct sim s;
        struct co c;
        int rc;

        sc_init(&sc, "tls_pg", 1);
        sim_start(&sc, &s, sim_opts(RIGHT));
        pg_use(set);
        co_start(&sc, &c, "consume", &s, tls_xs(&sc, RIGHT, NULL), NULL);
        rc = co_wait(&c, T_WAIT);
        pg_use(RIGHT);
        SC_CHECK(rc == 1, "consume exited %d; 1 (a runtime error) was expected",
                 rc);
        SC_CHECK(log_has(c.log, want),
                 "libpq's certificate error (%s) is not in the log", want[1]);
        SC_CHECK(sc_sql_long(&sc,
                             "SELECT count(*) FROM pg_stat_activity"
                             " WHERE datname = '%s' AND client_addr IS"
                             " NOT NULL",
                             sc.db) == 0,
                 "a TCP session of chargeonce in the database");
        printf("pg_%s: consume exited %d: %s\n", set_name[set], rc, want[1]);
        sim_stop(&s);
        sc_cleanup(&sc);
}

static void pg_wrong_host(void)
{
        static const char *const w[] = { "database connection",
                                         "does not match host name",
                                         "wrong.example", "localhost", NULL };
        pg_refused(WRONG, w);
}

static void pg_unknown_ca(void)
{
        static const char *const w[] = { "database connection",
                                         "SSL error: certificate verify failed",
                                         NULL };
        pg_refused(UNKNOWN, w);
}

static void on_kafka_error(rd_kafka_t *rk, int err, const char *reason,
                           void *opaque)
{
        (void)rk;
        (void)reason;
        if (err == RD_KAFKA_RESP_ERR__SSL ||
            err == RD_KAFKA_RESP_ERR__ALL_BROKERS_DOWN)
                *(bool *)opaque = true;
}

/*
 * Whether a client of the test's own, trusting CA A and checking the chain
 * but not the host name, gets the metadata of the broker's listener of set.
 */
static bool kafka_chain_ok(enum cert_set set)
{
        rd_kafka_conf_t *conf              = rd_kafka_conf_new();
        const struct rd_kafka_metadata *md = NULL;
        char err[512];
        rd_kafka_t *rk;
        bool ok = false, failed = false;

        SC_CHECK(
            rd_kafka_conf_set(conf, "bootstrap.servers", env(kafka_var[set]),
                              err, sizeof(err)) == RD_KAFKA_CONF_OK &&
                rd_kafka_conf_set(conf, "security.protocol", "SSL", err,
                                  sizeof(err)) == RD_KAFKA_CONF_OK &&
                rd_kafka_conf_set(conf, "ssl.ca.location",
                                  env("CHARGEONCE_TEST_TLS_CA"), err,
                                  sizeof(err)) == RD_KAFKA_CONF_OK &&
                rd_kafka_conf_set(conf, "ssl.endpoint.identification.algorithm",
                                  "none", err,
                                  sizeof(err)) == RD_KAFKA_CONF_OK &&
                rd_kafka_conf_set(conf, "log_level", "0", err, sizeof(err)) ==
                    RD_KAFKA_CONF_OK,
            "%s", err);
        rd_kafka_conf_set_error_cb(conf, on_kafka_error);
        rd_kafka_conf_set_opaque(conf, &failed);
        rk = rd_kafka_new(RD_KAFKA_PRODUCER, conf, err, sizeof(err));
        SC_CHECK(rk, "%s", err);
        /* until it answers or the handshake fails (the error callback) */
        for (int i = 0; i < 40 && !ok && !failed; i++) {
                ok = rd_kafka_metadata(rk, 0, NULL, &md, 500) ==
                     RD_KAFKA_RESP_ERR_NO_ERROR;
                if (md)
                        rd_kafka_metadata_destroy(md);
                md = NULL;
                rd_kafka_poll(rk, 0);
        }
        rd_kafka_destroy(rk);
        return ok;
}

/*
 * The broker's listener of a certificate chargeonce must refuse:
 * librdkafka's handshake fails, nothing is consumed, claimed or charged.
 * librdkafka words a wrong host and an unknown CA alike ("certificate
 * verify failed"), so a control tells them apart: the wrong host's
 * certificate passes a client that checks the chain only, the unknown
 * CA's does not.
 */
static void kafka_refused(enum cert_set set)
{
        struct scenario sc;
        struct sim s;
        struct co c;
        json_t *st;
        char where[128];
        const char *want[] = { where, "certificate verify failed",
                               "in state SSL_HANDSHAKE", NULL };

        snprintf(where, sizeof(where), "ssl://%s/bootstrap",
                 env(kafka_var[set]));
        SC_CHECK(kafka_chain_ok(set) == (set == WRONG),
                 "control: the chain of the %s certificate %s", set_name[set],
                 set == WRONG ? "is refused" : "is accepted");
        sc_init(&sc, "tls_kafka", 1);
        pg_use(RIGHT);
        sim_start(&sc, &s, sim_opts(RIGHT));
        produce_one(&sc, "tls-kafka-0001");
        co_start(&sc, &c, "consume", &s, tls_xs(&sc, set, NULL), NULL);
        SC_CHECK(wait_log(c.log, want, T_WAIT),
                 "librdkafka's handshake error on %s is not in the log", where);
        /* a few more seconds to get something through, if it could */
        sleep_ms(3000);
        SC_CHECK(!sc_wait_consumed(&sc, 1000), "the intent was consumed");
        SC_CHECK(sc_sql_long(&sc, "SELECT count(*) FROM payments") == 0,
                 "a payment was claimed");
        st = sim_stats(&s);
        SC_CHECK(sim_stat(st, "posts") == 0, "the gateway was called");
        json_decref(st);
        printf("kafka_%s: handshake refused on %s (certificate verify "
               "failed); nothing consumed\n",
               set_name[set], where);
        (void)co_stop(&c, SIGTERM, 30000);
        sim_stop(&s);
        sc_cleanup(&sc);
}

static void kafka_wrong_host(void)
{
        kafka_refused(WRONG);
}

static void kafka_unknown_ca(void)
{
        kafka_refused(UNKNOWN);
}

/*
 * A gateway whose certificate chargeonce must refuse: the call fails in
 * the handshake (curl's words logged), nothing reaches the gateway, and
 * the payment is never marked failed: a call that failed before anything
 * was sent is no evidence, so it stays processing for the reconciler.
 */
static void gateway_refused(enum cert_set set, const char *const *want)
{
        struct scenario sc;
        struct sim s;
        struct co c;
        json_t *st;
        const char *status;

        sc_init(&sc, "tls_gw", 1);
        pg_use(RIGHT);
        sim_start(&sc, &s, sim_opts(set));
        co_start(&sc, &c, "consume", &s, tls_xs(&sc, RIGHT, NULL), NULL);
        produce_one(&sc, "tls-gw-0001");
        SC_CHECK(wait_log(c.log, want, T_WAIT),
                 "curl's certificate error (%s) is not in the log", want[1]);
        /* the pipeline is done with the intent: its attempts are spent */
        SC_CHECK(sc_wait_consumed(&sc, T_WAIT), "the intent was not consumed");
        status = sc_sql(&sc, "SELECT status FROM payments");
        SC_CHECK(status && !strcmp(status, "processing"),
                 "payment status %s, want processing", status ? status : "-");
        SC_CHECK(sc_sql_long(&sc, "SELECT count(*) FROM outbox") == 0,
                 "a result was written");
        st = sim_stats(&s);
        SC_CHECK(sim_stat(st, "posts") == 0 && sim_stat(st, "charges") == 0,
                 "the gateway was reached: %ld posts", sim_stat(st, "posts"));
        json_decref(st);
        SC_CHECK(co_stop(&c, SIGTERM, 60000) == 0, "no clean exit");
        printf("gateway_%s: %s; payment left processing, nothing charged\n",
               set_name[set], want[1]);
        sim_stop(&s);
        sc_cleanup(&sc);
}

static void gateway_wrong_host(void)
{
        static const char *const w[] = {
                "transport error: tls",
                "no alternative certificate subject name matches target host "
                "name '127.0.0.1'",
                NULL
        };
        gateway_refused(WRONG, w);
}

static void gateway_unknown_ca(void)
{
        static const char *const w[] = {
                "transport error: tls",
                "SSL certificate problem: unable to get local issuer "
                "certificate",
                NULL
        };
        gateway_refused(UNKNOWN, w);
}

static const struct test_case cases[] = {
        { "verified", verified, NULL, NULL },
        { "pg_wrong_host", pg_wrong_host, NULL, NULL },
        { "pg_unknown_ca", pg_unknown_ca, NULL, NULL },
        { "kafka_wrong_host", kafka_wrong_host, NULL, NULL },
        { "kafka_unknown_ca", kafka_unknown_ca, NULL, NULL },
        { "gateway_wrong_host", gateway_wrong_host, NULL, NULL },
        { "gateway_unknown_ca", gateway_unknown_ca, NULL, NULL },
};

int main(int argc, char **argv)
{
        static const struct test_suite suite = {
                "test_tls", cases, sizeof(cases) / sizeof(cases[0]),
                tls_setup,  NULL,  NULL,
                false,
        };
        return cases_main(&suite, argc, argv);
}
