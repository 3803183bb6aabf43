/* SPDX-License-Identifier: Apache-2.0 */
/* scenario: end-to-end test building blocks (see scenario.h). */
#include "scenario.h"
#include "testenv.h"
#include "util/uuid.h"

#include <curl/curl.h>
#include <errno.h>
#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define MAX_LOGS 32
static char logs[MAX_LOGS][300];
static int n_logs;
static pid_t children[MAX_LOGS];
static int n_children;
/* chargeonce processes that should be running: one that ends by itself
 * fails the wait it is noticed in, instead of a long time-out */
static struct co *running[MAX_LOGS];

static int64_t now_ms(void)
{
        struct timespec ts;
        clock_gettime(CLOCK_MONOTONIC, &ts);
        return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static void sleep_ms(int ms)
{
        struct timespec ts = { ms / 1000, (long)(ms % 1000) * 1000000L };
        nanosleep(&ts, NULL);
}

static void remember_log(const char *path)
{
        if (n_logs < MAX_LOGS)
                snprintf(logs[n_logs++], sizeof(logs[0]), "%s", path);
}

static void remember_child(pid_t pid)
{
        if (n_children < MAX_LOGS)
                children[n_children++] = pid;
}

void sc_fail_dump(void)
{
        for (int i = 0; i < n_logs; i++) {
                char cmd[400];
                fprintf(stderr, "----- last lines of %s -----\n", logs[i]);
                snprintf(cmd, sizeof(cmd), "tail -n 40 '%.300s' >&2", logs[i]);
                if (system(cmd) != 0)
                        fprintf(stderr, "(unreadable)\n");
        }
        for (int i = 0; i < n_children; i++)
                kill(children[i], SIGKILL);
}

/* ------------------------------------------------------------------ */

/* Under CHARGEONCE_TEST_LOG_ROOT (set by tests/harness/run-ctest.sh) the
 * scenario's folder, with every process's log, outlives the test: the run
 * scans all of them for card data and secrets, then removes them. */
static const char *log_root(void)
{
        const char *r = getenv("CHARGEONCE_TEST_LOG_ROOT");
        return r && *r ? r : NULL;
}

void sc_init(struct scenario *sc, const char *name, int partitions)
{
        char tmpl[200];
        char uniq[96];
        char err[512];
        rd_kafka_conf_t *conf;

        memset(sc, 0, sizeof(*sc));
        snprintf(sc->name, sizeof(sc->name), "%s", name);
        sc->partitions = partitions;
        snprintf(tmpl, sizeof(tmpl), "%.150s/co-scenario-XXXXXX",
                 log_root() ? log_root() : "/tmp");
        SC_CHECK(mkdtemp(tmpl), "mkdtemp %s", tmpl);
        snprintf(sc->dir, sizeof(sc->dir), "%s", tmpl);
        SC_CHECK(testenv_db_create(name, sc->db, sizeof(sc->db), sc->conninfo,
                                   sizeof(sc->conninfo)) == 0,
                 "create database");
        SC_CHECK(testenv_migrate(sc->conninfo) == 0, "migrate");
        sc->pg = PQconnectdb(sc->conninfo);
        SC_CHECK(PQstatus(sc->pg) == CONNECTION_OK, "connect: %s",
                 PQerrorMessage(sc->pg));
        /* the same scenario with the payments' own results stored compact
         * (0028; the test's _compact variant in CMake) */
        if (getenv("CHARGEONCE_TEST_COMPACT_RESULTS") &&
            !strcmp(getenv("CHARGEONCE_TEST_COMPACT_RESULTS"), "1")) {
                PGresult *res = PQexec(sc->pg, "UPDATE result_format"
                                               " SET compact = true");
                SC_CHECK(PQresultStatus(res) == PGRES_COMMAND_OK,
                         "compact results: %s", PQresultErrorMessage(res));
                PQclear(res);
                printf("%s: compact results on\n", name);
        }
        testenv_unique(name, uniq, sizeof(uniq));
        snprintf(sc->t_intents, sizeof(sc->t_intents), "%s.intents", uniq);
        snprintf(sc->t_results, sizeof(sc->t_results), "%s.results", uniq);
        snprintf(sc->t_dlq, sizeof(sc->t_dlq), "%s.dlq", uniq);
        snprintf(sc->group, sizeof(sc->group), "%s.group", uniq);
        SC_CHECK(testenv_topic_create(sc->t_intents, partitions) == 0,
                 "create %s", sc->t_intents);
        SC_CHECK(testenv_topic_create(sc->t_results, partitions) == 0,
                 "create %s", sc->t_results);
        SC_CHECK(testenv_topic_create(sc->t_dlq, 1) == 0, "create %s",
                 sc->t_dlq);
        conf = testenv_kafka_conf();
        rd_kafka_conf_set(conf, "enable.idempotence", "true", err, sizeof(err));
        rd_kafka_conf_set(conf, "linger.ms", "5", err, sizeof(err));
        sc->producer = rd_kafka_new(RD_KAFKA_PRODUCER, conf, err, sizeof(err));
        SC_CHECK(sc->producer, "producer: %s", err);
        curl_global_init(CURL_GLOBAL_DEFAULT);
}

bool sc_header(const char *headers, const char *name, char *out, size_t outsz)
{
        size_t nl     = strlen(name);
        const char *p = headers;

        while (p && *p) {
                const char *e = strchr(p, '\n');
                size_t len    = e ? (size_t)(e - p) : strlen(p);

                if (len > nl && !strncmp(p, name, nl) && p[nl] == '=') {
                        snprintf(out, outsz, "%.*s", (int)(len - nl - 1),
                                 p + nl + 1);
                        return true;
                }
                p = e ? e + 1 : NULL;
        }
        return false;
}

/* Every message on the results topic of a row stored compact is a result
 * built from the row: its event id, status, payment and tenant, the
 * contract's first member first; every published compact row is there
 * (a scenario without a relay publishes none, and reads no topic). */
static void compact_on_topic(struct scenario *sc)
{
        PGresult *res =
            PQexec(sc->pg, "SELECT event_id, status, payment_id,"
                           " tenant_id FROM outbox"
                           " WHERE detail IS NOT NULL AND" SC_PUBLISHED);
        struct sc_msg *m;
        size_t nm;
        int n = 0;
        char *seen;

        SC_CHECK(PQresultStatus(res) == PGRES_TUPLES_OK, "%s",
                 PQresultErrorMessage(res));
        if (PQntuples(res) == 0) {
                PQclear(res);
                return;
        }
        seen = calloc((size_t)PQntuples(res), 1);
        SC_CHECK(seen, "oom");
        nm = sc_read_topic(sc, sc->t_results, 1500, &m);
        for (size_t i = 0; i < nm; i++) {
                char eid[64], want[256];

                if (!sc_header(m[i].headers, "event_id", eid, sizeof(eid)))
                        continue;
                for (int r = 0; r < PQntuples(res); r++) {
                        if (strcmp(PQgetvalue(res, r, 0), eid) != 0)
                                continue;
                        SC_CHECK(m[i].value &&
                                     !strncmp(m[i].value,
                                              "{\"schema_version\":1,", 20),
                                 "compact row %s: %s", eid, m[i].value);
                        snprintf(want, sizeof(want), "\"event_id\":\"%s\",",
                                 eid);
                        SC_CHECK(strstr(m[i].value, want), "%s", want);
                        snprintf(want, sizeof(want), "\"status\":\"%s\",",
                                 PQgetvalue(res, r, 1));
                        SC_CHECK(strstr(m[i].value, want), "%s", want);
                        snprintf(want, sizeof(want), "\"payment_id\":\"%s\",",
                                 PQgetvalue(res, r, 2));
                        SC_CHECK(strstr(m[i].value, want), "%s", want);
                        snprintf(want, sizeof(want), "\"tenant_id\":\"%s\",",
                                 PQgetvalue(res, r, 3));
                        SC_CHECK(strstr(m[i].value, want), "%s", want);
                        n += !seen[r];
                        seen[r] = 1;
                }
        }
        printf("%s: %d published compact row(s) of %d checked on the "
               "topic\n",
               sc->name, n, PQntuples(res));
        SC_CHECK(n == PQntuples(res),
                 "%d published compact row(s) of %d on "
                 "the results topic",
                 n, PQntuples(res));
        free(seen);
        sc_messages_free(m, nm);
        PQclear(res);
}

/* In a _compact variant: every result of a payment's own (not a replay)
 * that chargeonce built was stored compact, and there was at least one.
 * (A fixture's placeholder result, settled by a test through the store
 * without a detail, has no occurred_at: stored whole, as it must be.) */
static void compact_checked(struct scenario *sc)
{
        const char *v = getenv("CHARGEONCE_TEST_COMPACT_RESULTS");
        long compact, whole;

        if (!v || strcmp(v, "1") != 0)
                return;
        compact = sc_sql_long(sc, "SELECT count(*) FROM outbox"
                                  " WHERE detail IS NOT NULL");
        whole   = sc_sql_long(sc, "SELECT count(*) FROM outbox WHERE"
                                    " payload IS NOT NULL AND payment_id IS NOT"
                                    " NULL AND NOT replayed AND payload LIKE"
                                    " '%%\"occurred_at\":%%'");
        printf("%s: %ld result(s) stored compact, %ld payment result(s) "
               "whole\n",
               sc->name, compact, whole);
        SC_CHECK(compact > 0 && whole == 0,
                 "compact results: %ld compact, %ld payment result(s) whole",
                 compact, whole);
        compact_on_topic(sc);
}

void sc_cleanup(struct scenario *sc)
{
        char cmd[400];

        compact_checked(sc);
        if (sc->producer) {
                rd_kafka_flush(sc->producer, 5000);
                rd_kafka_destroy(sc->producer);
        }
        PQfinish(sc->pg);
        testenv_db_drop(sc->db);
        snprintf(cmd, sizeof(cmd), "rm -rf '%s'", sc->dir);
        if (!log_root() && system(cmd) != 0)
                fprintf(stderr, "could not remove %s\n", sc->dir);
        snprintf(cmd, sizeof(cmd), "rm -rf '%s'", sc->secrets);
        if (sc->secrets[0] && system(cmd) != 0)
                fprintf(stderr, "could not remove %s\n", sc->secrets);
        curl_global_cleanup();
}

/* ------------------------------------------------------------------ */
/* child processes                                                      */

static pid_t spawn(char *const argv[], char *const envp_extra[],
                   const char *log)
{
        pid_t pid = fork();
        SC_CHECK(pid >= 0, "fork");
        if (pid == 0) {
                int fd = open(log, O_WRONLY | O_CREAT | O_APPEND, 0644);
                if (fd >= 0) {
                        dup2(fd, 1);
                        dup2(fd, 2);
                        close(fd);
                }
                for (int i = 0; envp_extra && envp_extra[i]; i++)
                        putenv(envp_extra[i]);
                execv(argv[0], argv);
                fprintf(stderr, "exec %s: %s\n", argv[0], strerror(errno));
                _exit(127);
        }
        remember_child(pid);
        return pid;
}

static int wait_status(pid_t pid, int timeout_ms)
{
        int64_t end = now_ms() + timeout_ms;
        int st;
        do {
                pid_t r = waitpid(pid, &st, WNOHANG);
                if (r == pid) {
                        if (WIFEXITED(st))
                                return WEXITSTATUS(st);
                        if (WIFSIGNALED(st))
                                return 128 + WTERMSIG(st);
                        return -1;
                }
                if (r < 0)
                        return -1;
                sleep_ms(20);
        } while (now_ms() < end);
        return -2;
}

void sim_start(struct scenario *sc, struct sim *s, const char *opts)
{
        const char *bin = getenv("CHARGEONCE_SIM_BIN");
        char portfile[300], cmdline[2048], *argv[64], *save = NULL, *tok;
        int argc = 0;
        int64_t end;

        SC_CHECK(bin, "CHARGEONCE_SIM_BIN is not set");
        memset(s, 0, sizeof(*s));
        snprintf(portfile, sizeof(portfile), "%s/sim.port", sc->dir);
        snprintf(s->log, sizeof(s->log), "%s/sim.log", sc->dir);
        unlink(portfile);
        snprintf(cmdline, sizeof(cmdline), "%s --port 0 --port-file %s %s", bin,
                 portfile, opts ? opts : "");
        for (tok = strtok_r(cmdline, " ", &save); tok && argc < 63;
             tok = strtok_r(NULL, " ", &save))
                argv[argc++] = tok;
        argv[argc] = NULL;
        remember_log(s->log);
        s->pid = spawn(argv, NULL, s->log);
        end    = now_ms() + 10000;
        while (now_ms() < end) {
                FILE *f = fopen(portfile, "r");
                if (f) {
                        int ok = fscanf(f, "%d", &s->port);
                        fclose(f);
                        if (ok == 1 && s->port > 0)
                                break;
                }
                sleep_ms(20);
        }
        SC_CHECK(s->port > 0, "the simulator did not start");
        snprintf(s->url, sizeof(s->url), "%s://127.0.0.1:%d",
                 opts && strstr(opts, "--tls-cert") ? "https" : "http",
                 s->port);
}

void sim_stop(struct sim *s)
{
        if (s->pid > 0) {
                kill(s->pid, SIGTERM);
                if (wait_status(s->pid, 5000) == -2) {
                        kill(s->pid, SIGKILL);
                        wait_status(s->pid, 5000);
                }
                s->pid = 0;
        }
}

struct buf {
        char *p;
        size_t n;
};

static size_t on_body(char *d, size_t sz, size_t nm, void *u)
{
        struct buf *b = u;
        char *np      = realloc(b->p, b->n + sz * nm + 1);
        if (!np)
                return 0;
        b->p = np;
        memcpy(b->p + b->n, d, sz * nm);
        b->n += sz * nm;
        b->p[b->n] = '\0';
        return sz * nm;
}

static char *http(const char *method, const char *url, const char *body,
                  long *status)
{
        CURL *c              = curl_easy_init();
        struct buf b         = { NULL, 0 };
        struct curl_slist *h = NULL;
        CURLcode rc;

        curl_easy_setopt(c, CURLOPT_URL, url);
        curl_easy_setopt(c, CURLOPT_CUSTOMREQUEST, method);
        curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, on_body);
        curl_easy_setopt(c, CURLOPT_WRITEDATA, &b);
        curl_easy_setopt(c, CURLOPT_TIMEOUT_MS, 10000L);
        /* the test reading its own simulator's ground truth, also when
         * the simulator serves a certificate chargeonce must refuse
         * (tests/tls): no certificate check here, on purpose */
        curl_easy_setopt(c, CURLOPT_SSL_VERIFYPEER, 0L);
        curl_easy_setopt(c, CURLOPT_SSL_VERIFYHOST, 0L);
        if (body) {
                h = curl_slist_append(h, "Content-Type: application/json");
                curl_easy_setopt(c, CURLOPT_HTTPHEADER, h);
                curl_easy_setopt(c, CURLOPT_POSTFIELDS, body);
        }
        rc      = curl_easy_perform(c);
        *status = 0;
        if (rc == CURLE_OK)
                curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, status);
        curl_slist_free_all(h);
        curl_easy_cleanup(c);
        return b.p;
}

char *sc_scrape(const char *url)
{
        for (int i = 0; i < 200; i++) {
                long st = 0;
                char *t = http("GET", url, NULL, &st);

                if (st == 200)
                        return t ? t : calloc(1, 1);
                free(t);
                sleep_ms(100);
        }
        SC_CHECK(false, "GET %s never answered 200", url);
        return NULL;
}

int sc_free_port(void)
{
        struct sockaddr_in a = { 0 };
        socklen_t len        = sizeof(a);
        int fd               = socket(AF_INET, SOCK_STREAM, 0), port;

        SC_CHECK(fd >= 0, "socket");
        a.sin_family      = AF_INET;
        a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
        SC_CHECK(bind(fd, (struct sockaddr *)&a, sizeof(a)) == 0 &&
                     getsockname(fd, (struct sockaddr *)&a, &len) == 0,
                 "bind a free port");
        port = ntohs(a.sin_port);
        close(fd);
        return port;
}

void sim_config(const struct sim *s, const char *json)
{
        char url[128];
        long st;
        snprintf(url, sizeof(url), "%s/_sim/config", s->url);
        free(http("POST", url, json, &st));
        SC_CHECK(st == 200, "sim config %s: HTTP %ld", json, st);
}

void sim_reset(const struct sim *s)
{
        char url[128];
        long st;
        snprintf(url, sizeof(url), "%s/_sim/reset", s->url);
        free(http("POST", url, "{}", &st));
        SC_CHECK(st == 200, "sim reset: HTTP %ld", st);
}

json_t *sim_stats(const struct sim *s)
{
        char url[128];
        long st;
        char *body;
        json_t *j;
        json_error_t e;

        snprintf(url, sizeof(url), "%s/_sim/stats", s->url);
        body = http("GET", url, NULL, &st);
        SC_CHECK(st == 200 && body, "sim stats: HTTP %ld", st);
        j = json_loads(body, 0, &e);
        free(body);
        SC_CHECK(j, "sim stats: %s", e.text);
        return j;
}

long sim_stat(json_t *stats, const char *field)
{
        const char *dot = strchr(field, '.');
        json_t *v;

        if (dot) { /* "webhooks.delivered": one level down */
                char top[64];

                snprintf(top, sizeof(top), "%.*s", (int)(dot - field), field);
                stats = json_object_get(stats, top);
                field = dot + 1;
        }
        v = json_object_get(stats, field);
        SC_CHECK(json_is_integer(v), "sim stats: no %s", field);
        return (long)json_integer_value(v);
}

static long charges_where(json_t *stats, const char *list, const char *k1,
                          const char *v1, const char *k2, const char *v2)
{
        json_t *arr = json_object_get(stats, list), *row;
        size_t i;
        SC_CHECK(json_is_array(arr), "sim stats: no %s", list);
        json_array_foreach(arr, i, row)
        {
                const char *a = json_string_value(json_object_get(row, k1));
                const char *b =
                    k2 ? json_string_value(json_object_get(row, k2)) : NULL;
                if (a && !strcmp(a, v1) && (!k2 || (b && !strcmp(b, v2))))
                        return (long)json_integer_value(
                            json_object_get(row, "charges"));
        }
        return 0;
}

long sim_charges_order(json_t *stats, const char *tenant, const char *order)
{
        return charges_where(stats, "by_order", "tenant_id", tenant, "order_id",
                             order);
}

long sim_charges_reference(json_t *stats, const char *reference)
{
        return charges_where(stats, "by_reference", "reference", reference,
                             NULL, NULL);
}

static void running_add(struct co *c)
{
        for (int i = 0; i < MAX_LOGS; i++)
                if (!running[i]) {
                        running[i] = c;
                        return;
                }
}

static void running_del(struct co *c)
{
        for (int i = 0; i < MAX_LOGS; i++)
                if (running[i] == c)
                        running[i] = NULL;
}

/* Fails the test if a chargeonce child ended without being asked to. */
static void check_running(void)
{
        for (int i = 0; i < MAX_LOGS; i++) {
                struct co *c = running[i];
                int st;
                if (!c || c->pid <= 0)
                        continue;
                if (waitpid(c->pid, &st, WNOHANG) == c->pid) {
                        c->pid     = 0;
                        running[i] = NULL;
                        SC_CHECK(0, "chargeonce (%s) ended by itself: %s %d",
                                 c->log, WIFEXITED(st) ? "exit" : "signal",
                                 WIFEXITED(st) ? WEXITSTATUS(st)
                                               : WTERMSIG(st));
                }
        }
}

void sc_secret_file(struct scenario *sc, const char *name, const char *value,
                    char *path, size_t pathsz)
{
        size_t len = strlen(value);
        char aside[600];
        int fd;

        if (!sc->secrets[0]) {
                const char *tmp = getenv("TMPDIR");

                snprintf(sc->secrets, sizeof(sc->secrets),
                         "%.200s/co-secrets-XXXXXX",
                         tmp && *tmp ? tmp : "/tmp");
                SC_CHECK(mkdtemp(sc->secrets), "mkdtemp %s", sc->secrets);
        }
        snprintf(path, pathsz, "%s/%s", sc->secrets, name);
        snprintf(aside, sizeof(aside), "%s.%ld.tmp", path, (long)getpid());
        /* written aside, then renamed over: a process started a moment
         * earlier may be reading the file (a truncated one would read
         * empty) */
        fd = open(aside, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
        SC_CHECK(fd >= 0 && write(fd, value, len) == (ssize_t)len &&
                     close(fd) == 0 && rename(aside, path) == 0,
                 "secret file %s: %s", path, strerror(errno));
}

void co_start(struct scenario *sc, struct co *c, const char *command,
              const struct sim *s, const char *const *xs,
              const char *const *env)
{
        const char *bin = getenv("CHARGEONCE_BIN");
        static char args[64][1200];
        char *argv[80];
        char *envv[32];
        char f_conninfo[300], f_pk[300], f_api[300];
        int a = 0, e = 0;
        static int seq;

#define ARG(...)                                                               \
        do {                                                                   \
                snprintf(args[a], sizeof(args[a]), __VA_ARGS__);               \
                argv[a] = args[a];                                             \
                a++;                                                           \
        } while (0)
#define X(...)                                                                 \
        do {                                                                   \
                ARG("-X");                                                     \
                ARG(__VA_ARGS__);                                              \
        } while (0)

        SC_CHECK(bin, "CHARGEONCE_BIN is not set");
        memset(c, 0, sizeof(*c));
        snprintf(c->log, sizeof(c->log), "%s/chargeonce-%s-%d.log", sc->dir,
                 command, ++seq);
        /* secrets through files, as production mode wants them (later
         * -X in xs still win) */
        sc_secret_file(sc, "conninfo", sc->conninfo, f_conninfo,
                       sizeof(f_conninfo));
        sc_secret_file(sc, "provider_key", "test-provider-key-secret", f_pk,
                       sizeof(f_pk));
        sc_secret_file(sc, "api_key", "sk_test_chargeonce", f_api,
                       sizeof(f_api));
        ARG("%s", bin);
        X("db.conninfo_file=%s", f_conninfo);
        X("kafka.bootstrap.servers=%s", testenv_kafka());
        X("kafka.consumer.auto.commit.interval.ms=200");
        X("kafka.consumer.session.timeout.ms=10000");
        X("kafka.topic.metadata.refresh.interval.ms=2000");
        X("topic.intents=%s", sc->t_intents);
        X("topic.results=%s", sc->t_results);
        X("topic.dlq=%s", sc->t_dlq);
        X("group.id=%s", sc->group);
        X("provider_key.secret_file=%s", f_pk);
        X("gateway.api_key_file=%s", f_api);
        X("gateway.url=%s", s ? s->url : "http://127.0.0.1:9");
        X("gateway.backoff_base=20ms");
        X("gateway.backoff_max=500ms");
        X("gateway.timeout=3s");
        X("gateway.connect_timeout=1s");
        X("log.level=%s", getenv("CHARGEONCE_TEST_LOG_LEVEL")
                              ? getenv("CHARGEONCE_TEST_LOG_LEVEL")
                              : "info");
        /* never the default port: tests run side by side (xs may name
         * a port of its own, later -X win) */
        X("http.listen=127.0.0.1:0");
        for (int i = 0; xs && xs[i]; i++)
                X("%s", xs[i]);
        ARG("%s", command);
        argv[a] = NULL;
        for (int i = 0; env && env[i] && e < 31; i++)
                envv[e++] = (char *)(uintptr_t)env[i];
        envv[e] = NULL;
        remember_log(c->log);
        c->pid = spawn(argv, envv, c->log);
        running_add(c);
#undef X
#undef ARG
}

int co_stop(struct co *c, int sig, int timeout_ms)
{
        int r;
        running_del(c);
        if (c->pid <= 0)
                return -1;
        kill(c->pid, sig);
        r = wait_status(c->pid, timeout_ms);
        if (r == -2) {
                kill(c->pid, SIGKILL);
                wait_status(c->pid, 5000);
                r = -1;
        }
        c->pid = 0;
        return r;
}

int co_wait(struct co *c, int timeout_ms)
{
        int r;
        running_del(c);
        r = wait_status(c->pid, timeout_ms);
        if (r == -2)
                return -1;
        c->pid = 0;
        return r;
}

bool co_alive(struct co *c)
{
        int st;
        if (c->pid <= 0)
                return false;
        if (waitpid(c->pid, &st, WNOHANG) == c->pid) {
                c->pid = 0;
                return false;
        }
        return true;
}

bool co_log_has(struct co *c, const char *needle)
{
        FILE *f = fopen(c->log, "r");
        char line[4096];
        bool found = false;

        while (f && !found && fgets(line, sizeof(line), f))
                found = strstr(line, needle) != NULL;
        if (f)
                fclose(f);
        return found;
}

int co_http_port(struct co *c)
{
        for (int i = 0; i < 400; i++) {
                FILE *f = fopen(c->log, "r");
                char line[4096];
                int port = 0;

                while (f && fgets(line, sizeof(line), f)) {
                        const char *p = strstr(line, "listening on 127.0.0.1:");
                        if (p)
                                port = atoi(p + strlen("listening on "
                                                       "127.0.0.1:"));
                }
                if (f)
                        fclose(f);
                if (port > 0)
                        return port;
                SC_CHECK(co_alive(c), "chargeonce ended before listening");
                sleep_ms(50);
        }
        SC_CHECK(false, "chargeonce never logged its http port");
        return 0;
}

/* ------------------------------------------------------------------ */
/* intents                                                              */

char *sc_intent_json(const struct intent_spec *is, char *event_id_out)
{
        char eid[UUID_STR_LEN];
        json_t *o;
        char *s;

        if (is->event_id)
                snprintf(eid, sizeof(eid), "%s", is->event_id);
        else
                SC_CHECK(uuid_v4(eid), "uuid");
        if (event_id_out)
                memcpy(event_id_out, eid, UUID_STR_LEN);
        o = json_pack("{s:i, s:s, s:s, s:s, s:s, s:s, s:I, s:s, s:s, s:s}",
                      "schema_version", 1, "event_id", eid, "tenant_id",
                      is->tenant, "idempotency_key", is->key, "order_id",
                      is->order, "customer_id", "cust-1", "amount",
                      (json_int_t)is->amount, "currency",
                      is->currency ? is->currency : "VND", "payment_method",
                      is->method ? is->method : "pm_tok_ok", "occurred_at",
                      "2026-11-29T10:47:03Z");
        SC_CHECK(o, "json_pack");
        s = json_dumps(o, JSON_COMPACT);
        json_decref(o);
        return s;
}

void sc_produce(struct scenario *sc, int partition, const char *key,
                const char *value, size_t len)
{
        rd_kafka_resp_err_t err;
        for (int tries = 0;; tries++) {
                err = rd_kafka_producev(
                    sc->producer, RD_KAFKA_V_TOPIC(sc->t_intents),
                    RD_KAFKA_V_PARTITION(partition < 0 ? RD_KAFKA_PARTITION_UA
                                                       : partition),
                    RD_KAFKA_V_KEY(key, key ? strlen(key) : 0),
                    RD_KAFKA_V_VALUE((void *)(uintptr_t)value, len),
                    RD_KAFKA_V_MSGFLAGS(RD_KAFKA_MSG_F_COPY), RD_KAFKA_V_END);
                if (err != RD_KAFKA_RESP_ERR__QUEUE_FULL || tries > 100)
                        break;
                rd_kafka_poll(sc->producer, 100);
        }
        SC_CHECK(!err, "produce: %s", rd_kafka_err2str(err));
        rd_kafka_poll(sc->producer, 0);
}

void sc_produce_intent(struct scenario *sc, int partition,
                       const struct intent_spec *is, char *event_id_out)
{
        char key[600];
        char *v = sc_intent_json(is, event_id_out);
        snprintf(key, sizeof(key), "%s/%s", is->tenant, is->key);
        sc_produce(sc, partition, key, v, strlen(v));
        free(v);
}

void sc_flush(struct scenario *sc)
{
        SC_CHECK(rd_kafka_flush(sc->producer, 30000) == 0, "flush");
}

/* ------------------------------------------------------------------ */
/* waiting and truth                                                    */

bool sc_wait_consumed(struct scenario *sc, int timeout_ms)
{
        char err[512];
        rd_kafka_conf_t *conf = testenv_kafka_conf();
        rd_kafka_t *rk;
        int64_t end = now_ms() + timeout_ms;
        bool ok     = false;

        rd_kafka_conf_set(conf, "group.id", sc->group, err, sizeof(err));
        rk = rd_kafka_new(RD_KAFKA_CONSUMER, conf, err, sizeof(err));
        SC_CHECK(rk, "%s", err);
        while (!ok && now_ms() < end) {
                check_running();
                rd_kafka_topic_partition_list_t *l =
                    rd_kafka_topic_partition_list_new(sc->partitions);
                ok = true;
                for (int p = 0; p < sc->partitions; p++)
                        rd_kafka_topic_partition_list_add(l, sc->t_intents, p);
                if (rd_kafka_committed(rk, l, 5000) != 0)
                        ok = false;
                for (int p = 0; ok && p < sc->partitions; p++) {
                        int64_t lo, hi;
                        if (rd_kafka_query_watermark_offsets(
                                rk, sc->t_intents, p, &lo, &hi, 5000) ||
                            (hi > 0 && l->elems[p].offset < hi))
                                ok = false;
                }
                rd_kafka_topic_partition_list_destroy(l);
                if (!ok)
                        sleep_ms(200);
        }
        rd_kafka_destroy(rk);
        return ok;
}

/* Waits until everything is consumed, final, and published. */
void sc_wait_finished(struct scenario *sc, int timeout_ms)
{
        SC_CHECK(sc_wait_consumed(sc, timeout_ms), "intents not consumed");
        SC_CHECK(sc_wait_sql(sc,
                             "SELECT NOT EXISTS (SELECT 1 FROM payments WHERE"
                             " status = 'processing')",
                             timeout_ms),
                 "%ld payments still processing",
                 sc_sql_long(sc, "SELECT count(*) FROM payments WHERE status"
                                 " = 'processing'"));
        SC_CHECK(
            sc_wait_sql(
                sc,
                "SELECT NOT EXISTS (SELECT 1 FROM outbox WHERE" SC_UNPUBLISHED
                ")",
                timeout_ms),
            "%ld outbox rows not published",
            sc_sql_long(sc,
                        "SELECT count(*) FROM outbox WHERE" SC_UNPUBLISHED));
}

bool sc_wait_sql(struct scenario *sc, const char *sql, int timeout_ms)
{
        int64_t end = now_ms() + timeout_ms;
        do {
                check_running();
                if (PQstatus(sc->pg) != CONNECTION_OK)
                        PQreset(sc->pg);
                const char *v = testenv_pg_value(sc->pg, sql);
                if (v && !strcmp(v, "t"))
                        return true;
                sleep_ms(100);
        } while (now_ms() < end);
        return false;
}

static const char *vsql(struct scenario *sc, const char *fmt, va_list ap)
{
        char sql[8192];
        /* a PostgreSQL restart (soak) breaks the test's own connection */
        if (PQstatus(sc->pg) != CONNECTION_OK)
                PQreset(sc->pg);
        vsnprintf(sql, sizeof(sql), fmt, ap);
        return testenv_pg_value(sc->pg, sql);
}

const char *sc_sql(struct scenario *sc, const char *fmt, ...)
{
        va_list ap;
        const char *r;
        va_start(ap, fmt);
        r = vsql(sc, fmt, ap);
        va_end(ap);
        return r;
}

long sc_sql_long(struct scenario *sc, const char *fmt, ...)
{
        va_list ap;
        const char *r;
        va_start(ap, fmt);
        r = vsql(sc, fmt, ap);
        va_end(ap);
        SC_CHECK(r, "query gave no value");
        return atol(r);
}

/*
 * The n distinct intents of a run, each consumed, final, paid once (one
 * payment, one succeeded charge, none twice) and answered by exactly one
 * result that is not a replay; the invariant view empty.
 */
void sc_check_all_once(struct scenario *sc, struct sim *s, int n)
{
        json_t *st;

        SC_CHECK(sc_wait_consumed(sc, 120000), "not everything consumed");
        SC_CHECK(sc_wait_sql(sc,
                             "SELECT NOT EXISTS (SELECT 1 FROM payments"
                             " WHERE status = 'processing')",
                             60000),
                 "payments left processing");
        SC_CHECK(sc_sql_long(sc, "SELECT count(*) FROM payments") == n,
                 "%ld payments for %d intents",
                 sc_sql_long(sc, "SELECT count(*) FROM payments"), n);
        SC_CHECK(sc_sql_long(sc,
                             "SELECT count(*) FROM (SELECT tenant_id, idem_key"
                             " FROM outbox WHERE NOT replayed GROUP BY 1, 2"
                             " HAVING count(*) = 1) x") == n,
                 "not exactly one non-replayed result per intent");
        st = sim_stats(s);
        SC_CHECK(sim_stat(st, "double_charges") == 0, "%ld double charges",
                 sim_stat(st, "double_charges"));
        SC_CHECK(sim_stat(st, "succeeded_charges") == n, "%ld charges for %d",
                 sim_stat(st, "succeeded_charges"), n);
        json_decref(st);
        sc_check_invariants(sc);
}

void sc_check_invariants(struct scenario *sc)
{
        PGresult *res = PQexec(sc->pg, "SELECT * FROM invariant_violations");
        SC_CHECK(PQresultStatus(res) == PGRES_TUPLES_OK, "invariants: %s",
                 PQresultErrorMessage(res));
        if (PQntuples(res) > 0) {
                for (int r = 0; r < PQntuples(res) && r < 20; r++) {
                        for (int c = 0; c < PQnfields(res); c++)
                                fprintf(stderr, "%s=%s ", PQfname(res, c),
                                        PQgetvalue(res, r, c));
                        fprintf(stderr, "\n");
                }
        }
        SC_CHECK(PQntuples(res) == 0, "%d invariant violation(s)",
                 PQntuples(res));
        PQclear(res);
}

size_t sc_read_topic(struct scenario *sc, const char *topic, int idle_ms,
                     struct sc_msg **out)
{
        char err[512], group[160];
        rd_kafka_conf_t *conf = testenv_kafka_conf();
        rd_kafka_t *rk;
        rd_kafka_topic_partition_list_t *sub;
        size_t n = 0, cap = 64;
        struct sc_msg *msgs = calloc(cap, sizeof(*msgs));
        int64_t last        = now_ms();

        (void)sc;
        testenv_unique("reader", group, sizeof(group));
        rd_kafka_conf_set(conf, "group.id", group, err, sizeof(err));
        rd_kafka_conf_set(conf, "auto.offset.reset", "earliest", err,
                          sizeof(err));
        rd_kafka_conf_set(conf, "enable.auto.commit", "false", err,
                          sizeof(err));
        rk = rd_kafka_new(RD_KAFKA_CONSUMER, conf, err, sizeof(err));
        SC_CHECK(rk, "%s", err);
        rd_kafka_poll_set_consumer(rk);
        sub = rd_kafka_topic_partition_list_new(1);
        rd_kafka_topic_partition_list_add(sub, topic, RD_KAFKA_PARTITION_UA);
        rd_kafka_subscribe(rk, sub);
        rd_kafka_topic_partition_list_destroy(sub);
        /* the first assignment can take a few seconds */
        while (now_ms() - last < idle_ms + (n == 0 ? 8000 : 0)) {
                rd_kafka_message_t *m    = rd_kafka_consumer_poll(rk, 100);
                rd_kafka_headers_t *hdrs = NULL;
                if (!m)
                        continue;
                if (m->err) {
                        rd_kafka_message_destroy(m);
                        continue;
                }
                if (n == cap) {
                        cap *= 2;
                        msgs = realloc(msgs, cap * sizeof(*msgs));
                        SC_CHECK(msgs, "oom");
                }
                memset(&msgs[n], 0, sizeof(msgs[n]));
                msgs[n].key   = m->key ? strndup(m->key, m->key_len) : NULL;
                msgs[n].value = m->payload ? strndup(m->payload, m->len) : NULL;
                msgs[n].partition = m->partition;
                msgs[n].offset    = m->offset;
                if (rd_kafka_message_headers(m, &hdrs) == 0) {
                        size_t idx = 0, hl = 0, pos = 0;
                        const char *name;
                        const void *val;
                        char hb[2048];
                        while (!rd_kafka_header_get_all(hdrs, idx++, &name,
                                                        &val, &hl) &&
                               pos < sizeof(hb) - 1)
                                pos += (size_t)snprintf(
                                    hb + pos, sizeof(hb) - pos, "%s=%.*s\n",
                                    name, (int)hl, (const char *)val);
                        msgs[n].headers = strdup(hb);
                }
                n++;
                last = now_ms();
                rd_kafka_message_destroy(m);
        }
        rd_kafka_consumer_close(rk);
        rd_kafka_destroy(rk);
        *out = msgs;
        return n;
}

void sc_messages_free(struct sc_msg *m, size_t n)
{
        for (size_t i = 0; i < n; i++) {
                free(m[i].key);
                free(m[i].value);
                free(m[i].headers);
        }
        free(m);
}
