/* SPDX-License-Identifier: Apache-2.0 */
/*
 * relay/policy: error classes, the size check and the back-off of the
 * relay (see policy.h). Pure: no I/O, no clock, no global state.
 */
#include "relay/policy.h"

enum relay_err_class relay_classify_err(rd_kafka_resp_err_t err)
{
        switch (err) {
        /* the row: its size or its record. librdkafka 2.0 has no local
         * _MSG_SIZE_TOO_LARGE: a message over the producer's
         * message.max.bytes is refused at produce time with the broker's
         * MSG_SIZE_TOO_LARGE code; the broker uses the same code for a
         * batch over the topic's max.message.bytes. */
        case RD_KAFKA_RESP_ERR_MSG_SIZE_TOO_LARGE:
        case RD_KAFKA_RESP_ERR_INVALID_MSG_SIZE:
        case RD_KAFKA_RESP_ERR_RECORD_LIST_TOO_LARGE:
        case RD_KAFKA_RESP_ERR_INVALID_RECORD:
        case RD_KAFKA_RESP_ERR__INVALID_ARG:
                return RELAY_ERR_ROW;

        /* the topic or the credentials: the same for every row. An
         * unknown topic is only reported once the metadata confirmed it
         * (librdkafka waits topic.metadata.propagation.max.ms), and it
         * may be created later: the rows wait for it. */
        case RD_KAFKA_RESP_ERR__UNKNOWN_TOPIC:
        case RD_KAFKA_RESP_ERR_UNKNOWN_TOPIC_OR_PART:
        case RD_KAFKA_RESP_ERR__UNKNOWN_PARTITION:
        case RD_KAFKA_RESP_ERR_TOPIC_EXCEPTION:
        case RD_KAFKA_RESP_ERR_TOPIC_AUTHORIZATION_FAILED:
        case RD_KAFKA_RESP_ERR_CLUSTER_AUTHORIZATION_FAILED:
        case RD_KAFKA_RESP_ERR_TRANSACTIONAL_ID_AUTHORIZATION_FAILED:
        case RD_KAFKA_RESP_ERR__AUTHENTICATION:
        case RD_KAFKA_RESP_ERR_SASL_AUTHENTICATION_FAILED:
        case RD_KAFKA_RESP_ERR_INVALID_REQUIRED_ACKS:
        case RD_KAFKA_RESP_ERR_UNSUPPORTED_FOR_MESSAGE_FORMAT:
        case RD_KAFKA_RESP_ERR_UNSUPPORTED_VERSION:
        case RD_KAFKA_RESP_ERR__UNSUPPORTED_FEATURE:
        case RD_KAFKA_RESP_ERR_UNSUPPORTED_COMPRESSION_TYPE:
        case RD_KAFKA_RESP_ERR_POLICY_VIOLATION:
        /* the producer sets the timestamp: a refused one is a clock far
         * from the broker's, the same for every row */
        case RD_KAFKA_RESP_ERR_INVALID_TIMESTAMP:
                return RELAY_ERR_TOPIC;

        /* the producer instance: a new one gets a new producer id */
        case RD_KAFKA_RESP_ERR__FATAL:
        case RD_KAFKA_RESP_ERR__FENCED:
        case RD_KAFKA_RESP_ERR_PRODUCER_FENCED:
        case RD_KAFKA_RESP_ERR_INVALID_PRODUCER_EPOCH:
        case RD_KAFKA_RESP_ERR_INVALID_PRODUCER_ID_MAPPING:
        case RD_KAFKA_RESP_ERR_UNKNOWN_PRODUCER_ID:
        case RD_KAFKA_RESP_ERR_OUT_OF_ORDER_SEQUENCE_NUMBER:
                return RELAY_ERR_PRODUCER;

        /* timeouts, transport, purges, leader changes, not enough
         * replicas, throttling, a corrupt message on the wire, and every
         * code not known here */
        default:
                return RELAY_ERR_TRANSIENT;
        }
}

const char *relay_err_class_name(enum relay_err_class c)
{
        switch (c) {
        case RELAY_ERR_ROW:
                return "row";
        case RELAY_ERR_TOPIC:
                return "topic";
        case RELAY_ERR_PRODUCER:
                return "producer";
        case RELAY_ERR_TRANSIENT:
        default:
                return "transient";
        }
}

size_t relay_wire_size(size_t key_len, size_t value_len, size_t n_hdrs,
                       size_t hdrs_len)
{
        /* librdkafka: RD_KAFKAP_MESSAGE_V2_MAX_OVERHEAD (36 bytes) + key
         * + value + the headers' serialised size (two varints of at most
         * 5 bytes each per header). Saturates instead of wrapping. */
        size_t parts[4] = { 64, key_len, value_len, hdrs_len };
        size_t sum      = 0;

        if (n_hdrs > SIZE_MAX / 10)
                return SIZE_MAX;
        parts[0] += n_hdrs * 10;
        for (int i = 0; i < 4; i++) {
                if (parts[i] > SIZE_MAX - sum)
                        return SIZE_MAX;
                sum += parts[i];
        }
        return sum;
}

int64_t relay_backoff_next(int64_t prev_ms, int64_t min_ms, int64_t max_ms,
                           uint32_t rnd, int64_t *next)
{
        int64_t n, half;

        if (min_ms < 1)
                min_ms = 1;
        if (max_ms < min_ms)
                max_ms = min_ms;
        if (prev_ms <= 0)
                n = min_ms;
        else if (prev_ms >= max_ms / 2)
                n = max_ms;
        else
                n = prev_ms * 2;
        if (n < min_ms)
                n = min_ms;
        if (n > max_ms)
                n = max_ms;
        *next = n;
        /* equal jitter: [n - n/2, n] */
        half = n / 2;
        return n - half + (int64_t)(rnd % (uint64_t)(half + 1));
}
