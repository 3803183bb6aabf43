/*
 * pipeline: the consume loop (see pipeline.h).
 *
 * One event-loop thread owns every item. Blocking database calls run on
 * dbpool's threads; their results come back as finished jobs. Gateway calls
 * run concurrently on the libcurl multi handle of the gateway client, whose
 * poll is also the loop's wait.
 *
 * Must never: store an offset before every message up to it is durably
 * handled; call the gateway for an intent it did not claim as new; report
 * an unknown gateway outcome as failed; hold a database transaction across
 * a gateway call; log a full idempotency key or a payment method.
 */
#include "pipeline/pipeline.h"
#include "gateway/client.h"
#include "gateway/presend.h"
#include "intent/intent.h"
#include "kafka/consumer.h"
#include "kafka/kconf.h"
#include "kafka/producer.h"
#include "payment/result.h"
#include "payment/status.h"
#include "pipeline/dbpool.h"
#include "pipeline/keyq.h"
#include "pipeline/offsets.h"
#include "reconcile/reconcile.h"
#include "relay/relay.h"
#include "store/store.h"
#include "util/config.h"
#include "util/failpoint.h"
#include "util/log.h"
#include "util/timeutil.h"
#include "util/utf8.h"
#include "util/uuid.h"

#include <stdatomic.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

enum stage {
        ST_QUEUED, /* waiting behind an earlier message of its key */
        ST_CLAIM,  /* in a claim batch */
        ST_CHARGE, /* at the gateway */
        ST_SETTLE, /* in a settle batch */
        ST_OUTBOX, /* in a result-only outbox batch */
        ST_DLQ,    /* being produced to the DLQ */
        ST_PROBE,  /* rejected copy: is its intent finished already? */
};

struct item {
        struct keyq_node kn;        /* first: item_of() */
        struct item *next;          /* pending batch lists */
        int64_t batched_us;         /* when it joined its batch */
        struct pipeline *pl;        /* its owner, for callbacks */
        struct item *aprev, *anext; /* every live item */
        rd_kafka_message_t *rkm;
        int32_t partition;
        int64_t offset;
        uint32_t gen;
        char *qkey;
        size_t qkey_len;
        enum stage stage;
        struct intent in;
        char key_masked[LOG_MASKED_KEY_SIZE];

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
        int64_t claimed_ms; /* when the claim came back */

        /* the result to write */
        enum payment_status status;
        enum outbox_kind obx_kind;
        char replay_payment_id[UUID_STR_LEN];
        char replay_status[STORE_STATUS_LEN];
        char charge_id[GW_CHARGE_ID_SIZE];
        char error_code[GW_ERROR_CODE_SIZE];
        char error_message[GW_ERROR_MESSAGE_SIZE];
        int attempts;
        char result_event_id[UUID_STR_LEN];
        char *result_json;

        int64_t t_start_us;
        bool overflow;     /* queued past consumer.max_per_key */
        bool dlq_truncate; /* the DLQ refused the whole value: send a cut */
};

struct batch {
        struct item *head, *tail; /* head: the oldest, its batched_us */
        size_t n;
};

struct stats {
        uint64_t consumed, dlq, rejected, dup_event, in_progress, replayed,
            conflict, claimed, succeeded, failed, review, unknown_left, fenced,
            settled_already, too_large, db_refused, dlq_failed;
};

struct pipeline {
        const struct config *cfg;
        struct kconsumer *kc;
        struct kproducer *dlq;
        struct relay *relay;    /* outbox -> topic.results, own thread */
        struct reconciler *rec; /* expired leases -> final, own thread */
        struct gateway *gw;
        struct dbpool *db;
        struct offsets *ot;
        struct keyq *kq;
        const char *topic, *topic_dlq;
        char owner[128];
        uint32_t *gens; /* generation of each assigned partition */
        int32_t n_gens;
        size_t *hot; /* overflow items of each partition (held while > 0) */
        int32_t n_hot;

        struct batch claims, settles, outbox, probes, dlq_retry;
        size_t in_flight, max_in_flight, batch_size;
        size_t overflow, max_per_key; /* hot keys: see on_message() */
        size_t max_message_bytes;
        int64_t dlq_backoff_ms, dlq_next_ms; /* DLQ failures back off */
        int64_t linger_us, lease_ms, renew_every_ms, last_renew_ms;
        int max_jobs;
        bool closing; /* teardown: start nothing new */
        struct item *all;
        struct stats st, st_logged;
        int64_t last_stats_ms;
};

static struct item *item_of(struct keyq_node *n)
{
        return (struct item *)(void *)((char *)n - offsetof(struct item, kn));
}

static void ctx_of(const struct pipeline *pl, const struct item *it,
                   struct log_ctx *lc)
{
        *lc           = (struct log_ctx)LOG_CTX_INIT;
        lc->component = "consume";
        lc->topic     = pl->topic;
        lc->partition = it->partition;
        lc->offset    = it->offset;
        if (it->payment_id[0])
                lc->payment_id = it->payment_id;
        if (it->in.tenant_id)
                lc->tenant_id = it->in.tenant_id;
        if (it->key_masked[0])
                lc->key_masked = it->key_masked;
}

/* ------------------------------------------------------------------ */
/* batches                                                             */

static void batch_add(struct batch *b, struct item *it)
{
        it->next       = NULL;
        it->batched_us = time_mono_us();
        if (b->tail)
                b->tail->next = it;
        else
                b->head = it;
        b->tail = it;
        b->n++;
}

static struct item *batch_take(struct batch *b)
{
        struct item *it = b->head;
        if (!it)
                return NULL;
        b->head = it->next;
        if (!b->head)
                b->tail = NULL;
        b->n--;
        it->next = NULL;
        return it;
}

/* ------------------------------------------------------------------ */
/* item life                                                           */

static void start_item(struct pipeline *pl, struct item *it);

static void item_free(struct pipeline *pl, struct item *it)
{
        if (it->aprev)
                it->aprev->anext = it->anext;
        else
                pl->all = it->anext;
        if (it->anext)
                it->anext->aprev = it->aprev;
        intent_reset(&it->in);
        free(it->result_json);
        free(it->qkey);
        if (it->rkm)
                rd_kafka_message_destroy(it->rkm);
        free(it);
}

/*
 * Counts an overflow item of partition p in or out. The partition is held
 * (its fetching paused, see kconsumer_hold) while it has any, so a hot key
 * stalls only its own partition, never the others.
 */
static void hot_adjust(struct pipeline *pl, int32_t p, int delta)
{
        if (p < 0)
                return;
        if (p >= pl->n_hot) {
                size_t *h = realloc(pl->hot, (size_t)(p + 1) * sizeof(*h));
                if (!h)
                        abort();
                memset(h + pl->n_hot, 0,
                       (size_t)(p + 1 - pl->n_hot) * sizeof(*h));
                pl->hot   = h;
                pl->n_hot = p + 1;
        }
        if (delta > 0 && pl->hot[p]++ == 0 && pl->kc)
                kconsumer_hold(pl->kc, p, true);
        if (delta < 0 && --pl->hot[p] == 0 && pl->kc)
                kconsumer_hold(pl->kc, p, false);
}

/*
 * The item is finished. handled: its message is durably dealt with, so its
 * offset may be stored; false (shutdown) leaves it to redelivery. Starts
 * the next message of the same key.
 */
static void finish_item(struct pipeline *pl, struct item *it, bool handled)
{
        struct keyq_node *next = NULL;

        if (handled)
                offsets_done(pl->ot, it->partition, it->gen, it->offset);
        if (it->qkey)
                next = keyq_pop(pl->kq, it->qkey, it->qkey_len);
        if (it->overflow) {
                pl->overflow--;
                hot_adjust(pl, it->partition, -1);
        } else {
                pl->in_flight--;
        }
        item_free(pl, it);
        if (next)
                start_item(pl, item_of(next));
}

/* Builds it->result_json for it->status (a new result event id). */
static int build_result(struct pipeline *pl, struct item *it, bool replayed,
                        const char *payment_id)
{
        struct payment_result r;
        char now[40], err[256];
        size_t len;
        struct log_ctx lc;

        if (!uuid_v4(it->result_event_id))
                abort();
        rfc3339_format(time_wall_ms(), now, sizeof(now));
        memset(&r, 0, sizeof(r));
        r.event_id           = it->result_event_id;
        r.intent_event_id    = it->in.event_id;
        r.tenant_id          = it->in.tenant_id;
        r.idempotency_key    = it->in.idempotency_key;
        r.order_id           = it->in.order_id;
        r.payment_id         = payment_id;
        r.status             = it->status;
        r.has_amount         = it->in.verdict == INTENT_OK || it->in.has_amount;
        r.amount             = it->in.amount;
        r.currency           = it->in.currency;
        r.provider_charge_id = it->charge_id[0] ? it->charge_id : NULL;
        r.error_code         = it->error_code[0] ? it->error_code : NULL;
        r.error_message      = it->error_code[0] ? it->error_message : NULL;
        r.replayed           = replayed;
        r.occurred_at        = now;
        free(it->result_json);
        it->result_json = NULL;
        if (payment_result_build(&r, &it->result_json, &len, err, sizeof(err)) <
            0) {
                ctx_of(pl, it, &lc);
                log_error(&lc, "cannot build the %s result: %s",
                          payment_status_name(it->status), err);
                return -1;
        }
        return 0;
}

static bool dlq_send(struct pipeline *pl, struct item *it);
static void dlq_failed(struct pipeline *pl, struct item *it,
                       rd_kafka_resp_err_t err);
static void dead_letter(struct pipeline *pl, struct item *it,
                        const char *reason);

static void to_outbox(struct pipeline *pl, struct item *it,
                      enum outbox_kind kind, const char *payment_id)
{
        it->obx_kind = kind;
        if (build_result(pl, it, kind == OUTBOX_REPLAY, payment_id) < 0) {
                /* cannot happen with what intent and gateway let through;
                 * if it does, this one message is dead-lettered, never
                 * the process stopped */
                dead_letter(pl, it, "result_unbuildable");
                return;
        }
        it->stage = ST_OUTBOX;
        batch_add(&pl->outbox, it);
}

/* error.code and error.message of the result, always valid UTF-8 cut on
 * a code-point boundary, whatever the gateway or the store handed in. */
static void set_error(struct item *it, const char *code, const char *msg)
{
        (void)utf8_clean(code, strlen(code), (size_t)-1, it->error_code,
                         sizeof(it->error_code), NULL);
        (void)utf8_clean(msg, strlen(msg), (size_t)-1, it->error_message,
                         sizeof(it->error_message), NULL);
}

/* Answers it `rejected` with the rule it broke. */
static void reject_item(struct pipeline *pl, struct item *it)
{
        it->status = PAYMENT_STATUS_REJECTED;
        set_error(it, it->in.reason, it->in.message);
        pl->st.rejected++;
        to_outbox(pl, it, OUTBOX_REJECTED, NULL);
}

/* A message whose key is free starts here. */
static void start_item(struct pipeline *pl, struct item *it)
{
        if (it->in.verdict == INTENT_REJECTED) {
                /* Broken only outside the request hash: it may be a copy
                 * of a finished intent, whose stored outcome it gets
                 * (a copy never contradicts a stored outcome). */
                if (it->in.has_hash) {
                        it->stage = ST_PROBE;
                        batch_add(&pl->probes, it);
                        return;
                }
                reject_item(pl, it);
                return;
        }
        it->stage = ST_CLAIM;
        batch_add(&pl->claims, it);
}

/* ------------------------------------------------------------------ */
/* DLQ                                                                  */

/* The DLQ's value when the whole message cannot be written there. */
#define DLQ_TRUNCATED_BYTES 65536
#define DLQ_BACKOFF_MIN_MS  100
#define DLQ_BACKOFF_MAX_MS  30000

/* Errors after which the same value will never be accepted. */
static bool dlq_too_large(rd_kafka_resp_err_t err)
{
        return err == RD_KAFKA_RESP_ERR_MSG_SIZE_TOO_LARGE ||
               err == RD_KAFKA_RESP_ERR_RECORD_LIST_TOO_LARGE;
}

/*
 * A DLQ write failed: the message goes back on the retry list, which is
 * not tried again before a backoff (100 ms doubling to 30 s, reset by the
 * next success), so a DLQ that cannot be written never busy-loops; its
 * offset is not stored meanwhile. A value too large for the DLQ is sent
 * again cut to its first 64 KiB (header dlq-truncated: the original size;
 * the source partition and offset name the whole message).
 */
static void dlq_failed(struct pipeline *pl, struct item *it,
                       rd_kafka_resp_err_t err)
{
        int64_t now = time_mono_ms();
        struct log_ctx lc;

        ctx_of(pl, it, &lc);
        pl->st.dlq_failed++;
        if (dlq_too_large(err) && !it->dlq_truncate) {
                it->dlq_truncate = true;
                log_warn(&lc,
                         "DLQ refused the %zu-byte value (%s); sending "
                         "it cut to %d bytes",
                         it->rkm->len, rd_kafka_err2str(err),
                         DLQ_TRUNCATED_BYTES);
                batch_add(&pl->dlq_retry, it);
                return;
        }
        pl->dlq_backoff_ms = pl->dlq_backoff_ms == 0 ? DLQ_BACKOFF_MIN_MS
                                                     : pl->dlq_backoff_ms * 2;
        if (pl->dlq_backoff_ms > DLQ_BACKOFF_MAX_MS)
                pl->dlq_backoff_ms = DLQ_BACKOFF_MAX_MS;
        pl->dlq_next_ms = now + pl->dlq_backoff_ms;
        log_error(&lc,
                  "DLQ write failed (%s); the message is kept and its "
                  "offset held; trying again in %lld ms",
                  rd_kafka_err2str(err), (long long)pl->dlq_backoff_ms);
        batch_add(&pl->dlq_retry, it);
}

static void dlq_done(void *opaque, rd_kafka_resp_err_t err)
{
        struct item *it     = opaque;
        struct pipeline *pl = it->pl;
        struct log_ctx lc;

        ctx_of(pl, it, &lc);
        if (err) {
                if (pl->closing) {
                        log_warn(&lc,
                                 "DLQ delivery failed at shutdown (%s); "
                                 "redelivered later",
                                 rd_kafka_err2str(err));
                        finish_item(pl, it, false);
                } else {
                        dlq_failed(pl, it, err);
                }
                return;
        }
        pl->dlq_backoff_ms = 0;
        log_warn(&lc, "dead-lettered: %s", it->in.reason);
        pl->st.dlq++;
        finish_item(pl, it, true);
}

/*
 * This message cannot be answered after all (the database refuses it, or
 * its answer cannot be built): dead-letter it with reason, so it is
 * recorded exactly once and nothing waits behind it.
 */
static void dead_letter(struct pipeline *pl, struct item *it,
                        const char *reason)
{
        struct log_ctx lc;

        ctx_of(pl, it, &lc);
        log_error(&lc, "message cannot be answered (%s): dead-lettered",
                  reason);
        snprintf(it->in.reason, sizeof(it->in.reason), "%s", reason);
        dlq_send(pl, it);
}

/* Queues it for the DLQ; false (queue full) puts it on the retry list. */
static bool dlq_send(struct pipeline *pl, struct item *it)
{
        char part[16], off[24], orig[24];
        const rd_kafka_message_t *m = it->rkm;
        size_t len                  = m->len;
        int nh                      = 4;
        struct kheader h[5]         = {
                        { "dlq-reason", it->in.reason, strlen(it->in.reason) },
                        { "dlq-source-topic", pl->topic, strlen(pl->topic) },
                        { "dlq-source-partition", part, 0 },
                        { "dlq-source-offset", off, 0 },
                        { "dlq-truncated", orig, 0 },
        };

        snprintf(part, sizeof(part), "%d", (int)it->partition);
        snprintf(off, sizeof(off), "%lld", (long long)it->offset);
        h[2].len = strlen(part);
        h[3].len = strlen(off);
        if (it->dlq_truncate && len > DLQ_TRUNCATED_BYTES) {
                snprintf(orig, sizeof(orig), "%zu", len);
                h[4].len = strlen(orig);
                len      = DLQ_TRUNCATED_BYTES;
                nh       = 5;
        }
        it->stage = ST_DLQ;
        if (kproducer_send(pl->dlq, pl->topic_dlq, m->key, m->key_len,
                           m->payload, len, h, nh, dlq_done, it) < 0) {
                rd_kafka_resp_err_t err = kproducer_last_error(pl->dlq);

                if (err == RD_KAFKA_RESP_ERR__QUEUE_FULL) {
                        batch_add(&pl->dlq_retry, it);
                        return false;
                }
                dlq_failed(pl, it, err); /* retried later, after a pause */
                return true;
        }
        return true;
}

/* ------------------------------------------------------------------ */
/* incoming messages                                                    */

static uint32_t gen_of(struct pipeline *pl, int32_t p)
{
        return p >= 0 && p < pl->n_gens ? pl->gens[p] : 0;
}

static void on_message(struct pipeline *pl, rd_kafka_message_t *m)
{
        struct item *it = calloc(1, sizeof(*it));
        struct log_ctx lc;

        if (!it)
                abort();
        it->anext = pl->all;
        if (pl->all)
                pl->all->aprev = it;
        pl->all        = it;
        it->pl         = pl;
        it->rkm        = m;
        it->partition  = m->partition;
        it->offset     = m->offset;
        it->gen        = gen_of(pl, m->partition);
        it->t_start_us = time_mono_us();
        atomic_init(&it->lease_until_ms, 0);
        intent_init(&it->in);
        pl->in_flight++;
        pl->st.consumed++;
        if (offsets_add(pl->ot, it->partition, it->gen, it->offset) < 0) {
                /* not ours (revoked meanwhile) or a re-fetched offset: the
                 * work is still safe to do, its offset is just not ours */
                it->gen = 0;
        }
        if (m->len + m->key_len > pl->max_message_bytes) {
                /* before parsing: a message this large is no intent (the
                 * key counts too: it is copied for the per-key queue) */
                it->in.verdict = INTENT_DLQ;
                snprintf(it->in.reason, sizeof(it->in.reason),
                         "message_too_large");
                pl->st.too_large++;
        } else if (intent_parse(m->payload, m->len, &it->in) < 0) {
                abort(); /* out of memory */
        }
        if (it->in.idempotency_key)
                log_mask_key(it->in.idempotency_key,
                             strlen(it->in.idempotency_key), it->key_masked,
                             sizeof(it->key_masked));
        ctx_of(pl, it, &lc);
        log_debug(&lc, "intent %s", intent_verdict_name(it->in.verdict));

        if (it->in.verdict == INTENT_DLQ) {
                dlq_send(pl, it);
                return;
        }
        /* per-key order: the Kafka key, else tenant/key of the intent */
        if (m->key_len > 0) {
                it->qkey_len = m->key_len;
                it->qkey     = malloc(m->key_len);
                if (!it->qkey)
                        abort();
                memcpy(it->qkey, m->key, m->key_len);
        } else if (payment_result_key(it->in.tenant_id, it->in.idempotency_key,
                                      &it->qkey, &it->qkey_len) < 0) {
                abort();
        }
        if (keyq_push(pl->kq, it->qkey, it->qkey_len, &it->kn)) {
                start_item(pl, it);
                return;
        }
        it->stage = ST_QUEUED;
        /*
         * One hot key must not take every in-flight slot from the other
         * keys: past max_per_key waiting messages of one key, a message
         * counts against a separate budget (pl->overflow, also capped at
         * max_in_flight, so memory stays bounded), not against in_flight,
         * and its partition is held until that key's queue is short
         * again: the hot key stalls its own partition only.
         */
        if (keyq_len(pl->kq, it->qkey, it->qkey_len) > pl->max_per_key) {
                it->overflow = true;
                pl->in_flight--;
                pl->overflow++;
                hot_adjust(pl, it->partition, +1);
        }
}

/* ------------------------------------------------------------------ */
/* gateway                                                              */

static void settle_add(struct pipeline *pl, struct item *it)
{
        if (build_result(pl, it, false, it->payment_id) < 0) {
                struct log_ctx lc;

                /* the payment stays processing; the reconciler settles it
                 * once the lease expires (never a stopped process) */
                ctx_of(pl, it, &lc);
                log_error(&lc, "result cannot be built: payment left "
                               "processing for the reconciler");
                pl->st.unknown_left++;
                finish_item(pl, it, true);
                return;
        }
        it->stage = ST_SETTLE;
        batch_add(&pl->settles, it);
}

static void on_gateway_done(void *opaque, const struct gateway_result *res)
{
        struct item *it     = opaque;
        struct pipeline *pl = it->pl;
        struct log_ctx lc;

        it->attempts = res->attempts;
        ctx_of(pl, it, &lc);
        if (FAILPOINT("gateway.after_answer") < 0) {
                log_warn(&lc, "failpoint gateway.after_answer: outcome "
                              "dropped, left to the reconciler");
                pl->st.unknown_left++;
                finish_item(pl, it, true);
                return;
        }
        switch (res->outcome) {
        case GW_SUCCEEDED:
                it->status = PAYMENT_STATUS_SUCCEEDED;
                snprintf(it->charge_id, sizeof(it->charge_id), "%s",
                         res->charge_id);
                break;
        case GW_FAILED:
                it->status = PAYMENT_STATUS_FAILED;
                snprintf(it->charge_id, sizeof(it->charge_id), "%s",
                         res->charge_id);
                set_error(
                    it, res->error_code[0] ? res->error_code : "payment_failed",
                    res->error_message[0] ? res->error_message
                                          : "the gateway refused the "
                                            "payment");
                break;
        case GW_DEFECT:
                /* never charge again, never call it failed: a person
                 * decides (contract section 4) */
                it->status = PAYMENT_STATUS_REVIEW;
                set_error(
                    it, res->error_code[0] ? res->error_code : "gateway_defect",
                    res->reason ? res->reason
                                : "the gateway refused the request");
                log_error(&lc,
                          "gateway defect (HTTP %d, %s): payment goes to "
                          "review",
                          res->http_status, res->reason ? res->reason : "");
                break;
        default:
                /* unknown: stays processing under our lease, which we stop
                 * renewing; the reconciler takes it over when it expires
                 * and asks the gateway with the same key */
                log_warn(&lc,
                         "gateway outcome unknown after %d attempt(s) (%s); "
                         "left processing for the reconciler",
                         res->attempts, res->reason ? res->reason : "");
                pl->st.unknown_left++;
                finish_item(pl, it, true);
                return;
        }
        settle_add(pl, it);
}

static void charge(struct pipeline *pl, struct item *it)
{
        struct gateway_charge_req req;
        char err[256];
        struct log_ctx lc;

        ctx_of(pl, it, &lc);
        it->stage            = ST_CHARGE;
        it->lease_renewed_ms = time_mono_ms();
        if (pl->closing) {
                /* claimed, never sent: the reconciler finishes it */
                finish_item(pl, it, true);
                return;
        }
        if (FAILPOINT("gateway.before_send") < 0) {
                log_warn(&lc, "failpoint gateway.before_send: not sent, left "
                              "to the reconciler");
                pl->st.unknown_left++;
                finish_item(pl, it, true);
                return;
        }
        memset(&req, 0, sizeof(req));
        req.payment_id     = it->payment_id;
        req.provider_key   = it->provider_key;
        req.tenant_id      = it->in.tenant_id;
        req.order_id       = it->in.order_id;
        req.currency       = it->in.currency;
        req.payment_method = it->in.payment_method;
        req.amount         = it->in.amount;
        req.lease_until_ms = &it->lease_until_ms;
        /* A claim that waited this long may have lost its lease to the
         * reconciler, which may have posted already: with a gateway that
         * ignores keys, ask before posting (the settle is fenced anyway). */
        req.resume = time_mono_ms() - it->claimed_ms > pl->lease_ms / 2;
        if (gateway_charge(pl->gw, &req, on_gateway_done, it, err,
                           sizeof(err)) < 0) {
                /* the request cannot be sent at all: a defect; the payment
                 * goes to review rather than anywhere near failed */
                it->status = PAYMENT_STATUS_REVIEW;
                set_error(it, "gateway_request_invalid", err);
                log_error(&lc, "gateway request refused by the client: %s",
                          err);
                settle_add(pl, it);
        }
}

/* ------------------------------------------------------------------ */
/* database jobs                                                        */

static struct dbjob *job_from(struct pipeline *pl, struct batch *b,
                              enum dbjob_kind kind)
{
        size_t n        = b->n < pl->batch_size ? b->n : pl->batch_size;
        struct dbjob *j = dbjob_new(kind, n);

        for (size_t i = 0; i < n; i++) {
                struct item *it = batch_take(b);
                j->owners[j->n] = it;
                switch (kind) {
                case DBJOB_CLAIM: {
                        struct claim_item *c = &j->claims[j->n];
                        c->event_id          = it->in.event_key;
                        c->tenant_id         = it->in.tenant_id;
                        c->idem_key          = it->in.idempotency_key;
                        memcpy(c->request_hash, it->in.request_hash,
                               sizeof(c->request_hash));
                        c->order_id       = it->in.order_id;
                        c->customer_id    = it->in.customer_id;
                        c->amount         = it->in.amount;
                        c->currency       = it->in.currency;
                        c->payment_method = it->in.payment_method;
                        c->topic          = pl->topic;
                        c->partition      = it->partition;
                        c->offset         = it->offset;
                        break;
                }
                case DBJOB_SETTLE: {
                        struct settle_item *s = &j->settles[j->n];
                        s->payment_id         = it->payment_id;
                        s->lease_epoch        = it->lease_epoch;
                        s->status = it->status == PAYMENT_STATUS_SUCCEEDED
                                        ? SETTLE_SUCCEEDED
                                    : it->status == PAYMENT_STATUS_FAILED
                                        ? SETTLE_FAILED
                                        : SETTLE_REVIEW;
                        s->provider_charge_id =
                            it->charge_id[0] ? it->charge_id : NULL;
                        s->error_code =
                            it->error_code[0] ? it->error_code : NULL;
                        s->error_message =
                            it->error_code[0] ? it->error_message : NULL;
                        s->attempts        = it->attempts;
                        s->result_event_id = it->result_event_id;
                        s->result_json     = it->result_json;
                        break;
                }
                case DBJOB_OUTBOX: {
                        struct outbox_item *o = &j->outbox[j->n];
                        o->kind               = it->obx_kind;
                        o->result_event_id    = it->result_event_id;
                        o->intent_event_id    = it->in.event_key;
                        o->tenant_id          = it->in.tenant_id;
                        o->idem_key           = it->in.idempotency_key;
                        o->payment_id         = it->obx_kind == OUTBOX_REPLAY
                                                    ? it->replay_payment_id
                                                    : NULL;
                        o->replay_status      = it->obx_kind == OUTBOX_REPLAY
                                                    ? it->replay_status
                                                    : NULL;
                        o->result_json        = it->result_json;
                        o->topic              = pl->topic;
                        o->partition          = it->partition;
                        o->offset             = it->offset;
                        break;
                }
                case DBJOB_PROBE: {
                        struct probe_item *q = &j->probes[j->n];
                        q->tenant_id         = it->in.tenant_id;
                        q->idem_key          = it->in.idempotency_key;
                        memcpy(q->request_hash, it->in.request_hash,
                               sizeof(q->request_hash));
                        break;
                }
                case DBJOB_RENEW:
                        abort();
                }
                j->n++;
        }
        return j;
}

/* Answers it with the stored outcome of its finished intent (replayed). */
static void replay_stored(struct pipeline *pl, struct item *it,
                          const char *payment_id,
                          const struct store_outcome *stored)
{
        pl->st.replayed++;
        if (!payment_status_parse(stored->status, &it->status) ||
            !payment_status_is_result(it->status)) {
                dead_letter(pl, it, "stored_outcome_invalid");
                return;
        }
        snprintf(it->replay_payment_id, sizeof(it->replay_payment_id), "%s",
                 payment_id);
        snprintf(it->replay_status, sizeof(it->replay_status), "%s",
                 stored->status);
        snprintf(it->charge_id, sizeof(it->charge_id), "%s",
                 stored->provider_charge_id ? stored->provider_charge_id : "");
        if (stored->error_code)
                set_error(it, stored->error_code,
                          stored->error_message ? stored->error_message : "");
        to_outbox(pl, it, OUTBOX_REPLAY, it->replay_payment_id);
}

/* A rejected copy whose hashed fields are valid, after the probe. */
static void on_probed(struct pipeline *pl, struct item *it,
                      const struct probe_item *q)
{
        struct log_ctx lc;

        switch (q->outcome) {
        case PROBE_FINAL:
                ctx_of(pl, it, &lc);
                log_info(&lc,
                         "copy of a finished intent with a field now "
                         "rejected (%s): stored outcome replayed",
                         it->in.reason);
                replay_stored(pl, it, q->payment_id, &q->stored);
                return;
        case PROBE_PROCESSING:
                /* the first copy's result answers this one */
                pl->st.in_progress++;
                finish_item(pl, it, true);
                return;
        case PROBE_NONE:
                reject_item(pl, it);
                return;
        }
        abort();
}

static void on_claimed(struct pipeline *pl, struct item *it,
                       struct claim_item *c, int64_t submit_ms)
{
        struct log_ctx lc;

        switch (c->outcome) {
        case CLAIM_NEW:
                pl->st.claimed++;
                snprintf(it->payment_id, sizeof(it->payment_id), "%s",
                         c->payment_id);
                snprintf(it->provider_key, sizeof(it->provider_key), "%s",
                         c->provider_key);
                it->lease_epoch = c->lease_epoch;
                it->claimed_ms  = time_mono_ms();
                atomic_store(&it->lease_until_ms, submit_ms + pl->lease_ms);
                ctx_of(pl, it, &lc);
                log_debug(&lc, "claimed: payment processing, lease epoch %lld",
                          (long long)it->lease_epoch);
                charge(pl, it);
                return;
        case CLAIM_IN_PROGRESS:
                /* the first copy's result answers this one */
                pl->st.in_progress++;
                ctx_of(pl, it, &lc);
                log_debug(&lc, "copy of an intent in progress: no result of "
                               "its own");
                finish_item(pl, it, true);
                return;
        case CLAIM_DUP_EVENT:
                pl->st.dup_event++;
                finish_item(pl, it, true);
                return;
        case CLAIM_REPLAY:
                replay_stored(pl, it, c->payment_id, &c->stored);
                return;
        case CLAIM_CONFLICT:
                pl->st.conflict++;
                it->status = PAYMENT_STATUS_CONFLICT;
                set_error(it, "idempotency_key_reused",
                          "the idempotency key was already used in this "
                          "tenant for a different request");
                ctx_of(pl, it, &lc);
                log_info(&lc, "idempotency key reused with another request "
                              "hash: conflict");
                to_outbox(pl, it, OUTBOX_CONFLICT, NULL);
                return;
        }
        abort();
}

/*
 * The database refused a batch for its data (STORE_ERR_DATA: it would fail
 * again as it is). A batch of several items is split: each item is sent
 * again alone, so the innocent ones go on. An item refused alone is the
 * guilty one: a claim or a result-only write is dead-lettered with reason
 * database_refused; a settle leaves its payment processing for the
 * reconciler. Counted, logged at error; never retried as it is.
 */
static void refused(struct pipeline *pl, struct dbjob *j, struct item *it)
{
        struct batch one = { NULL, NULL, 0 };
        struct log_ctx lc;

        if (pl->closing) {
                finish_item(pl, it, false);
                return;
        }
        if (j->n > 1) {
                batch_add(&one, it);
                dbpool_submit(pl->db, job_from(pl, &one, j->kind));
                return;
        }
        pl->st.db_refused++;
        ctx_of(pl, it, &lc);
        if (j->kind == DBJOB_PROBE) {
                log_error(&lc,
                          "probe refused by the database (%s): "
                          "answered rejected",
                          j->err);
                reject_item(pl, it);
                return;
        }
        if (j->kind == DBJOB_SETTLE) {
                log_error(&lc,
                          "settle refused by the database (%s): payment "
                          "left processing for the reconciler",
                          j->err);
                pl->st.unknown_left++;
                finish_item(pl, it, true);
                return;
        }
        log_error(&lc, "%s refused by the database: %s",
                  j->kind == DBJOB_CLAIM ? "claim" : "result", j->err);
        dead_letter(pl, it, "database_refused");
}

/*
 * A renewal came back: the item still at the gateway with that payment
 * and epoch (if any: it may have finished meanwhile) holds its lease until
 * the renewal's send time + lease, or has lost it.
 */
static void lease_renewed(struct pipeline *pl, const struct lease_item *l,
                          int64_t submit_ms)
{
        struct log_ctx lc;

        for (struct item *it = pl->all; it; it = it->anext) {
                if (it->stage != ST_CHARGE ||
                    it->lease_epoch != l->lease_epoch ||
                    strcmp(it->payment_id, l->payment_id) != 0)
                        continue;
                if (l->renewed) {
                        atomic_store(&it->lease_until_ms,
                                     submit_ms + pl->lease_ms);
                        return;
                }
                atomic_store(&it->lease_until_ms, GATEWAY_LEASE_LOST);
                ctx_of(pl, it, &lc);
                log_warn(&lc, "lease lost while at the gateway: no further "
                              "POST; its settle will be fenced");
                return;
        }
}

static void on_job_done(struct pipeline *pl, struct dbjob *j)
{
        for (size_t i = 0; i < j->n; i++) {
                struct item *it = j->owners[i];
                struct log_ctx lc;

                if (j->kind == DBJOB_RENEW) {
                        if (j->rc == STORE_OK)
                                lease_renewed(pl, &j->leases[i],
                                              j->t_submit_us / 1000);
                        continue;
                }
                if (j->rc == STORE_ERR_DATA) {
                        refused(pl, j, it);
                        continue;
                }
                if (j->rc != STORE_OK) {
                        /* only when the pool gave up at shutdown */
                        finish_item(pl, it, false);
                        continue;
                }
                switch (j->kind) {
                case DBJOB_CLAIM:
                        on_claimed(pl, it, &j->claims[i],
                                   j->t_submit_us / 1000);
                        break;
                case DBJOB_SETTLE:
                        ctx_of(pl, it, &lc);
                        switch (j->settles[i].outcome) {
                        case SETTLE_OK:
                                if (it->status == PAYMENT_STATUS_SUCCEEDED)
                                        pl->st.succeeded++;
                                else if (it->status == PAYMENT_STATUS_FAILED)
                                        pl->st.failed++;
                                else
                                        pl->st.review++;
                                log_debug(&lc, "settled %s",
                                          payment_status_name(it->status));
                                break;
                        case SETTLE_ALREADY:
                                pl->st.settled_already++;
                                break;
                        case SETTLE_FENCED:
                                pl->st.fenced++;
                                log_warn(
                                    &lc,
                                    "settle fenced: lease epoch %lld "
                                    "lost (now %s, epoch %lld); the "
                                    "new owner finishes it",
                                    (long long)it->lease_epoch,
                                    j->settles[i].current_status,
                                    (long long)j->settles[i].current_epoch);
                                break;
                        }
                        finish_item(pl, it, true);
                        break;
                case DBJOB_OUTBOX:
                        finish_item(pl, it, true);
                        break;
                case DBJOB_PROBE:
                        on_probed(pl, it, &j->probes[i]);
                        break;
                case DBJOB_RENEW:
                        break;
                }
        }
        dbjob_free(j);
}

/* Submits the batches that are full or have waited long enough, as long
 * as the database workers are not already saturated. */
static void flush_batches(struct pipeline *pl, bool force)
{
        struct {
                struct batch *b;
                enum dbjob_kind kind;
        } order[]   = { { &pl->settles, DBJOB_SETTLE },
                        { &pl->outbox, DBJOB_OUTBOX },
                        { &pl->probes, DBJOB_PROBE },
                        { &pl->claims, DBJOB_CLAIM } };
        int64_t now = time_mono_us();

        for (size_t k = 0; k < sizeof(order) / sizeof(*order); k++) {
                struct batch *b = order[k].b;
                while (b->n > 0 && dbpool_outstanding(pl->db) < pl->max_jobs &&
                       (force || b->n >= pl->batch_size ||
                        now - b->head->batched_us >= pl->linger_us ||
                        dbpool_outstanding(pl->db) == 0))
                        dbpool_submit(pl->db, job_from(pl, b, order[k].kind));
        }
}

/* ------------------------------------------------------------------ */
/* leases                                                               */

/*
 * Extends the leases of payments still at the gateway, every lease/3, so a
 * slow but live owner keeps them; an owner that died stops renewing and
 * the reconciler takes over once the lease expires.
 */
static void renew_leases(struct pipeline *pl)
{
        int64_t now     = time_mono_ms();
        struct dbjob *j = NULL;
        size_t n        = 0;

        if (now - pl->last_renew_ms <
            (pl->renew_every_ms < 2000 ? pl->renew_every_ms / 2 : 1000))
                return;
        pl->last_renew_ms = now;
        for (struct item *it = pl->all; it; it = it->anext)
                if (it->stage == ST_CHARGE &&
                    now - it->lease_renewed_ms >= pl->renew_every_ms)
                        n++;
        if (n == 0)
                return;
        j = dbjob_new(DBJOB_RENEW, n);
        for (struct item *it = pl->all; it && j->n < n; it = it->anext) {
                if (it->stage != ST_CHARGE ||
                    now - it->lease_renewed_ms < pl->renew_every_ms)
                        continue;
                it->lease_renewed_ms        = now;
                j->leases[j->n].payment_id  = strdup(it->payment_id);
                j->leases[j->n].lease_epoch = it->lease_epoch;
                if (!j->leases[j->n].payment_id)
                        abort();
                j->n++;
        }
        dbpool_submit(pl->db, j);
}

/* ------------------------------------------------------------------ */
/* rebalance hooks                                                      */

static void hook_assigned(void *opaque, const int32_t *parts, int n)
{
        struct pipeline *pl = opaque;
        for (int i = 0; i < n; i++) {
                int32_t p = parts[i];
                if (p >= pl->n_gens) {
                        uint32_t *g =
                            realloc(pl->gens, (size_t)(p + 1) * sizeof(*g));
                        if (!g)
                                abort();
                        memset(g + pl->n_gens, 0,
                               (size_t)(p + 1 - pl->n_gens) * sizeof(*g));
                        pl->gens   = g;
                        pl->n_gens = p + 1;
                }
                pl->gens[p] = offsets_assign(pl->ot, p);
        }
}

static void store_offset(struct pipeline *pl, int32_t p, int64_t off)
{
        if (FAILPOINT("offset.before_store") < 0)
                return;
        kconsumer_store(pl->kc, p, off);
        (void)FAILPOINT("offset.after_store");
}

static void hook_revoking(void *opaque, const int32_t *parts, int n, bool lost)
{
        struct pipeline *pl = opaque;
        if (lost)
                return;
        for (int i = 0; i < n; i++) {
                int64_t off = offsets_take_committable(pl->ot, parts[i]);
                if (off >= 0)
                        store_offset(pl, parts[i], off);
        }
}

static void hook_revoked(void *opaque, const int32_t *parts, int n)
{
        struct pipeline *pl = opaque;
        /* work in flight for these partitions goes on (it is safe: the
         * claim is idempotent and the settle fenced); only its offsets are
         * no longer ours to store */
        for (int i = 0; i < n; i++) {
                offsets_revoke(pl->ot, parts[i]);
                if (parts[i] < pl->n_gens)
                        pl->gens[parts[i]] = 0;
        }
}

static void store_offsets(struct pipeline *pl)
{
        for (int32_t p = 0; p < offsets_partition_count(pl->ot); p++) {
                int64_t off = offsets_take_committable(pl->ot, p);
                if (off >= 0)
                        store_offset(pl, p, off);
        }
}

/* ------------------------------------------------------------------ */
/* the loop                                                             */

static void log_stats(struct pipeline *pl, bool force)
{
        int64_t now       = time_mono_ms();
        struct stats *s   = &pl->st;
        struct log_ctx lc = LOG_CTX_INIT;

        if (!force && now - pl->last_stats_ms < 10000)
                return;
        pl->last_stats_ms = now;
        if (!force && !memcmp(&pl->st, &pl->st_logged, sizeof(pl->st)))
                return;
        pl->st_logged = pl->st;
        lc.component  = "consume";
        log_info(
            &lc,
            "consumed %llu: claimed %llu (succeeded %llu, failed %llu, "
            "review %llu, unknown left %llu, fenced %llu), replayed "
            "%llu, in progress %llu, duplicate events %llu, conflict "
            "%llu, rejected %llu, dlq %llu (too large %llu, refused by "
            "the database %llu, DLQ write failures %llu); in flight %zu",
            (unsigned long long)s->consumed, (unsigned long long)s->claimed,
            (unsigned long long)s->succeeded, (unsigned long long)s->failed,
            (unsigned long long)s->review, (unsigned long long)s->unknown_left,
            (unsigned long long)s->fenced, (unsigned long long)s->replayed,
            (unsigned long long)s->in_progress,
            (unsigned long long)s->dup_event, (unsigned long long)s->conflict,
            (unsigned long long)s->rejected, (unsigned long long)s->dlq,
            (unsigned long long)s->too_large, (unsigned long long)s->db_refused,
            (unsigned long long)s->dlq_failed, pl->in_flight + pl->overflow);
}

/* TEMP (dropped by the lead's pipeline conversion): the kafka options
 * from cfg, one set per process, never freed. */
static const struct kafka_opts *temp_kafka(const struct config *cfg)
{
        static struct kafka_opts ko;
        static struct kafka_prop *props;
        size_t n = config_kafka_count(cfg);

        if (!props) {
                props = calloc(n ? n : 1, sizeof(*props));
                if (!props)
                        abort();
                for (size_t i = 0; i < n; i++)
                        config_kafka_get(cfg, i, &props[i].name,
                                         &props[i].value);
                ko.props   = props;
                ko.n_props = n;
        }
        return &ko;
}

static int setup(struct pipeline *pl, const struct config *cfg)
{
        struct gateway_opts go;
        struct dbpool_opts dbo;
        struct kconsumer_hooks hooks = { hook_assigned, hook_revoking,
                                         hook_revoked, pl };
        const char *secret           = config_str(cfg, "provider_key.secret");
        struct log_ctx lc            = LOG_CTX_INIT;
        char err[512], host[64];

        lc.component = "consume";
        pl->cfg      = cfg;
        if (!*secret) {
                log_error(&lc, "provider_key.secret is required: provider "
                               "idempotency keys are derived from it");
                return 2;
        }
        if (*config_str(cfg, "worker.id"))
                snprintf(pl->owner, sizeof(pl->owner), "%s",
                         config_str(cfg, "worker.id"));
        else {
                if (gethostname(host, sizeof(host)) != 0)
                        snprintf(host, sizeof(host), "host");
                host[sizeof(host) - 1] = '\0';
                snprintf(pl->owner, sizeof(pl->owner), "%s:%d", host,
                         (int)getpid());
        }
        pl->topic         = config_str(cfg, "topic.intents");
        pl->topic_dlq     = config_str(cfg, "topic.dlq");
        pl->max_in_flight = (size_t)config_int(cfg, "consumer.max_in_flight");
        pl->batch_size    = (size_t)config_int(cfg, "consumer.batch_size");
        pl->max_per_key   = (size_t)config_int(cfg, "consumer.max_per_key");
        pl->max_message_bytes =
            (size_t)config_int(cfg, "consumer.max_message_bytes");
        pl->linger_us      = config_ms(cfg, "consumer.batch_linger") * 1000;
        pl->lease_ms       = config_ms(cfg, "lease.duration");
        pl->renew_every_ms = pl->lease_ms / 3;
        pl->ot             = offsets_new();
        pl->kq             = keyq_new();

        gateway_opts_from_config(&go, cfg);
        if (!(pl->gw = gateway_new(&go, err, sizeof(err)))) {
                log_error(&lc, "gateway: %s", err);
                return 2;
        }

        memset(&dbo, 0, sizeof(dbo));
        dbo.conninfo         = config_str(cfg, "db.conninfo");
        dbo.workers          = (int)config_int(cfg, "db.connections");
        dbo.owner            = pl->owner;
        dbo.lease_ms         = pl->lease_ms;
        dbo.pk_secret        = (const unsigned char *)secret;
        dbo.pk_secret_len    = strlen(secret);
        dbo.key_retention_ms = config_ms(cfg, "idempotency.retention");
        pl->max_jobs         = dbo.workers * 2;
        if (!(pl->db = dbpool_new(&dbo, err, sizeof(err)))) {
                log_error(&lc, "database: %s", err);
                return 1;
        }
        if (!(pl->dlq = kproducer_new(temp_kafka(cfg), "chargeonce-dlq", err,
                                      sizeof(err)))) {
                log_error(&lc, "%s", err);
                return 1;
        }
        if (!(pl->kc = kconsumer_new(temp_kafka(cfg), pl->topic,
                                     config_str(cfg, "group.id"), &hooks, err,
                                     sizeof(err)))) {
                log_error(&lc, "%s", err);
                return 1;
        }
        log_info(&lc,
                 "consuming %s as %s in group %s: up to %zu in flight, "
                 "batches of %zu, %d database connection(s)",
                 pl->topic, pl->owner, config_str(cfg, "group.id"),
                 pl->max_in_flight, pl->batch_size, dbo.workers);
        return 0;
}

/*
 * After the loop: what is still in flight is finished as far as it safely
 * can be without starting anything new; the rest is left unhandled (its
 * offset is not stored, so it is redelivered) or processing in the
 * database (the reconciler finishes it).
 */
static void teardown(struct pipeline *pl)
{
        struct log_ctx lc = LOG_CTX_INIT;
        int64_t end       = time_mono_ms() + 10000;

        lc.component = "consume";
        pl->closing  = true;
        if (pl->db) {
                dbpool_stop_retrying(pl->db);
                while (dbpool_outstanding(pl->db) > 0 && time_mono_ms() < end) {
                        struct dbjob *done = dbpool_take_done(pl->db);
                        if (!done) {
                                usleep(2000);
                                continue;
                        }
                        while (done) {
                                struct dbjob *next = done->next;
                                on_job_done(pl, done);
                                done = next;
                        }
                }
        }
        /* calls still at the gateway end UNKNOWN: left processing */
        gateway_destroy(pl->gw);
        pl->gw = NULL;
        /* DLQ messages not delivered get their callback (an error) */
        kproducer_destroy(pl->dlq, 5000);
        pl->dlq = NULL;
        if (pl->kc)
                store_offsets(pl);
        /* what remains was not handled: redelivered after a restart */
        if (pl->in_flight + pl->overflow)
                log_info(&lc, "%zu message(s) left unhandled for redelivery",
                         pl->in_flight + pl->overflow);
        while (pl->all)
                item_free(pl, pl->all);
        /* the consumer leaves the group after a final commit */
        kconsumer_destroy(pl->kc);
        dbpool_destroy(pl->db);
        offsets_destroy(pl->ot);
        if (pl->kq)
                keyq_destroy(pl->kq);
        free(pl->gens);
        free(pl->hot);
}

/* How long the in-flight cap may hold before the partitions are paused. */
#define CAP_PAUSE_MS 10000

int pipeline_run(const struct config *cfg, volatile sig_atomic_t *stop)
{
        struct pipeline pl;
        rd_kafka_message_t *msgs[500];
        struct log_ctx lc = LOG_CTX_INIT;
        int rc;
        bool draining          = false;
        int64_t drain_deadline = 0;
        int64_t at_cap_since   = 0;

        lc.component = "consume";
        memset(&pl, 0, sizeof(pl));
        if ((rc = setup(&pl, cfg)) != 0) {
                teardown(&pl);
                return rc;
        }
        for (;;) {
                size_t room, n;
                bool fatal = false;
                struct dbjob *done;
                int timeout;

                if (*stop >= 2) {
                        log_warn(&lc, "second signal: exiting now; "
                                      "unfinished work is recovered by "
                                      "redelivery and the reconciler");
                        return PIPELINE_EXIT_NOW;
                }
                if (*stop && !draining) {
                        draining       = true;
                        drain_deadline = time_mono_ms() +
                                         config_ms(cfg, "gateway.deadline") +
                                         10000;
                        kconsumer_pause(pl.kc);
                        log_info(&lc,
                                 "stopping: fetching paused, finishing "
                                 "%zu in flight",
                                 pl.in_flight + pl.overflow);
                }
                if (draining && (pl.in_flight + pl.overflow == 0 ||
                                 time_mono_ms() > drain_deadline))
                        break;

                /*
                 * Backpressure: at the cap, stop taking messages; what
                 * librdkafka prefetched waits in its queue (bounded by
                 * queued.max.messages.kbytes). Pausing at once would make
                 * librdkafka drop that prefetch and stall after the resume
                 * (measured: ~500 ms per pause, see docs/benchmarks.md).
                 * Only a cap held for CAP_PAUSE_MS pauses the partitions,
                 * so the group still sees us poll during a long outage.
                 */
                if (!draining) {
                        int64_t now_ms = time_mono_ms();
                        if (pl.in_flight < pl.max_in_flight &&
                            pl.overflow < pl.max_in_flight) {
                                at_cap_since = 0;
                                kconsumer_resume(pl.kc);
                        } else if (!at_cap_since) {
                                at_cap_since = now_ms;
                        } else if (now_ms - at_cap_since > CAP_PAUSE_MS) {
                                kconsumer_pause(pl.kc);
                        }
                }
                room = pl.in_flight < pl.max_in_flight &&
                               pl.overflow < pl.max_in_flight
                           ? pl.max_in_flight - pl.in_flight
                           : 0;
                if (room > sizeof(msgs) / sizeof(*msgs))
                        room = sizeof(msgs) / sizeof(*msgs);
                /* paused (long cap, or draining): poll for rebalances */
                if (room == 0 && kconsumer_paused(pl.kc))
                        room = 1;
                n = room ? kconsumer_poll(pl.kc, msgs, room, 0, &fatal) : 0;
                for (size_t i = 0; i < n; i++)
                        on_message(&pl, msgs[i]);
                if (fatal) {
                        log_error(&lc, "fatal error: stopping");
                        rc = 1;
                        break;
                }

                while ((done = dbpool_take_done(pl.db))) {
                        while (done) {
                                struct dbjob *next = done->next;
                                on_job_done(&pl, done);
                                done = next;
                        }
                }
                while (pl.dlq_retry.n > 0 && time_mono_ms() >= pl.dlq_next_ms) {
                        if (!dlq_send(&pl, batch_take(&pl.dlq_retry))) {
                                /* queue full: later, not at once */
                                pl.dlq_next_ms = time_mono_ms() + 10;
                                break;
                        }
                }
                kproducer_poll(pl.dlq, 0);
                flush_batches(&pl, draining);
                store_offsets(&pl);
                renew_leases(&pl);
                log_stats(&pl, false);

                timeout = pl.claims.n || pl.settles.n || pl.outbox.n ||
                                  pl.probes.n || dbpool_outstanding(pl.db)
                              ? 1
                              : 10;
                if (gateway_poll(pl.gw, timeout) < 0)
                        log_warn(&lc, "gateway poll failed");
        }
        log_stats(&pl, true);
        if (draining)
                log_info(&lc,
                         "stopped: %zu left in flight (redelivered or "
                         "reconciled)",
                         pl.in_flight + pl.overflow);
        teardown(&pl);
        return rc;
}
