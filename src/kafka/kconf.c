/* SPDX-License-Identifier: Apache-2.0 */
/*
 * kconf: chargeonce configuration -> librdkafka configuration.
 *
 * Must never: give group.instance.id to any client but the group member
 * (two clients with one identity fence each other).
 */
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

#define INSTANCE_ID "group.instance.id"

/* A property chargeonce sets unless the user set it. */
struct kconf_default {
        const char *name, *value;
};

#define KCONF_N(a) (sizeof(a) / sizeof(*(a)))

static int kconf_defaults(rd_kafka_conf_t *conf, const struct kafka_opts *ko,
                          enum kconf_role role, const struct kconf_default *d,
                          size_t n, char *errstr, size_t errstr_size);

/*
 * Dead links, bounded (docs/configuration.md, "Dead links"): set unless
 * a kafka.* property sets them. librdkafka's own defaults
 * leave a blackholed broker to the kernel: a request in flight waits 60 s
 * (socket.timeout.ms), a connect 30 s, and a reconnect after the heal up
 * to 10 s. With these a request into a blackhole ends the connection after
 * 10 s, a connect attempt after 5 s, keepalives find an idle dead
 * connection, and after a heal a broker is tried again within 1 s.
 */
static const struct kconf_default net_defaults[] = {
        { "socket.keepalive.enable", "true" },
        { "socket.timeout.ms", "10000" },
        { "socket.connection.setup.timeout.ms", "5000" },
        { "reconnect.backoff.max.ms", "1000" },
};

/*
 * The group member's and the producers' defaults. The fetch and the
 * linger trade a few milliseconds for fewer requests, the broker's cost
 * being per request (docs/configuration.md; docs/benchmarks.md, item 5):
 * a fetch is answered once 64 KiB are there or after 5 ms, not at the
 * first byte, and a producer gathers 5 ms of messages (librdkafka 2.0.2's
 * own linger, set so that it holds with any version; the relay's rounds
 * overlap, so it adds at most 5 ms to a result). At a steady moderate
 * rate each request otherwise carries one or two messages.
 */
static const struct kconf_default member_defaults[] = {
        { "auto.offset.reset", "earliest" },
        { "enable.partition.eof", "false" },
        { "client.id", "chargeonce-consumer" },
        /* at the in-flight cap the pipeline stops taking messages and
         * librdkafka holds its prefetch: bound it (librdkafka's default
         * is 64 MB) */
        { "queued.max.messages.kbytes", "16384" },
        { "fetch.wait.max.ms", "5" },
        { "fetch.min.bytes", "65536" },
};
static const struct kconf_default producer_defaults[] = {
        { "linger.ms", "5" },
};
/* Each role's own defaults, after the dead-link bounds every client has. */
static const struct {
        const struct kconf_default *d;
        size_t n;
} role_defaults[] = {
        [KCONF_CONSUMER] = { NULL, 0 },
        [KCONF_PRODUCER] = { producer_defaults, KCONF_N(producer_defaults) },
        [KCONF_MEMBER]   = { member_defaults, KCONF_N(member_defaults) },
};

rd_kafka_conf_t *kconf_new(const struct kafka_opts *ko, enum kconf_role role,
                           char *errstr, size_t errstr_size)
{
        rd_kafka_conf_t *conf = rd_kafka_conf_new();

        rd_kafka_conf_set_log_cb(conf, kconf_log_cb);
        for (size_t i = 0; i < ko->n_props; i++) {
                const char *name  = ko->props[i].name;
                const char *value = ko->props[i].value;
                if (!strncmp(name, "consumer.", 9)) {
                        if (role == KCONF_PRODUCER)
                                continue;
                        name += 9;
                } else if (!strncmp(name, "producer.", 9)) {
                        if (role != KCONF_PRODUCER)
                                continue;
                        name += 9;
                }
                /* resolved into ko->instance_id (kconf_instance_id) and
                 * set below for the group member only */
                if (!strcmp(name, INSTANCE_ID))
                        continue;
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
        if (kconf_defaults(conf, ko, role, net_defaults, KCONF_N(net_defaults),
                           errstr, errstr_size) < 0 ||
            kconf_defaults(conf, ko, role, role_defaults[role].d,
                           role_defaults[role].n, errstr, errstr_size) < 0) {
                rd_kafka_conf_destroy(conf);
                return NULL;
        }
        if (role == KCONF_MEMBER && ko->instance_id && *ko->instance_id &&
            kconf_set(conf, INSTANCE_ID, ko->instance_id, errstr, errstr_size) <
                0) {
                rd_kafka_conf_destroy(conf);
                return NULL;
        }
        return conf;
}

/* Kafka's rule for a group.instance.id (JoinGroupRequest). */
static bool instance_id_valid(const char *id)
{
        size_t n = strlen(id);

        if (n > 249 || !strcmp(id, ".") || !strcmp(id, ".."))
                return false;
        for (size_t i = 0; i < n; i++) {
                char c = id[i];
                if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
                      (c >= '0' && c <= '9') || c == '.' || c == '_' ||
                      c == '-'))
                        return false;
        }
        return true;
}

int kconf_instance_id(const struct kafka_opts *ko, const char *setting,
                      const char *worker_id, char *out, size_t out_size,
                      char *errstr, size_t errstr_size)
{
        const char *explicit = NULL, *ename = NULL, *id, *from;

        out[0] = '\0';
        for (size_t i = 0; i < ko->n_props; i++) {
                const char *nm = ko->props[i].name;
                if (strcmp(nm, INSTANCE_ID) &&
                    strcmp(nm, "consumer." INSTANCE_ID))
                        continue;
                if (explicit && strcmp(explicit, ko->props[i].value)) {
                        snprintf(errstr, errstr_size,
                                 "kafka.%s and kafka.%s disagree: set one",
                                 ename, nm);
                        return -1;
                }
                explicit = ko->props[i].value;
                ename    = nm;
        }
        if (explicit) {
                bool agree = !*setting || !strcmp(setting, explicit) ||
                             (!strcmp(setting, "none") && !*explicit);
                if (!agree) {
                        snprintf(errstr, errstr_size,
                                 INSTANCE_ID " (\"%s\") and kafka.%s "
                                             "(\"%s\") disagree: set one",
                                 setting, ename, explicit);
                        return -1;
                }
                id   = explicit;
                from = ename;
        } else if (!*setting) {
                id   = worker_id;
                from = "worker.id";
        } else {
                id   = strcmp(setting, "none") ? setting : "";
                from = INSTANCE_ID;
        }
        if (*id && !instance_id_valid(id) && !strcmp(from, "worker.id")) {
                snprintf(errstr, errstr_size,
                         "worker.id is not a Kafka group.instance.id "
                         "(letters, digits, '.', '_', '-'; at most 249): "
                         "dynamic membership; set " INSTANCE_ID
                         " for a static one");
                return 1;
        }
        if (*id && !instance_id_valid(id)) {
                snprintf(errstr, errstr_size,
                         INSTANCE_ID
                         " \"%s\" (from %s) is not a Kafka "
                         "group.instance.id (letters, digits, "
                         "'.', '_', '-'; at most 249): set " INSTANCE_ID,
                         id, from);
                return -1;
        }
        if (strlen(id) >= out_size) {
                snprintf(errstr, errstr_size, INSTANCE_ID ": too long");
                return -1;
        }
        snprintf(out, out_size, "%s", id);
        return 0;
}

int kconf_check(const struct kafka_opts *ko, char *errstr, size_t errstr_size)
{
        for (int role = KCONF_CONSUMER; role <= KCONF_MEMBER; role++) {
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
        const char *prefix = role == KCONF_PRODUCER ? "producer." : "consumer.";
        for (size_t i = 0; i < ko->n_props; i++) {
                const char *nm = ko->props[i].name;
                if (!strcmp(nm, name) ||
                    (!strncmp(nm, prefix, 9) && !strcmp(nm + 9, name)))
                        return true;
        }
        return false;
}

/* Sets each default that ko does not set for role (as kafka.<name> or
 * kafka.<role>.<name>). 0, or -1 naming the property. */
static int kconf_defaults(rd_kafka_conf_t *conf, const struct kafka_opts *ko,
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
