/* SPDX-License-Identifier: Apache-2.0 */
/*
 * kafka/topic_config: a topic's retention from the broker (DescribeConfigs
 * of the Admin API). See topic_config.h. Read-only: never alters a topic.
 */
#include "kafka/topic_config.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* True if the comma-separated list has the word w ("compact,delete"). */
static bool has_word(const char *list, const char *w)
{
        size_t n = strlen(w);

        for (const char *p = list; p && *p;) {
                const char *e = strchr(p, ',');
                size_t len    = e ? (size_t)(e - p) : strlen(p);
                while (len && *p == ' ') {
                        p++;
                        len--;
                }
                while (len && p[len - 1] == ' ')
                        len--;
                if (len == n && !strncmp(p, w, n))
                        return true;
                p = e ? e + 1 : NULL;
        }
        return false;
}

int kafka_topic_retention_parse(const char *retention_ms,
                                const char *cleanup_policy,
                                struct kafka_topic_retention *out, char *errstr,
                                size_t errstr_size)
{
        char *end = NULL;
        long long v;

        memset(out, 0, sizeof(*out));
        if (!retention_ms || !*retention_ms) {
                snprintf(errstr, errstr_size,
                         "the broker did not report retention.ms");
                return -1;
        }
        errno = 0;
        v     = strtoll(retention_ms, &end, 10);
        if (errno || !end || *end || v < -1) {
                snprintf(errstr, errstr_size,
                         "retention.ms \"%.40s\" is not a number >= -1",
                         retention_ms);
                return -1;
        }
        out->retention_ms = (int64_t)v;
        out->compact = cleanup_policy && has_word(cleanup_policy, "compact");
        /* compacted without deletion: the last message of every key is
         * kept whatever retention.ms says */
        if (out->compact && !has_word(cleanup_policy, "delete"))
                out->retention_ms = -1;
        return 0;
}

/* The value of entry name among the resource's configs, or NULL. */
static const char *entry_value(const rd_kafka_ConfigResource_t *res,
                               const char *name)
{
        size_t n;
        const rd_kafka_ConfigEntry_t **e =
            rd_kafka_ConfigResource_configs(res, &n);

        for (size_t i = 0; i < n; i++)
                if (!strcmp(rd_kafka_ConfigEntry_name(e[i]), name))
                        return rd_kafka_ConfigEntry_value(e[i]);
        return NULL;
}

int kafka_topic_retention_get(const struct kafka_opts *ko, const char *topic,
                              int timeout_ms, struct kafka_topic_retention *out,
                              char *errstr, size_t errstr_size)
{
        rd_kafka_conf_t *conf;
        rd_kafka_t *rk                  = NULL;
        rd_kafka_queue_t *q             = NULL;
        rd_kafka_ConfigResource_t *want = NULL;
        rd_kafka_AdminOptions_t *opt    = NULL;
        rd_kafka_event_t *ev            = NULL;
        const rd_kafka_ConfigResource_t **res;
        size_t nres;
        char rderr[512];
        int rc = -1;

        memset(out, 0, sizeof(*out));
        if (!(conf = kconf_new(ko, KCONF_PRODUCER, errstr, errstr_size)))
                return -1;
        if (!(rk = rd_kafka_new(RD_KAFKA_PRODUCER, conf, rderr,
                                sizeof(rderr)))) {
                rd_kafka_conf_destroy(conf);
                snprintf(errstr, errstr_size, "kafka: %s", rderr);
                return -1;
        }
        conf = NULL; /* rk owns it */
        q    = rd_kafka_queue_new(rk);
        want = rd_kafka_ConfigResource_new(RD_KAFKA_RESOURCE_TOPIC, topic);
        opt  = rd_kafka_AdminOptions_new(rk, RD_KAFKA_ADMIN_OP_DESCRIBECONFIGS);
        if (rd_kafka_AdminOptions_set_request_timeout(opt, timeout_ms, rderr,
                                                      sizeof(rderr))) {
                snprintf(errstr, errstr_size, "kafka: %s", rderr);
                goto done;
        }
        rd_kafka_DescribeConfigs(rk, &want, 1, opt, q);
        ev = rd_kafka_queue_poll(q, timeout_ms + 1000);
        if (!ev) {
                snprintf(errstr, errstr_size,
                         "kafka: no answer to DescribeConfigs of topic %s "
                         "within %d ms",
                         topic, timeout_ms + 1000);
                goto done;
        }
        if (rd_kafka_event_error(ev)) {
                snprintf(errstr, errstr_size,
                         "kafka: DescribeConfigs of topic %s: %s", topic,
                         rd_kafka_event_error_string(ev));
                goto done;
        }
        res = rd_kafka_DescribeConfigs_result_resources(
            rd_kafka_event_DescribeConfigs_result(ev), &nres);
        if (nres != 1) {
                snprintf(errstr, errstr_size,
                         "kafka: DescribeConfigs of topic %s: %zu resources",
                         topic, nres);
                goto done;
        }
        if (rd_kafka_ConfigResource_error(res[0])) {
                snprintf(errstr, errstr_size, "kafka: topic %s: %s", topic,
                         rd_kafka_ConfigResource_error_string(res[0])
                             ? rd_kafka_ConfigResource_error_string(res[0])
                             : rd_kafka_err2str(
                                   rd_kafka_ConfigResource_error(res[0])));
                goto done;
        }
        if (kafka_topic_retention_parse(entry_value(res[0], "retention.ms"),
                                        entry_value(res[0], "cleanup.policy"),
                                        out, rderr, sizeof(rderr)) < 0) {
                snprintf(errstr, errstr_size, "kafka: topic %s: %s", topic,
                         rderr);
                goto done;
        }
        rc = 0;
done:
        if (ev)
                rd_kafka_event_destroy(ev);
        rd_kafka_AdminOptions_destroy(opt);
        rd_kafka_ConfigResource_destroy(want);
        rd_kafka_queue_destroy(q);
        rd_kafka_destroy(rk);
        return rc;
}
