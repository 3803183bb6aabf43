/* SPDX-License-Identifier: Apache-2.0 */
/*
 * admin: the demo's chores — topics through the Admin API, a database of
 * its own, and running a child that dies with the demo.
 */
#include "demo.h"

#include <errno.h>
#include <librdkafka/rdkafka.h>
#include <libpq-fe.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <time.h>
#include <unistd.h>

double now_s(void)
{
        struct timespec ts;
        clock_gettime(CLOCK_MONOTONIC, &ts);
        return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

void sleep_s(double s)
{
        struct timespec ts;
        if (s <= 0)
                return;
        ts.tv_sec  = (time_t)s;
        ts.tv_nsec = (long)((s - (double)ts.tv_sec) * 1e9);
        while (nanosleep(&ts, &ts) && errno == EINTR)
                ;
}

static int topic_ready(rd_kafka_t *rk, const char *topic, int partitions)
{
        const struct rd_kafka_metadata *md = NULL;
        rd_kafka_topic_t *rkt = rd_kafka_topic_new(rk, topic, NULL);
        int ok                = 0;

        if (rd_kafka_metadata(rk, 0, rkt, &md, 5000) == 0) {
                const struct rd_kafka_metadata_topic *t = &md->topics[0];
                ok = md->topic_cnt == 1 && !t->err &&
                     t->partition_cnt == partitions;
                for (int p = 0; ok && p < t->partition_cnt; p++)
                        if (t->partitions[p].leader < 0 || t->partitions[p].err)
                                ok = 0;
                rd_kafka_metadata_destroy(md);
        }
        rd_kafka_topic_destroy(rkt);
        return ok;
}

int admin_topics(const char *bootstrap, const char *intents,
                 const char *results, const char *dlq, int partitions)
{
        char err[512];
        const char *names[3]  = { intents, results, dlq };
        int parts[3]          = { partitions, partitions, 1 };
        rd_kafka_conf_t *conf = rd_kafka_conf_new();
        rd_kafka_t *rk;
        rd_kafka_NewTopic_t *nt[3];
        rd_kafka_queue_t *q;
        rd_kafka_event_t *ev;
        int rc = 0;

        if (rd_kafka_conf_set(conf, "bootstrap.servers", bootstrap, err,
                              sizeof(err))) {
                fprintf(stderr, "chargeonce-demo: %s\n", err);
                rd_kafka_conf_destroy(conf);
                return 2;
        }
        if (!(rk = rd_kafka_new(RD_KAFKA_PRODUCER, conf, err, sizeof(err)))) {
                fprintf(stderr, "chargeonce-demo: %s\n", err);
                return 1;
        }
        for (int i = 0; i < 3; i++)
                nt[i] = rd_kafka_NewTopic_new(names[i], parts[i], 1, err,
                                              sizeof(err));
        q = rd_kafka_queue_new(rk);
        rd_kafka_CreateTopics(rk, nt, 3, NULL, q);
        ev = rd_kafka_queue_poll(q, 30000);
        if (!ev || rd_kafka_event_error(ev)) {
                fprintf(stderr, "chargeonce-demo: CreateTopics: %s\n",
                        ev ? rd_kafka_event_error_string(ev) : "timed out");
                rc = 1;
        } else {
                const rd_kafka_CreateTopics_result_t *res =
                    rd_kafka_event_CreateTopics_result(ev);
                size_t n;
                const rd_kafka_topic_result_t **tr =
                    rd_kafka_CreateTopics_result_topics(res, &n);
                for (size_t i = 0; i < n; i++) {
                        rd_kafka_resp_err_t e =
                            rd_kafka_topic_result_error(tr[i]);
                        if (e && e != RD_KAFKA_RESP_ERR_TOPIC_ALREADY_EXISTS) {
                                fprintf(
                                    stderr, "chargeonce-demo: topic %s: %s\n",
                                    rd_kafka_topic_result_name(tr[i]),
                                    rd_kafka_topic_result_error_string(tr[i]));
                                rc = 1;
                        }
                }
        }
        if (ev)
                rd_kafka_event_destroy(ev);
        for (int i = 0; i < 3; i++)
                rd_kafka_NewTopic_destroy(nt[i]);
        rd_kafka_queue_destroy(q);
        for (int i = 0; rc == 0 && i < 3; i++) {
                double end = now_s() + 30;
                while (!topic_ready(rk, names[i], parts[i])) {
                        if (now_s() > end) {
                                fprintf(stderr,
                                        "chargeonce-demo: topic %s has no "
                                        "leaders after 30s\n",
                                        names[i]);
                                rc = 1;
                                break;
                        }
                        sleep_s(0.1);
                }
        }
        rd_kafka_destroy(rk);
        return rc;
}

/* create or drop database `name` through the server of conninfo */
int admin_db(const char *conninfo, const char *action, const char *name)
{
        PGconn *db = PQconnectdb(conninfo);
        char sql[256], *ident;
        PGresult *res;
        int rc = 0;

        if (PQstatus(db) != CONNECTION_OK) {
                fprintf(stderr, "chargeonce-demo: database: %s",
                        PQerrorMessage(db));
                PQfinish(db);
                return 1;
        }
        if (!(ident = PQescapeIdentifier(db, name, strlen(name)))) {
                PQfinish(db);
                return 1;
        }
        snprintf(sql, sizeof(sql), "%s DATABASE %s%s",
                 strcmp(action, "create") ? "DROP" : "CREATE",
                 strcmp(action, "create") ? "IF EXISTS " : "", ident);
        PQfreemem(ident);
        res = PQexec(db, sql);
        if (PQresultStatus(res) != PGRES_COMMAND_OK) {
                fprintf(stderr, "chargeonce-demo: %s: %s", sql,
                        PQresultErrorMessage(res));
                rc = 1;
        }
        PQclear(res);
        PQfinish(db);
        return rc;
}

/*
 * Runs argv in this process, set to be killed when the shell that started
 * it dies, so that a demo killed by any means leaves nothing running.
 */
int admin_exec(char **argv)
{
        pid_t parent = getppid();

        if (prctl(PR_SET_PDEATHSIG, SIGKILL) < 0 || getppid() != parent) {
                fprintf(stderr, "chargeonce-demo: the demo is gone\n");
                return 1;
        }
        execv(argv[0], argv);
        fprintf(stderr, "chargeonce-demo: exec %s: %s\n", argv[0],
                strerror(errno));
        return 127;
}
