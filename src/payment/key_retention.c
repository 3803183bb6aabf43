/* SPDX-License-Identifier: Apache-2.0 */
/*
 * payment/key_retention: the retention rule of `chargeonce gc` (see
 * key_retention.h). Pure: no I/O.
 */
#include "payment/key_retention.h"
#include "util/timeutil.h"

#include <inttypes.h>
#include <stdio.h>

int payment_key_retention_check(int64_t key_ms, int64_t topic_ms,
                                const char *topic, int64_t gateway_ms,
                                char *errstr, size_t errstr_size)
{
        char k[32], t[32], g[32];

        duration_format(key_ms, k, sizeof(k));
        if (topic_ms == KEY_RETENTION_FOREVER) {
                snprintf(errstr, errstr_size,
                         "idempotency.retention %s (%" PRId64 " ms) is "
                         "shorter than retention.ms of topic %s, -1 "
                         "(forever): every old intent can still be "
                         "delivered again; give the topic a finite "
                         "retention.ms no longer than idempotency.retention",
                         k, key_ms, topic);
                return -1;
        }
        if (topic_ms > key_ms) {
                duration_format(topic_ms, t, sizeof(t));
                snprintf(errstr, errstr_size,
                         "idempotency.retention %s (%" PRId64 " ms) is "
                         "shorter than retention.ms of topic %s, %s (%" PRId64
                         " ms)",
                         k, key_ms, topic, t, topic_ms);
                return -1;
        }
        if (gateway_ms > key_ms) {
                duration_format(gateway_ms, g, sizeof(g));
                snprintf(errstr, errstr_size,
                         "idempotency.retention %s (%" PRId64 " ms) is "
                         "shorter than gateway.key_retention %s (%" PRId64
                         " ms)",
                         k, key_ms, g, gateway_ms);
                return -1;
        }
        return 0;
}
