/* SPDX-License-Identifier: Apache-2.0 */
/*
 * pipeline_int: what the pipeline's files share (pipeline.c: lifecycle,
 * loop, offsets; item.c: a message's life and the DLQ; jobs.c: the gateway
 * call and the database jobs). Everything here runs on the loop thread,
 * except the gateway client's read of item.lease_until_ms.
 */
#ifndef CO_PIPELINE_INT_H
#define CO_PIPELINE_INT_H

#include "flow/flow.h"
#include "gateway/client.h"
#include "intent/intent.h"
#include "kafka/consumer.h"
#include "kafka/producer.h"
#include "payment/status.h"
#include "pipeline/dbpool.h"
#include "pipeline/keyq.h"
#include "pipeline/offsets.h"
#include "pipeline/pipeline.h"
#include "store/store.h"
#include "util/compiler.h"
#include "util/log.h"
#include "util/metrics.h"
#include "util/uuid.h"

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

/* At most this many messages taken per turn (and decoded at once). */
#define POLL_BATCH 500
/* After a sift that found most messages not byte for byte recorded, the
 * claims' duplicates turn it on again only after this (sift.c). */
#define SIFT_QUIET_MS 1000

enum stage {
        ST_QUEUED, /* waiting behind an earlier message of its key */
        ST_CLAIM,  /* in a claim batch */
        ST_CHARGE, /* at the gateway */
        ST_SETTLE, /* in a settle batch */
        ST_OUTBOX, /* in a result-only outbox batch */
        ST_DLQ,    /* being produced to the DLQ */
        ST_PROBE,  /* rejected copy: is its intent finished already? */
        ST_SIFT,   /* not decoded yet: is it a recorded event? (sift.c) */
};

struct item {
        struct keyq_node kn;   /* its key's queue: item_of() */
        struct flow_qnode qn;  /* the batch it waits in: item_of_q() */
        struct flow_link live; /* every live item */
        struct pipeline *pl;   /* its owner, for callbacks */
        rd_kafka_message_t *rkm;
        int32_t partition;
        int64_t offset;
        uint32_t gen;
        char *qkey;
        size_t qkey_len;
        enum stage stage;
        struct intent in;
        char key_masked[LOG_MASKED_KEY_SIZE]; /* by pipeline_ctx, lazily */

        /* after claim NEW */
        char payment_id[UUID_STR_LEN];
        char provider_key[STORE_PROVIDER_KEY_LEN];
        int64_t lease_epoch;
        int64_t lease_renewed_ms;
        /* Monotonic ms until which our lease surely holds (the claim's or
         * the last renewal's statement was sent before the database
         * started the lease), or GATEWAY_LEASE_LOST: the gateway client
         * reads it before every POST, so a process frozen past its lease
         * never sends (gateway/presend.h). */
        _Atomic int64_t lease_until_ms;

        /* the result to write */
        enum payment_status status;
        enum outbox_kind obx_kind;
        char replay_payment_id[UUID_STR_LEN];
        char replay_status[STORE_STATUS_LEN];
        char charge_id[GW_CHARGE_ID_SIZE];
        char error_code[GW_ERROR_CODE_SIZE];
        char error_message[GW_ERROR_MESSAGE_SIZE];
        int attempts;
        bool parking; /* its settle was refused: now settled as review */
        char result_event_id[UUID_STR_LEN];
        char *result_json;
        char *result_detail; /* a payment's own result: its compact form */

        int64_t t_start_us;
        /* how its message was answered (enum metric_intent_outcome), -1
         * before: counted once, when it finishes handled */
        int outcome;
        bool overflow;     /* queued past consumer.max_per_key */
        bool dlq_truncate; /* the DLQ refused the whole value: send a cut */

        /* ST_SIFT: the look-up, and the next item polled (sift.c) */
        struct item_sift *sift;
        struct item *sift_next;
        /* SHA-256 of the message value, made once: by the sift, or when
         * an inbox row first needs it (pipeline_msg_digest) */
        bool has_digest;
        unsigned char digest[CRYPTO_SHA256_LEN];
};

struct pipeline_stats {
        uint64_t consumed, dlq, rejected, dup_event, in_progress, replayed,
            conflict, claimed, succeeded, failed, review, unknown_left, fenced,
            settled_already, too_large, db_refused, dlq_failed,
            reclaimed, /* settles that found their payment gone (jobs.c) */
            sifted;    /* duplicate events finished undecoded (sift.c) */
};

struct pipeline {
        struct pipeline_opts o; /* strings borrowed */
        struct kconsumer *kc;
        struct kproducer *dlq;
        struct gateway *gw;
        struct dbpool *db;
        struct offsets *ot;
        struct keyq *kq;
        struct decoder *dec;    /* decode.h */
        struct intent *decoded; /* POLL_BATCH intents, the poll's */
        uint32_t *gens;         /* generation of each assigned partition */
        int32_t n_gens;
        size_t *hot; /* overflow items of each partition (held while > 0) */
        int32_t n_hot;

        struct flow_queue claims, settles, outbox, probes, dlq_retry;
        /* the sift (sift.c): on while recent batches were mostly recorded
         * events; the items polled since, in poll order; those to look up */
        bool sift_on;
        int64_t sift_quiet_until_ms; /* claims turn it on only after */
        struct item *sift_head, *sift_tail;
        struct flow_queue sifts;
        size_t in_flight;
        size_t overflow; /* hot keys: see item.c, pipeline_on_message() */
        int64_t dlq_backoff_ms, dlq_next_ms; /* DLQ failures back off */
        struct flow_renew renew;
        int max_jobs;
        /* an eventfd written by the database workers and by librdkafka,
         * watched by gateway_poll(): the loop sleeps until something
         * happens instead of turning every millisecond; -1 if none */
        int wake_fd;
        bool closing; /* teardown: start nothing new */
        /* a statement did not fit the database's schema (STORE_ERR_SCHEMA):
         * retrying cannot help, the loop stops with an error */
        bool fatal;
        /* the consumer's fatal error was its own rejoin fenced */
        bool rejoin;
        struct flow_list all;
        struct pipeline_stats st, st_logged;
        struct flow_tick stats_tick;

        /* metrics (o.metrics, may be NULL) */
        int32_t n_assigned;        /* partitions assigned now */
        struct flow_tick lag_tick; /* consumer_lag refresh */
        int32_t *lag_parts;        /* scratch for the lag table */
        int64_t *lag_values;
        size_t lag_cap;
        int loop_id; /* metrics_loop_register */
};

static inline struct item *item_of_live(struct flow_link *k)
{
        return FLOW_ENTRY(k, struct item, live);
}

static inline struct item *item_of_q(struct flow_qnode *q)
{
        return q ? FLOW_ENTRY(q, struct item, qn) : NULL;
}

/* item.c */
void pipeline_ctx(const struct pipeline *pl, struct item *it,
                  struct log_ctx *lc);
void pipeline_queue(struct flow_queue *q, struct item *it);
struct item *pipeline_dequeue(struct flow_queue *q);
/* m, decoded into *in (decoder_run); the intent moves into the item:
 * pipeline_item_new, then pipeline_dispatch. */
void pipeline_on_message(struct pipeline *pl, rd_kafka_message_t *m,
                         struct intent *in);
/* The item of a message just polled: counted in flight, its offset taken
 * (poll order); not decoded, not dispatched yet. */
struct item *pipeline_item_new(struct pipeline *pl, rd_kafka_message_t *m);
/* A decoded item (it->in set) goes on: dead-lettered, or queued behind
 * its key and started. */
void pipeline_dispatch(struct pipeline *pl, struct item *it);
void pipeline_item_free(struct pipeline *pl, struct item *it);
void pipeline_finish(struct pipeline *pl, struct item *it, bool handled);
int pipeline_build_result(struct pipeline *pl, struct item *it, bool replayed,
                          const char *payment_id) CO_MUST_CHECK;
void pipeline_to_outbox(struct pipeline *pl, struct item *it,
                        enum outbox_kind kind, const char *payment_id);
void pipeline_set_error(struct item *it, const char *code, const char *msg);
void pipeline_reject(struct pipeline *pl, struct item *it);
void pipeline_dead_letter(struct pipeline *pl, struct item *it,
                          const char *reason);
/* The DLQ retry list, after its back-off (loop turn). */
void pipeline_dlq_retry(struct pipeline *pl);

/* sift.c */
/* The digest the item's inbox row keeps for the sift, or NULL (an intent
 * that did not decode OK keeps none). */
const unsigned char *pipeline_msg_digest(struct item *it);
/* Messages just polled, in order: decoded at once, or sifted first. */
void pipeline_take(struct pipeline *pl, rd_kafka_message_t **msgs, size_t n);
void pipeline_sift_fill(struct item *it, struct sift_item *s);
void pipeline_sift_done(struct pipeline *pl, struct dbjob *j);

/* jobs.c */
void pipeline_charge(struct pipeline *pl, struct item *it);
void pipeline_on_job_done(struct pipeline *pl, struct dbjob *j);
void pipeline_flush_batches(struct pipeline *pl, bool force);
void pipeline_renew_leases(struct pipeline *pl);

#endif
