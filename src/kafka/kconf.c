/* kconf: chargeonce configuration -> librdkafka configuration. */
#include "kafka/kconf.h"
#include "util/log.h"

#include <stdbool.h>
#include <stdio.h>
#include <string.h>

/* librdkafka log -> JSON logger. syslog levels: 0..7 */
static void kconf_log_cb(const rd_kafka_t *rk, int level, const char *fac,
                         const char *buf)
{
        struct log_ctx lc = LOG_CTX_INIT;
        enum log_level l  = level <= 3   ? LOG_LVL_ERROR
                            : level <= 4 ? LOG_LVL_WARN
                            : level <= 6 ? LOG_LVL_INFO
                                         : LOG_LVL_DEBUG;
        lc.component      = "librdkafka";
        co_log(l, &lc, "%s: %s: %s", rk ? rd_kafka_name(rk) : "-", fac, buf);
}

int kconf_set(rd_kafka_conf_t *conf, const char *name, const char *value,
              char *errstr, size_t errstr_size)
{
        char rderr[256];

        if (rd_kafka_conf_set(conf, name, value, rderr, sizeof(rderr)) !=
            RD_KAFKA_CONF_OK) {
                snprintf(errstr, errstr_size, "kafka.%s: %s", name, rderr);
                return -1;
        }
        return 0;
}

rd_kafka_conf_t *kconf_new(const struct kafka_opts *ko, enum kconf_role role,
                           char *errstr, size_t errstr_size)
{
        rd_kafka_conf_t *conf = rd_kafka_conf_new();

        rd_kafka_conf_set_log_cb(conf, kconf_log_cb);
        for (size_t i = 0; i < ko->n_props; i++) {
                const char *name  = ko->props[i].name;
                const char *value = ko->props[i].value;
                if (!strncmp(name, "consumer.", 9)) {
                        if (role != KCONF_CONSUMER)
                                continue;
                        name += 9;
                } else if (!strncmp(name, "producer.", 9)) {
                        if (role != KCONF_PRODUCER)
                                continue;
                        name += 9;
                }
                if (kconf_set(conf, name, value, errstr, errstr_size) < 0) {
                        char full[512];
                        snprintf(full, sizeof(full), "kafka.%s: %s",
                                 ko->props[i].name,
                                 strchr(errstr, ' ') ? strchr(errstr, ' ') + 1
                                                     : errstr);
                        snprintf(errstr, errstr_size, "%s", full);
                        rd_kafka_conf_destroy(conf);
                        return NULL;
                }
        }
        return conf;
}

int kconf_check(const struct kafka_opts *ko, char *errstr, size_t errstr_size)
{
        for (int role = KCONF_CONSUMER; role <= KCONF_PRODUCER; role++) {
                rd_kafka_conf_t *conf =
                    kconf_new(ko, (enum kconf_role)role, errstr, errstr_size);
                if (!conf)
                        return -1;
                rd_kafka_conf_destroy(conf);
        }
        return 0;
}

static bool kconf_user_set(const struct kafka_opts *ko, enum kconf_role role,
                           const char *name)
{
        const char *prefix = role == KCONF_CONSUMER ? "consumer." : "producer.";
        for (size_t i = 0; i < ko->n_props; i++) {
                const char *nm = ko->props[i].name;
                if (!strcmp(nm, name) ||
                    (!strncmp(nm, prefix, 9) && !strcmp(nm + 9, name)))
                        return true;
        }
        return false;
}

int kconf_defaults(rd_kafka_conf_t *conf, const struct kafka_opts *ko,
                   enum kconf_role role, const struct kconf_default *d,
                   size_t n, char *errstr, size_t errstr_size)
{
        for (size_t i = 0; i < n; i++)
                if (!kconf_user_set(ko, role, d[i].name) &&
                    kconf_set(conf, d[i].name, d[i].value, errstr,
                              errstr_size) < 0)
                        return -1;
        return 0;
}
