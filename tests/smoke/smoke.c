/* SPDX-License-Identifier: Apache-2.0 */
/*
 * smoke: proves the harness. A libpq round trip on the real server, and
 * produce -> consume through a consumer group with librdkafka on the real
 * broker, with the group's committed offsets checked afterwards.
 */
#include "testenv.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define N_MSGS  200
#define N_PARTS 3

#define CHECK(cond, ...)                                                       \
        do {                                                                   \
                if (!(cond)) {                                                 \
                        fprintf(stderr, "FAIL %s:%d: ", __FILE__, __LINE__);   \
                        fprintf(stderr, __VA_ARGS__);                          \
                        fprintf(stderr, "\n");                                 \
                        exit(1);                                               \
                }                                                              \
        } while (0)

static void pg_round_trip(void)
{
        char db[128], ci[1024];
        PGconn *c;
        const char *v;

        CHECK(testenv_db_create("smoke", db, sizeof(db), ci, sizeof(ci)) == 0,
              "create database");
        c = PQconnectdb(ci);
        CHECK(PQstatus(c) == CONNECTION_OK, "connect: %s", PQerrorMessage(c));
        v = testenv_pg_value(c, "SELECT current_setting('server_version_num')");
        CHECK(v && atoi(v) >= 150000 && atoi(v) < 160000,
              "PostgreSQL 15 expected, got %s", v ? v : "nothing");
        v = testenv_pg_value(c, "SELECT current_setting('synchronous_commit')");
        CHECK(v && !strcmp(v, "on"), "synchronous_commit must be on");
        PQclear(PQexec(c, "CREATE TABLE t (k int primary key, v text)"));
        PQclear(PQexec(c, "INSERT INTO t VALUES (1, 'one'), (2, 'two')"));
        v = testenv_pg_value(c, "SELECT string_agg(v, ',' ORDER BY k) FROM t");
        CHECK(v && !strcmp(v, "one,two"), "round trip gave %s",
              v ? v : "nothing");
        PQfinish(c);
        testenv_db_drop(db);
        printf("postgresql: round trip ok\n");
}

static void kafka_round_trip(void)
{
        char topic[128], group[128], err[512];
        rd_kafka_t *p, *c;
        rd_kafka_conf_t *conf;
        rd_kafka_topic_partition_list_t *sub, *committed;
        int seen[N_MSGS] = { 0 }, got = 0, dup = 0;
        int64_t total_committed = 0;

        testenv_unique("smoke", topic, sizeof(topic));
        testenv_unique("smoke_group", group, sizeof(group));
        CHECK(testenv_topic_create(topic, N_PARTS) == 0, "create topic");

        conf = testenv_kafka_conf();
        CHECK(rd_kafka_conf_set(conf, "enable.idempotence", "true", err,
                                sizeof(err)) == RD_KAFKA_CONF_OK,
              "%s", err);
        p = rd_kafka_new(RD_KAFKA_PRODUCER, conf, err, sizeof(err));
        CHECK(p, "producer: %s", err);
        for (int i = 0; i < N_MSGS; i++) {
                char key[32], val[32];
                snprintf(key, sizeof(key), "tenant/key-%d", i % 17);
                snprintf(val, sizeof(val), "%d", i);
                CHECK(
                    rd_kafka_producev(p, RD_KAFKA_V_TOPIC(topic),
                                      RD_KAFKA_V_KEY(key, strlen(key)),
                                      RD_KAFKA_V_VALUE(val, strlen(val)),
                                      RD_KAFKA_V_MSGFLAGS(RD_KAFKA_MSG_F_COPY),
                                      RD_KAFKA_V_END) == 0,
                    "produce");
        }
        CHECK(rd_kafka_flush(p, 30000) == 0, "flush");
        rd_kafka_destroy(p);

        conf = testenv_kafka_conf();
        rd_kafka_conf_set(conf, "group.id", group, err, sizeof(err));
        rd_kafka_conf_set(conf, "auto.offset.reset", "earliest", err,
                          sizeof(err));
        rd_kafka_conf_set(conf, "enable.auto.offset.store", "false", err,
                          sizeof(err));
        c = rd_kafka_new(RD_KAFKA_CONSUMER, conf, err, sizeof(err));
        CHECK(c, "consumer: %s", err);
        rd_kafka_poll_set_consumer(c);
        sub = rd_kafka_topic_partition_list_new(1);
        rd_kafka_topic_partition_list_add(sub, topic, RD_KAFKA_PARTITION_UA);
        CHECK(rd_kafka_subscribe(c, sub) == 0, "subscribe");
        rd_kafka_topic_partition_list_destroy(sub);

        for (int polls = 0; got < N_MSGS && polls < 300; polls++) {
                rd_kafka_message_t *m = rd_kafka_consumer_poll(c, 100);
                if (!m)
                        continue;
                if (!m->err) {
                        char val[32];
                        int n = (int)m->len < 31 ? (int)m->len : 31;
                        memcpy(val, m->payload, (size_t)n);
                        val[n] = '\0';
                        int i  = atoi(val);
                        CHECK(i >= 0 && i < N_MSGS, "bad value %s", val);
                        if (seen[i]++)
                                dup++;
                        got++;
                        CHECK(rd_kafka_offset_store(m->rkt, m->partition,
                                                    m->offset) == 0,
                              "offset store");
                }
                rd_kafka_message_destroy(m);
        }
        CHECK(got == N_MSGS && dup == 0, "consumed %d (dup %d) of %d", got, dup,
              N_MSGS);
        CHECK(rd_kafka_commit(c, NULL, 0) == 0, "commit");

        committed = rd_kafka_topic_partition_list_new(N_PARTS);
        for (int i = 0; i < N_PARTS; i++)
                rd_kafka_topic_partition_list_add(committed, topic, i);
        CHECK(rd_kafka_committed(c, committed, 10000) == 0, "committed");
        for (int i = 0; i < committed->cnt; i++)
                total_committed += committed->elems[i].offset;
        CHECK(total_committed == N_MSGS,
              "committed offsets add up to %lld, not %d",
              (long long)total_committed, N_MSGS);
        rd_kafka_topic_partition_list_destroy(committed);
        rd_kafka_consumer_close(c);
        rd_kafka_destroy(c);
        printf("kafka: %d messages through group %s, offsets committed\n", got,
               group);
}

int main(void)
{
        if (!testenv_have_services())
                return TESTENV_SKIP;
        pg_round_trip();
        kafka_round_trip();
        printf("1 passed, 0 failed\n");
        return 0;
}
