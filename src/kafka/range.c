/* SPDX-License-Identifier: Apache-2.0 */
/*
 * kafka/range: one pass over [from, to) of some partitions, in assign
 * mode, committing nothing (see range.h).
 *
 * Must never: subscribe, commit, or store an offset.
 */
#include "kafka/range.h"
#include "kafka/kconf.h"
#include "util/xalloc.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct krange {
        rd_kafka_t *rk;
        char *topic;
        int n;
        int32_t *parts;
        int64_t *to;
        bool *done;
        int left; /* partitions not done */
};

static int index_of(const struct krange *kr, int32_t p)
{
        for (int i = 0; i < kr->n; i++)
                if (kr->parts[i] == p)
                        return i;
        return -1;
}

/* Partition i reached its end: stop fetching it. */
static void finish(struct krange *kr, int i)
{
        rd_kafka_topic_partition_list_t *l;

        if (kr->done[i])
                return;
        kr->done[i] = true;
        kr->left--;
        l = rd_kafka_topic_partition_list_new(1);
        rd_kafka_topic_partition_list_add(l, kr->topic, kr->parts[i]);
        rd_kafka_pause_partitions(kr->rk, l);
        rd_kafka_topic_partition_list_destroy(l);
}

static rd_kafka_t *open_consumer(const struct kafka_opts *ko, const char *group,
                                 char *errstr, size_t errstr_size)
{
        rd_kafka_conf_t *conf =
            kconf_new(ko, KCONF_CONSUMER, errstr, errstr_size);
        rd_kafka_t *rk;

        if (!conf)
                return NULL;
        /* set after the user's properties: these are not negotiable */
        if (kconf_set(conf, "group.id", group, errstr, errstr_size) < 0 ||
            kconf_set(conf, "enable.auto.commit", "false", errstr,
                      errstr_size) < 0 ||
            kconf_set(conf, "enable.auto.offset.store", "false", errstr,
                      errstr_size) < 0 ||
            kconf_set(conf, "enable.partition.eof", "true", errstr,
                      errstr_size) < 0) {
                rd_kafka_conf_destroy(conf);
                return NULL;
        }
        rk = rd_kafka_new(RD_KAFKA_CONSUMER, conf, errstr, errstr_size);
        if (!rk)
                rd_kafka_conf_destroy(conf);
        return rk;
}

struct krange *krange_new(const struct kafka_opts *ko, const char *group,
                          const char *topic, const int32_t *parts,
                          const int64_t *from, const int64_t *to, int n,
                          char *errstr, size_t errstr_size)
{
        rd_kafka_t *rk = open_consumer(ko, group, errstr, errstr_size);
        rd_kafka_topic_partition_list_t *l;
        rd_kafka_resp_err_t err;
        struct krange *kr;

        if (!rk)
                return NULL;
        kr        = xcalloc(1, sizeof(*kr));
        kr->rk    = rk;
        kr->topic = xstrdup(topic);
        kr->n     = n;
        kr->parts = xcalloc((size_t)(n ? n : 1), sizeof(*kr->parts));
        kr->to    = xcalloc((size_t)(n ? n : 1), sizeof(*kr->to));
        kr->done  = xcalloc((size_t)(n ? n : 1), sizeof(*kr->done));
        kr->left  = n;
        rd_kafka_poll_set_consumer(rk);
        l = rd_kafka_topic_partition_list_new(n);
        for (int i = 0; i < n; i++) {
                kr->parts[i] = parts[i];
                kr->to[i]    = to[i];
                rd_kafka_topic_partition_list_add(l, topic, parts[i])->offset =
                    from[i];
        }
        /* assign, never subscribe: no group membership, no rebalance */
        err = rd_kafka_assign(rk, l);
        rd_kafka_topic_partition_list_destroy(l);
        if (err) {
                snprintf(errstr, errstr_size, "assign: %s",
                         rd_kafka_err2str(err));
                krange_destroy(kr);
                return NULL;
        }
        for (int i = 0; i < n; i++)
                if (from[i] >= to[i])
                        finish(kr, i);
        return kr;
}

void krange_destroy(struct krange *kr)
{
        if (!kr)
                return;
        /* auto commit is off and nothing was stored: closes, commits
         * nothing */
        CO_IGNORE(rd_kafka_consumer_close(kr->rk));
        rd_kafka_destroy(kr->rk);
        free(kr->topic);
        free(kr->parts);
        free(kr->to);
        free(kr->done);
        free(kr);
}

/* One event of the consumer: keeps *m (returns true) or disposes of it.
 * -1: an error that ends the read. */
static int take(struct krange *kr, rd_kafka_message_t *m, char *errstr,
                size_t errstr_size)
{
        int i = index_of(kr, m->partition);

        if (m->err == RD_KAFKA_RESP_ERR__PARTITION_EOF) {
                /* the end of what is there: with gaps (compaction,
                 * transactions) `to` may never be seen as a message */
                if (i >= 0 && m->offset >= kr->to[i])
                        finish(kr, i);
                return 0;
        }
        if (m->err) {
                if (m->err == RD_KAFKA_RESP_ERR__FATAL ||
                    m->err == RD_KAFKA_RESP_ERR__UNKNOWN_PARTITION ||
                    m->err == RD_KAFKA_RESP_ERR__UNKNOWN_TOPIC ||
                    m->err == RD_KAFKA_RESP_ERR_OFFSET_OUT_OF_RANGE ||
                    m->err == RD_KAFKA_RESP_ERR__AUTO_OFFSET_RESET) {
                        snprintf(errstr, errstr_size, "reading [%d]: %s",
                                 (int)m->partition, rd_kafka_message_errstr(m));
                        return -1;
                }
                return 0; /* transient: librdkafka retries */
        }
        if (i < 0 || kr->done[i] || m->offset >= kr->to[i]) {
                if (i >= 0)
                        finish(kr, i);
                return 0;
        }
        if (m->offset + 1 >= kr->to[i])
                finish(kr, i);
        return 1;
}

int krange_poll(struct krange *kr, rd_kafka_message_t **msgs, size_t max,
                int timeout_ms, bool *done, char *errstr, size_t errstr_size)
{
        size_t got = 0;

        while (kr->left > 0 && got < max) {
                rd_kafka_message_t *m =
                    rd_kafka_consumer_poll(kr->rk, got ? 0 : timeout_ms);
                int r;

                if (!m)
                        break;
                r = take(kr, m, errstr, errstr_size);
                if (r < 0) {
                        rd_kafka_message_destroy(m);
                        for (size_t k = 0; k < got; k++)
                                rd_kafka_message_destroy(msgs[k]);
                        return -1;
                }
                if (r == 0)
                        rd_kafka_message_destroy(m);
                else
                        msgs[got++] = m;
        }
        *done = kr->left == 0;
        return (int)got;
}
