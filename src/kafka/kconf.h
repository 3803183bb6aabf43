/* SPDX-License-Identifier: Apache-2.0 */
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
 * pass-through properties, in the order they were set, and the group
 * member's static identity (kconf_instance_id()). Borrowed. */
struct kafka_opts {
        const struct kafka_prop *props;
        size_t n_props;
        /* librdkafka's group.instance.id of the group member (KIP-345
         * static membership); NULL or "": dynamic membership */
        const char *instance_id;
        /* why the member is dynamic although worker.id is set (a
         * worker.id Kafka would refuse as an identity), logged by the
         * consumer; NULL otherwise */
        const char *instance_note;
};

/*
 * Which client a configuration is for. KCONF_MEMBER is the one consumer
 * that subscribes to the group (kconsumer) and the only client that gets
 * group.instance.id: an identity held by two clients fences one of them,
 * so admin clients, the replay's range reader and the producers never
 * carry it, even when kafka.group.instance.id is set.
 */
enum kconf_role { KCONF_CONSUMER, KCONF_PRODUCER, KCONF_MEMBER };

/*
 * A new rd_kafka_conf_t holding the kafka.* properties of ko that apply
 * to role (and the logger): kafka.<prop> applies to every client,
 * kafka.consumer.<prop> to consumers only and kafka.producer.<prop> to
 * producers only (so a consumer-only property does not make every
 * producer warn); then, for what ko does not set, chargeonce's defaults:
 * the dead-link bounds for every client, the group member's (fetch
 * batching, the prefetch bound, ...) and the producers' (linger.ms).
 * Owned by the caller (rd_kafka_new() takes it over on success). NULL with a
 * message naming the property on error.
 */
rd_kafka_conf_t *kconf_new(const struct kafka_opts *ko, enum kconf_role role,
                           char *errstr, size_t errstr_size) CO_MUST_CHECK;

/* Sets one property; on error errstr names it as kafka.<name>. */
int kconf_set(rd_kafka_conf_t *conf, const char *name, const char *value,
              char *errstr, size_t errstr_size) CO_MUST_CHECK;

/*
 * The group member's group.instance.id, from the group.instance.id key
 * (setting), worker.id and an explicit kafka.group.instance.id (or
 * kafka.consumer.group.instance.id) in ko:
 *   explicit property set   its value wins; setting must be "" or agree
 *                           ("none" agrees with an empty value only)
 *   setting ""              worker_id (dynamic membership if that is "")
 *   setting "none"          "" (dynamic membership)
 *   any other setting       used as is
 * A non-empty result must be a valid Kafka identity (letters, digits,
 * '.', '_', '-'; at most 249 bytes): an explicit value that is not is an
 * error; a worker.id that is not gives dynamic membership and returns 1
 * with the reason in errstr (worker.id also names the operator of the
 * review commands, where any name is fine). Writes the identity to out
 * (always terminated). 0, 1, or -1 with a message naming the keys.
 */
int kconf_instance_id(const struct kafka_opts *ko, const char *setting,
                      const char *worker_id, char *out, size_t out_size,
                      char *errstr, size_t errstr_size) CO_MUST_CHECK;

/* Checks every kafka.* property of ko; 0 or -1 naming the bad one. */
int kconf_check(const struct kafka_opts *ko, char *errstr,
                size_t errstr_size) CO_MUST_CHECK;

#endif
