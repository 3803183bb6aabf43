/* SPDX-License-Identifier: Apache-2.0 */
/*
 * publish: produces the workload to the intents topic at a steady rate,
 * so that chargeonce works on a stream (and can be killed in the middle of
 * it). A group of concurrent copies is produced by one thread per copy,
 * released together by a barrier, each to its own partition.
 */
#include "demo.h"

#include <librdkafka/rdkafka.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct copy_job {
        rd_kafka_t *rk;
        const char *topic;
        const struct wl_msg *m;
        pthread_barrier_t *bar;
        rd_kafka_resp_err_t err;
};

static rd_kafka_resp_err_t produce(rd_kafka_t *rk, const char *topic,
                                   const struct wl_msg *m)
{
        rd_kafka_resp_err_t err = RD_KAFKA_RESP_ERR_NO_ERROR;

        for (int tries = 0; tries < 300; tries++) {
                err = rd_kafka_producev(
                    rk, RD_KAFKA_V_TOPIC(topic),
                    RD_KAFKA_V_PARTITION(m->partition < 0
                                             ? RD_KAFKA_PARTITION_UA
                                             : m->partition),
                    RD_KAFKA_V_KEY(m->key, m->key ? strlen(m->key) : 0),
                    RD_KAFKA_V_VALUE(m->value, strlen(m->value)),
                    RD_KAFKA_V_MSGFLAGS(RD_KAFKA_MSG_F_COPY), RD_KAFKA_V_END);
                if (err != RD_KAFKA_RESP_ERR__QUEUE_FULL)
                        break;
                rd_kafka_poll(rk, 100);
        }
        return err;
}

static void *copy_thread(void *arg)
{
        struct copy_job *j = arg;
        pthread_barrier_wait(j->bar);
        j->err = produce(j->rk, j->topic, j->m);
        return NULL;
}

static int produce_group(rd_kafka_t *rk, const char *topic,
                         const struct wl_msg *m, int n)
{
        pthread_t th[8];
        struct copy_job jobs[8];
        pthread_barrier_t bar;
        int started = 0, rc = 0;

        if (n > 8)
                n = 8;
        pthread_barrier_init(&bar, NULL, (unsigned)n);
        for (int i = 0; i < n; i++) {
                jobs[i] = (struct copy_job){ rk, topic, &m[i], &bar, 0 };
                if (pthread_create(&th[i], NULL, copy_thread, &jobs[i]))
                        break;
                started++;
        }
        if (started < n) {
                /* cannot happen in practice; never leave a thread waiting */
                fprintf(stderr, "chargeonce-demo: pthread_create failed\n");
                exit(1);
        }
        for (int i = 0; i < n; i++) {
                pthread_join(th[i], NULL);
                if (jobs[i].err) {
                        fprintf(stderr, "chargeonce-demo: produce: %s\n",
                                rd_kafka_err2str(jobs[i].err));
                        rc = -1;
                }
        }
        pthread_barrier_destroy(&bar);
        return rc;
}

static void on_delivery(rd_kafka_t *rk, const rd_kafka_message_t *m,
                        void *opaque)
{
        size_t *failed = opaque;
        (void)rk;
        if (m->err) {
                (*failed)++;
                fprintf(stderr, "chargeonce-demo: delivery failed: %s\n",
                        rd_kafka_err2str(m->err));
        }
}

int publish_run(const struct workload *w, const struct pub_opts *o)
{
        char err[512];
        rd_kafka_conf_t *conf = rd_kafka_conf_new();
        rd_kafka_t *rk;
        size_t failed = 0, i = 0;
        double t0 = now_s();

        if (rd_kafka_conf_set(conf, "bootstrap.servers", o->bootstrap, err,
                              sizeof(err)) ||
            rd_kafka_conf_set(conf, "enable.idempotence", "true", err,
                              sizeof(err)) ||
            rd_kafka_conf_set(conf, "linger.ms", "5", err, sizeof(err))) {
                fprintf(stderr, "chargeonce-demo: %s\n", err);
                rd_kafka_conf_destroy(conf);
                return 2;
        }
        rd_kafka_conf_set_dr_msg_cb(conf, on_delivery);
        rd_kafka_conf_set_opaque(conf, &failed);
        if (!(rk = rd_kafka_new(RD_KAFKA_PRODUCER, conf, err, sizeof(err)))) {
                fprintf(stderr, "chargeonce-demo: producer: %s\n", err);
                return 1;
        }
        while (i < w->n_msgs) {
                const struct wl_msg *m = &w->msgs[i];
                int n                  = m->group > 1 ? m->group : 1;
                double due = o->rate > 0 ? t0 + (double)i / o->rate : 0;

                if (i + (size_t)n > w->n_msgs)
                        n = (int)(w->n_msgs - i);
                if (due > now_s())
                        sleep_s(due - now_s());
                if (n > 1 ? produce_group(rk, o->topic, m, n)
                          : (produce(rk, o->topic, m) ? -1 : 0)) {
                        rd_kafka_destroy(rk);
                        return 1;
                }
                rd_kafka_poll(rk, 0);
                i += (size_t)n;
        }
        if (rd_kafka_flush(rk, 30000)) {
                fprintf(stderr, "chargeonce-demo: flush timed out\n");
                failed++;
        }
        rd_kafka_destroy(rk);
        if (failed)
                return 1;
        printf("published %zu messages for %zu intents in %.1fs: %zu "
               "redelivered, %zu client retries, %zu concurrent copies, %zu "
               "keys reused for another amount, %zu poison\n",
               w->n_msgs, w->n_intents, now_s() - t0, w->redeliveries,
               w->retries, w->concurrent, w->reuses, w->poison);
        fflush(stdout);
        return 0;
}
