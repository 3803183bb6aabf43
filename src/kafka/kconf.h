/*
 * kconf: turns chargeonce's configuration into librdkafka configuration.
 * Every kafka.<property> is passed to rd_kafka_conf_set() as kcat does;
 * librdkafka's own messages name the bad property. librdkafka's log goes
 * through chargeonce's JSON logger.
 */
#ifndef CO_KCONF_H
#define CO_KCONF_H

#include "util/compiler.h"

#include <librdkafka/rdkafka.h>
#include <stddef.h>

/* One librdkafka property, as the operator set it (kafka.<name> = value,
 * without the "kafka." prefix; "consumer." / "producer." route it). */
struct kafka_prop {
        const char *name, *value;
};

/* What chargeonce's configuration gives the kafka module: the
 * pass-through properties, in the order they were set. Borrowed. */
struct kafka_opts {
        const struct kafka_prop *props;
        size_t n_props;
};

/* Which client a configuration is for. */
enum kconf_role { KCONF_CONSUMER, KCONF_PRODUCER };

/*
 * A new rd_kafka_conf_t holding the kafka.* properties of ko that apply
 * to role (and the logger): kafka.<prop> applies to every client,
 * kafka.consumer.<prop> to consumers only and kafka.producer.<prop> to
 * producers only (so a consumer-only property does not make every
 * producer warn). Owned by the caller (rd_kafka_new() takes it over on
 * success). NULL with a message naming the property on error.
 */
rd_kafka_conf_t *kconf_new(const struct kafka_opts *ko, enum kconf_role role,
                           char *errstr, size_t errstr_size) CO_MUST_CHECK;

/* Sets one property; on error errstr names it as kafka.<name>. */
int kconf_set(rd_kafka_conf_t *conf, const char *name, const char *value,
              char *errstr, size_t errstr_size) CO_MUST_CHECK;

/* A property chargeonce sets unless the user set it. */
struct kconf_default {
        const char *name, *value;
};

/* Sets each default that ko does not set for role (as kafka.<name> or
 * kafka.<role>.<name>). 0, or -1 naming the property. */
int kconf_defaults(rd_kafka_conf_t *conf, const struct kafka_opts *ko,
                   enum kconf_role role, const struct kconf_default *d,
                   size_t n, char *errstr, size_t errstr_size) CO_MUST_CHECK;

/* Checks every kafka.* property of ko; 0 or -1 naming the bad one. */
int kconf_check(const struct kafka_opts *ko, char *errstr,
                size_t errstr_size) CO_MUST_CHECK;

#endif
