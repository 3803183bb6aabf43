/* SPDX-License-Identifier: Apache-2.0 */
/* producer: idempotent producer with per-message delivery callbacks. */
#include "kafka/producer.h"
#include "kafka/kconf.h"
#include "util/log.h"
#include "util/xalloc.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct kproducer {
        rd_kafka_t *rk;
        rd_kafka_resp_err_t last_err; /* of the last failed kproducer_send */
};

struct dr {
        kproducer_dr_cb *cb;
        void *opaque;
};

static void dr_msg_cb(rd_kafka_t *rk, const rd_kafka_message_t *m, void *opaque)
{
        struct dr *d = m->_private;
        (void)rk;
        (void)opaque;
        if (d) {
                d->cb(d->opaque, m->err);
                free(d);
        }
}

struct kproducer *kproducer_new(const struct kafka_opts *ko,
                                const char *client_id, char *errstr,
                                size_t errstr_size)
{
        struct kproducer *kp = xcalloc(1, sizeof(*kp));
        rd_kafka_conf_t *conf;
        char rderr[512];

        if (!(conf = kconf_new(ko, KCONF_PRODUCER, errstr, errstr_size)))
                goto fail;
        /* the guarantees: not overridable */
        if (kconf_set(conf, "enable.idempotence", "true", errstr, errstr_size) <
                0 ||
            kconf_set(conf, "acks", "all", errstr, errstr_size) < 0 ||
            kconf_set(conf, "client.id", client_id, errstr, errstr_size) < 0) {
                rd_kafka_conf_destroy(conf);
                goto fail;
        }
        rd_kafka_conf_set_dr_msg_cb(conf, dr_msg_cb);
        kp->rk = rd_kafka_new(RD_KAFKA_PRODUCER, conf, rderr, sizeof(rderr));
        if (!kp->rk) {
                snprintf(errstr, errstr_size, "kafka producer: %s", rderr);
                rd_kafka_conf_destroy(conf);
                goto fail;
        }
        return kp;
fail:
        free(kp);
        return NULL;
}

void kproducer_destroy(struct kproducer *kp, int flush_ms)
{
        if (!kp)
                return;
        rd_kafka_flush(kp->rk, flush_ms);
        /* undelivered messages: their callbacks run with an error */
        rd_kafka_purge(kp->rk,
                       RD_KAFKA_PURGE_F_QUEUE | RD_KAFKA_PURGE_F_INFLIGHT);
        rd_kafka_poll(kp->rk, 0);
        rd_kafka_destroy(kp->rk);
        free(kp);
}

int kproducer_send(struct kproducer *kp, const char *topic, const void *key,
                   size_t key_len, const void *value, size_t value_len,
                   const struct kheader *hdrs, size_t n_hdrs,
                   kproducer_dr_cb *cb, void *opaque)
{
        struct dr *d          = xmalloc(sizeof(*d));
        rd_kafka_headers_t *h = NULL;
        rd_kafka_resp_err_t err;

        d->cb     = cb;
        d->opaque = opaque;
        if (n_hdrs) {
                h = rd_kafka_headers_new(n_hdrs);
                for (size_t i = 0; i < n_hdrs; i++)
                        rd_kafka_header_add(h, hdrs[i].name, -1, hdrs[i].value,
                                            (ssize_t)hdrs[i].len);
        }
        err = rd_kafka_producev(
            kp->rk, RD_KAFKA_V_TOPIC(topic), RD_KAFKA_V_KEY(key, key_len),
            RD_KAFKA_V_VALUE((void *)(uintptr_t)value, value_len),
            RD_KAFKA_V_MSGFLAGS(RD_KAFKA_MSG_F_COPY), RD_KAFKA_V_HEADERS(h),
            RD_KAFKA_V_OPAQUE(d), RD_KAFKA_V_END);
        if (err) {
                kp->last_err = err;
                if (h)
                        rd_kafka_headers_destroy(h);
                free(d);
                if (err != RD_KAFKA_RESP_ERR__QUEUE_FULL) {
                        struct log_ctx lc = LOG_CTX_INIT;
                        lc.component      = "kafka";
                        lc.topic          = topic;
                        log_warn(&lc, "produce: %s", rd_kafka_err2str(err));
                }
                return -1;
        }
        return 0;
}

rd_kafka_resp_err_t kproducer_last_error(const struct kproducer *kp)
{
        return kp->last_err;
}

int kproducer_poll(struct kproducer *kp, int timeout_ms)
{
        return rd_kafka_poll(kp->rk, timeout_ms);
}


rd_kafka_t *kproducer_handle(struct kproducer *kp)
{
        return kp->rk;
}
