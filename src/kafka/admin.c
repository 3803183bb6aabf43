/* SPDX-License-Identifier: Apache-2.0 */
/*
 * kafka/admin: metadata, watermarks, offsets by time and consumer group
 * offsets over librdkafka's Admin API (see admin.h).
 *
 * Must never: join a group (the handle has no group.id and never
 * subscribes) or alter offsets of a group the caller did not check.
 */
#include "kafka/admin.h"
#include "kafka/kconf.h"
#include "util/xalloc.h"

#include <librdkafka/rdkafka.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct kadmin {
        rd_kafka_t *rk;
        rd_kafka_queue_t *q;
        int timeout_ms;
};

struct kadmin *kadmin_new(const struct kafka_opts *ko, int timeout_ms,
                          char *errstr, size_t errstr_size)
{
        rd_kafka_conf_t *conf =
            kconf_new(ko, KCONF_CONSUMER, errstr, errstr_size);
        struct kadmin *ka;
        rd_kafka_t *rk;

        if (!conf)
                return NULL;
        rk = rd_kafka_new(RD_KAFKA_CONSUMER, conf, errstr, errstr_size);
        if (!rk) {
                rd_kafka_conf_destroy(conf);
                return NULL;
        }
        ka             = xcalloc(1, sizeof(*ka));
        ka->rk         = rk;
        ka->q          = rd_kafka_queue_new(rk);
        ka->timeout_ms = timeout_ms;
        return ka;
}

void kadmin_destroy(struct kadmin *ka)
{
        if (!ka)
                return;
        rd_kafka_queue_destroy(ka->q);
        rd_kafka_destroy(ka->rk);
        free(ka);
}

static int cmp_i32(const void *a, const void *b)
{
        int32_t x = *(const int32_t *)a, y = *(const int32_t *)b;

        return (x > y) - (x < y);
}

int kadmin_partitions(struct kadmin *ka, const char *topic, int32_t **parts,
                      int *n, char *errstr, size_t errstr_size)
{
        rd_kafka_topic_t *rkt = rd_kafka_topic_new(ka->rk, topic, NULL);
        const struct rd_kafka_metadata *md = NULL;
        rd_kafka_resp_err_t err;
        int rc = -1;

        *parts = NULL;
        *n     = 0;
        err    = rd_kafka_metadata(ka->rk, 0, rkt, &md, ka->timeout_ms);
        if (err) {
                snprintf(errstr, errstr_size, "metadata of %s: %s", topic,
                         rd_kafka_err2str(err));
                goto done;
        }
        if (md->topic_cnt != 1 || md->topics[0].err ||
            md->topics[0].partition_cnt == 0) {
                snprintf(errstr, errstr_size, "topic %s: %s", topic,
                         md->topic_cnt == 1 && md->topics[0].err
                             ? rd_kafka_err2str(md->topics[0].err)
                             : "no partitions");
                goto done;
        }
        *n     = md->topics[0].partition_cnt;
        *parts = xcalloc((size_t)*n, sizeof(**parts));
        for (int i = 0; i < *n; i++)
                (*parts)[i] = md->topics[0].partitions[i].id;
        qsort(*parts, (size_t)*n, sizeof(**parts), cmp_i32);
        rc = 0;
done:
        if (md)
                rd_kafka_metadata_destroy(md);
        rd_kafka_topic_destroy(rkt);
        return rc;
}

int kadmin_watermarks(struct kadmin *ka, const char *topic, int32_t p,
                      int64_t *lo, int64_t *hi, char *errstr,
                      size_t errstr_size)
{
        rd_kafka_resp_err_t err = rd_kafka_query_watermark_offsets(
            ka->rk, topic, p, lo, hi, ka->timeout_ms);

        if (err) {
                snprintf(errstr, errstr_size, "watermarks of %s [%d]: %s",
                         topic, (int)p, rd_kafka_err2str(err));
                return -1;
        }
        return 0;
}

int kadmin_offsets_for_time(struct kadmin *ka, const char *topic,
                            const int32_t *parts, int n, int64_t ts_ms,
                            int64_t *out, char *errstr, size_t errstr_size)
{
        rd_kafka_topic_partition_list_t *l =
            rd_kafka_topic_partition_list_new(n);
        rd_kafka_resp_err_t err;
        int rc = -1;

        for (int i = 0; i < n; i++)
                rd_kafka_topic_partition_list_add(l, topic, parts[i])->offset =
                    ts_ms;
        err = rd_kafka_offsets_for_times(ka->rk, l, ka->timeout_ms);
        if (err) {
                snprintf(errstr, errstr_size, "offsets for times: %s",
                         rd_kafka_err2str(err));
                goto done;
        }
        for (int i = 0; i < n; i++) {
                rd_kafka_topic_partition_t *e =
                    rd_kafka_topic_partition_list_find(l, topic, parts[i]);
                int64_t lo, hi;

                if (!e || e->err) {
                        snprintf(errstr, errstr_size,
                                 "offset for time of %s [%d]: %s", topic,
                                 (int)parts[i],
                                 e ? rd_kafka_err2str(e->err) : "missing");
                        goto done;
                }
                if (e->offset >= 0) {
                        out[i] = e->offset;
                        continue;
                }
                /* no message at or after the time: the end */
                if (kadmin_watermarks(ka, topic, parts[i], &lo, &hi, errstr,
                                      errstr_size) < 0)
                        goto done;
                out[i] = hi;
        }
        rc = 0;
done:
        rd_kafka_topic_partition_list_destroy(l);
        return rc;
}

/*
 * Waits for the result event of type `type` on ka's queue (the admin
 * request's own timeout bounds it). NULL with errstr set on error.
 */
static rd_kafka_event_t *wait_result(struct kadmin *ka, int type,
                                     const char *what, char *errstr,
                                     size_t errstr_size)
{
        rd_kafka_event_t *ev =
            rd_kafka_queue_poll(ka->q, ka->timeout_ms + 5000);

        if (!ev) {
                snprintf(errstr, errstr_size, "%s: no answer", what);
                return NULL;
        }
        if (rd_kafka_event_type(ev) != type || rd_kafka_event_error(ev)) {
                snprintf(errstr, errstr_size, "%s: %s", what,
                         rd_kafka_event_error(ev)
                             ? rd_kafka_event_error_string(ev)
                             : "unexpected event");
                rd_kafka_event_destroy(ev);
                return NULL;
        }
        return ev;
}

static rd_kafka_AdminOptions_t *options(struct kadmin *ka,
                                        rd_kafka_admin_op_t op)
{
        rd_kafka_AdminOptions_t *o = rd_kafka_AdminOptions_new(ka->rk, op);
        char e[256];

        /* the timeout is in range: this cannot fail */
        if (rd_kafka_AdminOptions_set_request_timeout(o, ka->timeout_ms, e,
                                                      sizeof(e)))
                abort();
        return o;
}

int kadmin_group_describe(struct kadmin *ka, const char *group,
                          struct kadmin_group *out, char *errstr,
                          size_t errstr_size)
{
        rd_kafka_AdminOptions_t *o =
            options(ka, RD_KAFKA_ADMIN_OP_DESCRIBECONSUMERGROUPS);
        const rd_kafka_ConsumerGroupDescription_t **g;
        const rd_kafka_error_t *ge;
        rd_kafka_event_t *ev;
        size_t cnt = 0;
        int rc     = -1;

        memset(out, 0, sizeof(*out));
        rd_kafka_DescribeConsumerGroups(ka->rk, &group, 1, o, ka->q);
        rd_kafka_AdminOptions_destroy(o);
        ev = wait_result(ka, RD_KAFKA_EVENT_DESCRIBECONSUMERGROUPS_RESULT,
                         "describe group", errstr, errstr_size);
        if (!ev)
                return -1;
        g = rd_kafka_DescribeConsumerGroups_result_groups(
            rd_kafka_event_DescribeConsumerGroups_result(ev), &cnt);
        if (cnt != 1) {
                snprintf(errstr, errstr_size, "describe group %s: %zu answers",
                         group, cnt);
                goto done;
        }
        if ((ge = rd_kafka_ConsumerGroupDescription_error(g[0]))) {
                snprintf(errstr, errstr_size, "describe group %s: %s", group,
                         rd_kafka_error_string(ge));
                goto done;
        }
        snprintf(out->state, sizeof(out->state), "%s",
                 rd_kafka_consumer_group_state_name(
                     rd_kafka_ConsumerGroupDescription_state(g[0])));
        out->members = rd_kafka_ConsumerGroupDescription_member_count(g[0]);
        rc           = 0;
done:
        rd_kafka_event_destroy(ev);
        return rc;
}

/* The partitions of the one group result of ev, checked. */
static const rd_kafka_topic_partition_list_t *
group_parts(const rd_kafka_group_result_t **gr, size_t cnt, const char *what,
            char *errstr, size_t errstr_size)
{
        const rd_kafka_error_t *e;

        if (cnt != 1) {
                snprintf(errstr, errstr_size, "%s: %zu answers", what, cnt);
                return NULL;
        }
        if ((e = rd_kafka_group_result_error(gr[0]))) {
                snprintf(errstr, errstr_size, "%s: %s", what,
                         rd_kafka_error_string(e));
                return NULL;
        }
        return rd_kafka_group_result_partitions(gr[0]);
}

int kadmin_group_offsets(struct kadmin *ka, const char *group,
                         const char *topic, const int32_t *parts, int n,
                         int64_t *out, char *errstr, size_t errstr_size)
{
        rd_kafka_topic_partition_list_t *l =
            rd_kafka_topic_partition_list_new(n);
        rd_kafka_AdminOptions_t *o =
            options(ka, RD_KAFKA_ADMIN_OP_LISTCONSUMERGROUPOFFSETS);
        rd_kafka_ListConsumerGroupOffsets_t *req;
        const rd_kafka_topic_partition_list_t *got;
        const rd_kafka_group_result_t **gr;
        rd_kafka_event_t *ev;
        size_t cnt = 0;
        int rc     = -1;

        for (int i = 0; i < n; i++)
                rd_kafka_topic_partition_list_add(l, topic, parts[i]);
        req = rd_kafka_ListConsumerGroupOffsets_new(group, l);
        rd_kafka_ListConsumerGroupOffsets(ka->rk, &req, 1, o, ka->q);
        rd_kafka_ListConsumerGroupOffsets_destroy(req);
        rd_kafka_AdminOptions_destroy(o);
        rd_kafka_topic_partition_list_destroy(l);
        ev = wait_result(ka, RD_KAFKA_EVENT_LISTCONSUMERGROUPOFFSETS_RESULT,
                         "list group offsets", errstr, errstr_size);
        if (!ev)
                return -1;
        gr = rd_kafka_ListConsumerGroupOffsets_result_groups(
            rd_kafka_event_ListConsumerGroupOffsets_result(ev), &cnt);
        got = group_parts(gr, cnt, "list group offsets", errstr, errstr_size);
        if (!got)
                goto done;
        for (int i = 0; i < n; i++) {
                const rd_kafka_topic_partition_t *e =
                    rd_kafka_topic_partition_list_find(
                        (rd_kafka_topic_partition_list_t *)got, topic,
                        parts[i]);

                if (e && e->err) {
                        snprintf(errstr, errstr_size,
                                 "list group offsets [%d]: %s", (int)parts[i],
                                 rd_kafka_err2str(e->err));
                        goto done;
                }
                out[i] = e && e->offset >= 0 ? e->offset : KADMIN_OFFSET_NONE;
        }
        rc = 0;
done:
        rd_kafka_event_destroy(ev);
        return rc;
}

int kadmin_group_alter(struct kadmin *ka, const char *group, const char *topic,
                       const int32_t *parts, const int64_t *offsets, int n,
                       char *errstr, size_t errstr_size)
{
        rd_kafka_topic_partition_list_t *l =
            rd_kafka_topic_partition_list_new(n);
        rd_kafka_AdminOptions_t *o =
            options(ka, RD_KAFKA_ADMIN_OP_ALTERCONSUMERGROUPOFFSETS);
        rd_kafka_AlterConsumerGroupOffsets_t *req;
        const rd_kafka_topic_partition_list_t *got;
        const rd_kafka_group_result_t **gr;
        rd_kafka_event_t *ev;
        size_t cnt = 0;
        int rc     = -1;

        for (int i = 0; i < n; i++)
                rd_kafka_topic_partition_list_add(l, topic, parts[i])->offset =
                    offsets[i];
        req = rd_kafka_AlterConsumerGroupOffsets_new(group, l);
        rd_kafka_AlterConsumerGroupOffsets(ka->rk, &req, 1, o, ka->q);
        rd_kafka_AlterConsumerGroupOffsets_destroy(req);
        rd_kafka_AdminOptions_destroy(o);
        rd_kafka_topic_partition_list_destroy(l);
        ev = wait_result(ka, RD_KAFKA_EVENT_ALTERCONSUMERGROUPOFFSETS_RESULT,
                         "alter group offsets", errstr, errstr_size);
        if (!ev)
                return -1;
        gr = rd_kafka_AlterConsumerGroupOffsets_result_groups(
            rd_kafka_event_AlterConsumerGroupOffsets_result(ev), &cnt);
        got = group_parts(gr, cnt, "alter group offsets", errstr, errstr_size);
        if (!got)
                goto done;
        for (int i = 0; i < got->cnt; i++) {
                if (got->elems[i].err) {
                        snprintf(errstr, errstr_size,
                                 "alter group offsets [%d]: %s",
                                 (int)got->elems[i].partition,
                                 rd_kafka_err2str(got->elems[i].err));
                        goto done;
                }
        }
        rc = 0;
done:
        rd_kafka_event_destroy(ev);
        return rc;
}
