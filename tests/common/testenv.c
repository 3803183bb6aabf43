/* SPDX-License-Identifier: Apache-2.0 */
/* testenv: helpers shared by integration tests (see testenv.h). */
#include "testenv.h"
#include "util/crypto.h"

#include <dirent.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

bool testenv_have_services(void)
{
        if (getenv("CHARGEONCE_TEST_PG") && getenv("CHARGEONCE_TEST_KAFKA"))
                return true;
        fprintf(stderr, "SKIP: no services; run through "
                        "tests/harness/with-services (scripts/test.sh does)\n");
        return false;
}

const char *testenv_pg(void)
{
        return getenv("CHARGEONCE_TEST_PG");
}

const char *testenv_kafka(void)
{
        return getenv("CHARGEONCE_TEST_KAFKA");
}

void testenv_unique(const char *prefix, char *out, size_t outsz)
{
        unsigned char r[6];
        char hex[13];
        if (!crypto_random(r, sizeof(r)))
                abort();
        crypto_hex(r, sizeof(r), hex);
        snprintf(out, outsz, "%s_%d_%s", prefix, (int)getpid(), hex);
}

static int pg_exec(const char *conninfo, const char *sql)
{
        PGconn *c = PQconnectdb(conninfo);
        PGresult *res;
        int r = 0;

        if (PQstatus(c) != CONNECTION_OK) {
                fprintf(stderr, "testenv: connect: %s", PQerrorMessage(c));
                PQfinish(c);
                return -1;
        }
        res = PQexec(c, sql);
        if (PQresultStatus(res) != PGRES_COMMAND_OK &&
            PQresultStatus(res) != PGRES_TUPLES_OK) {
                fprintf(stderr, "testenv: %s: %s", sql,
                        PQresultErrorMessage(res));
                r = -1;
        }
        PQclear(res);
        PQfinish(c);
        return r;
}

int testenv_db_create(const char *prefix, char *dbname, size_t dbname_size,
                      char *conninfo, size_t conninfo_size)
{
        char sql[256];

        testenv_unique(prefix, dbname, dbname_size);
        snprintf(sql, sizeof(sql), "CREATE DATABASE %s", dbname);
        if (pg_exec(testenv_pg(), sql) < 0)
                return -1;
        snprintf(conninfo, conninfo_size, "%s dbname=%s", testenv_pg(), dbname);
        return 0;
}

void testenv_db_drop(const char *dbname)
{
        char sql[256];
        snprintf(sql, sizeof(sql), "DROP DATABASE IF EXISTS %s WITH (FORCE)",
                 dbname);
        (void)pg_exec(testenv_pg(), sql);
}

int testenv_migrate(const char *conninfo)
{
        const char *bin = getenv("CHARGEONCE_BIN");
        char cmd[2048];

        if (!bin) {
                fprintf(stderr, "testenv: CHARGEONCE_BIN is not set\n");
                return -1;
        }
        snprintf(cmd, sizeof(cmd), "'%s' -X 'db.conninfo=%s' migrate", bin,
                 conninfo);
        return system(cmd) == 0 ? 0 : -1;
}

rd_kafka_conf_t *testenv_kafka_conf(void)
{
        rd_kafka_conf_t *conf = rd_kafka_conf_new();
        char err[256];
        if (rd_kafka_conf_set(conf, "bootstrap.servers", testenv_kafka(), err,
                              sizeof(err)) != RD_KAFKA_CONF_OK)
                abort();
        return conf;
}

static bool topic_ready(rd_kafka_t *rk, const char *topic, int partitions)
{
        const struct rd_kafka_metadata *md = NULL;
        rd_kafka_topic_t *rkt = rd_kafka_topic_new(rk, topic, NULL);
        bool ok               = false;

        if (rd_kafka_metadata(rk, 0, rkt, &md, 5000) ==
                RD_KAFKA_RESP_ERR_NO_ERROR &&
            md->topic_cnt == 1 && !md->topics[0].err &&
            md->topics[0].partition_cnt == partitions) {
                ok = true;
                for (int i = 0; i < partitions; i++)
                        if (md->topics[0].partitions[i].leader < 0)
                                ok = false;
        }
        if (md)
                rd_kafka_metadata_destroy(md);
        rd_kafka_topic_destroy(rkt);
        return ok;
}

int testenv_topic_create(const char *topic, int partitions)
{
        char err[512];
        rd_kafka_t *rk;
        rd_kafka_NewTopic_t *nt;
        rd_kafka_queue_t *q;
        rd_kafka_event_t *ev;
        int r = -1;

        rk = rd_kafka_new(RD_KAFKA_PRODUCER, testenv_kafka_conf(), err,
                          sizeof(err));
        if (!rk) {
                fprintf(stderr, "testenv: rd_kafka_new: %s\n", err);
                return -1;
        }
        nt = rd_kafka_NewTopic_new(topic, partitions, 1, err, sizeof(err));
        q  = rd_kafka_queue_new(rk);
        rd_kafka_CreateTopics(rk, &nt, 1, NULL, q);
        ev = rd_kafka_queue_poll(q, 30000);
        if (ev) {
                size_t cnt;
                const rd_kafka_CreateTopics_result_t *res =
                    rd_kafka_event_CreateTopics_result(ev);
                const rd_kafka_topic_result_t **tr =
                    res ? rd_kafka_CreateTopics_result_topics(res, &cnt) : NULL;
                if (rd_kafka_event_error(ev))
                        fprintf(stderr, "testenv: CreateTopics: %s\n",
                                rd_kafka_event_error_string(ev));
                else if (tr && cnt == 1 &&
                         (rd_kafka_topic_result_error(tr[0]) ==
                              RD_KAFKA_RESP_ERR_NO_ERROR ||
                          rd_kafka_topic_result_error(tr[0]) ==
                              RD_KAFKA_RESP_ERR_TOPIC_ALREADY_EXISTS))
                        r = 0;
                else if (tr && cnt == 1)
                        fprintf(stderr, "testenv: CreateTopics %s: %s\n", topic,
                                rd_kafka_topic_result_error_string(tr[0]));
                rd_kafka_event_destroy(ev);
        } else {
                fprintf(stderr, "testenv: CreateTopics timed out\n");
        }
        for (int i = 0;
             r == 0 && i < 150 && !topic_ready(rk, topic, partitions); i++)
                usleep(100 * 1000);
        if (r == 0 && !topic_ready(rk, topic, partitions)) {
                fprintf(stderr, "testenv: topic %s has no leaders\n", topic);
                r = -1;
        }
        rd_kafka_queue_destroy(q);
        rd_kafka_NewTopic_destroy(nt);
        rd_kafka_destroy(rk);
        return r;
}

const char *testenv_pg_value(PGconn *conn, const char *sql)
{
        static char buf[4096];
        PGresult *res = PQexec(conn, sql);
        const char *r = NULL;

        if (PQresultStatus(res) == PGRES_TUPLES_OK && PQntuples(res) >= 1 &&
            !PQgetisnull(res, 0, 0)) {
                snprintf(buf, sizeof(buf), "%s", PQgetvalue(res, 0, 0));
                r = buf;
        } else if (PQresultStatus(res) != PGRES_TUPLES_OK) {
                fprintf(stderr, "testenv: %s: %s", sql,
                        PQresultErrorMessage(res));
        }
        PQclear(res);
        return r;
}

/* the receiver running, stopped at exit too (a failed check exits) */
static pid_t wal_pid;
static char wal_dir[512];

static void wal_receiver_at_exit(void)
{
        if (wal_pid > 0)
                testenv_wal_receiver_stop(wal_pid, wal_dir);
}

/* Has the receiver named name flushed the WAL up to lsn? */
static bool wal_receiver_flushed(PGconn *c, const char *name, const char *lsn)
{
        const char *v[2] = { name, lsn };
        PGresult *r      = PQexecParams(
                 c,
                 "SELECT count(*) > 0 FROM pg_stat_replication"
                      " WHERE application_name = $1 AND flush_lsn >= $2::pg_lsn",
                 2, NULL, v, NULL, NULL, 0);
        bool ok = PQresultStatus(r) == PGRES_TUPLES_OK && PQntuples(r) == 1 &&
                  !strcmp(PQgetvalue(r, 0, 0), "t");

        PQclear(r);
        return ok;
}

pid_t testenv_wal_receiver_start(char *dir, size_t dir_size, int timeout_ms)
{
        static int seq;
        const char *bin = getenv("CHARGEONCE_TEST_PG_BIN");
        const char *tmp = getenv("TMPDIR");
        const char *pg  = testenv_pg();
        char exe[512], name[64], conninfo[1200], lsn[32];
        const char *v;
        PGconn *c;
        pid_t pid;
        bool ok = false;

        if (!bin || !*bin || !pg) {
                fprintf(stderr, "testenv: CHARGEONCE_TEST_PG_BIN or "
                                "CHARGEONCE_TEST_PG is not set (run under "
                                "tests/harness/with-services)\n");
                return -1;
        }
        c = PQconnectdb(pg);
        v = PQstatus(c) == CONNECTION_OK
                ? testenv_pg_value(c, "SELECT pg_current_wal_lsn()")
                : NULL;
        if (!v) {
                fprintf(stderr, "testenv: %s", PQerrorMessage(c));
                PQfinish(c);
                return -1;
        }
        snprintf(lsn, sizeof(lsn), "%s", v);
        /* a name of its own: another test may run a receiver beside */
        snprintf(name, sizeof(name), "co-walrecv-%d-%d", (int)getpid(), ++seq);
        snprintf(conninfo, sizeof(conninfo), "%s application_name=%s", pg,
                 name);
        snprintf(exe, sizeof(exe), "%s/pg_receivewal", bin);
        snprintf(dir, dir_size, "%s/co-walrecv-XXXXXX", tmp ? tmp : "/tmp");
        if (!mkdtemp(dir)) {
                perror("testenv: mkdtemp");
                PQfinish(c);
                return -1;
        }
        pid = fork();
        if (pid < 0) {
                perror("testenv: fork");
                (void)rmdir(dir);
                PQfinish(c);
                return -1;
        }
        if (pid == 0) { /* only async-signal-safe calls until the exec */
                int fd = open("/dev/null", O_WRONLY);

                (void)prctl(PR_SET_PDEATHSIG, SIGTERM);
                if (fd >= 0) {
                        (void)dup2(fd, STDOUT_FILENO);
                        (void)dup2(fd, STDERR_FILENO);
                }
                execl(exe, "pg_receivewal", "--synchronous", "--no-loop",
                      "--status-interval=1", "-D", dir, "-d", conninfo,
                      (char *)NULL);
                _exit(127);
        }
        if (!wal_pid && !wal_dir[0])
                atexit(wal_receiver_at_exit);
        wal_pid = pid;
        snprintf(wal_dir, sizeof(wal_dir), "%s", dir);
        /* streaming: it has flushed the WAL written before it started */
        for (int waited = 0; waited < timeout_ms; waited += 100) {
                if ((ok = wal_receiver_flushed(c, name, lsn)))
                        break;
                usleep(100 * 1000);
        }
        PQfinish(c);
        if (!ok) {
                fprintf(stderr,
                        "testenv: pg_receivewal did not flush the WAL up to "
                        "%s in %d ms\n",
                        lsn, timeout_ms);
                testenv_wal_receiver_stop(pid, dir);
                return -1;
        }
        return pid;
}

void testenv_wal_receiver_stop(pid_t pid, const char *dir)
{
        DIR *d;
        struct dirent *e;
        char f[1024];

        if (pid > 0) {
                (void)kill(pid, SIGTERM);
                (void)waitpid(pid, NULL, 0);
        }
        if (pid == wal_pid)
                wal_pid = 0;
        d = opendir(dir);
        while (d && (e = readdir(d))) {
                if (e->d_name[0] == '.')
                        continue;
                snprintf(f, sizeof(f), "%s/%s", dir, e->d_name);
                (void)unlink(f);
        }
        if (d)
                closedir(d);
        (void)rmdir(dir);
}
