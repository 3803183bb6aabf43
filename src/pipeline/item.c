/* SPDX-License-Identifier: Apache-2.0 */
/*
 * pipeline/item: the life of one message in the consume loop: decoded,
 * queued behind its key, answered (a result, a replay, a rejection) or
 * dead-lettered, finished (its offset done, the next message of its key
 * started). Loop thread only.
 *
 * Must never: finish an item as handled before its answer is durable (in
 * the outbox, or acknowledged by the DLQ); block on a full DLQ.
 */
#include "payment/identity.h"
#include "payment/result.h"
#include "pipeline/pipeline_int.h"
#include "pipeline/decode.h"
#include "util/timeutil.h"
#include "util/utf8.h"
#include "util/xalloc.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static struct item *item_of_key(struct keyq_node *n)
{
        return FLOW_ENTRY(n, struct item, kn);
}

void pipeline_ctx(const struct pipeline *pl, struct item *it,
                  struct log_ctx *lc)
{
        /* the keyed mask (an HMAC) only once a line may be written */
        if (!it->key_masked[0] && it->in.idempotency_key)
                log_mask_key(it->in.idempotency_key,
                             strlen(it->in.idempotency_key), it->key_masked,
                             sizeof(it->key_masked));
        *lc           = (struct log_ctx)LOG_CTX_INIT;
        lc->component = "consume";
        lc->topic     = pl->o.topic;
        lc->partition = it->partition;
        lc->offset    = it->offset;
        if (it->payment_id[0])
                lc->payment_id = it->payment_id;
        if (it->in.tenant_id)
                lc->tenant_id = it->in.tenant_id;
        if (it->key_masked[0])
                lc->key_masked = it->key_masked;
}

void pipeline_queue(struct flow_queue *q, struct item *it)
{
        flow_queue_push(q, &it->qn, time_mono_us());
}

struct item *pipeline_dequeue(struct flow_queue *q)
{
        return item_of_q(flow_queue_pop(q));
}

/* ------------------------------------------------------------------ */
/* item life                                                           */

static void start_item(struct pipeline *pl, struct item *it);

void pipeline_item_free(struct pipeline *pl, struct item *it)
{
        flow_list_remove(&pl->all, &it->live);
        if (it->payment_id[0]) /* claimed new: no longer held */
                metrics_gauge_add(pl->o.metrics, METRIC_IN_FLIGHT, -1);
        intent_reset(&it->in);
        free(it->sift);
        free(it->result_json);
        free(it->result_detail);
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
                size_t *h = xrealloc(pl->hot, (size_t)(p + 1) * sizeof(*h));
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
void pipeline_finish(struct pipeline *pl, struct item *it, bool handled)
{
        struct keyq_node *next = NULL;

        if (handled) {
                offsets_done(pl->ot, it->partition, it->gen, it->offset);
                /* answered durably: counted once, under one outcome */
                if (it->outcome >= 0)
                        metrics_inc(pl->o.metrics, METRIC_INTENTS,
                                    (unsigned)it->outcome);
        }
        if (it->qkey)
                next = keyq_pop(pl->kq, it->qkey, it->qkey_len);
        if (it->overflow) {
                pl->overflow--;
                hot_adjust(pl, it->partition, -1);
        } else {
                pl->in_flight--;
        }
        pipeline_item_free(pl, it);
        if (next)
                start_item(pl, item_of_key(next));
}

/*
 * Builds it->result_json for it->status. Its event id is derived
 * (payment/identity.h): a payment's own result from (payment id, status),
 * any other answer from (tenant, event, status, replayed), so the same
 * answer written again after the database lost it carries the same id.
 */
int pipeline_build_result(struct pipeline *pl, struct item *it, bool replayed,
                          const char *payment_id)
{
        struct payment_result r;
        char now[40], err[256];
        size_t len;
        struct log_ctx lc;
        const char *status = payment_status_name(it->status);

        if (!status)
                abort();
        if (payment_id && !replayed)
                payment_result_event_id(payment_id, status,
                                        it->result_event_id);
        else
                payment_answer_event_id(it->in.tenant_id, it->in.event_key,
                                        status, replayed, it->result_event_id);
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
        free(it->result_detail);
        it->result_detail = NULL;
        /* the payment's own result also in its compact form, for the row
         * the settle writes (whose intent_event_id is the claim's key) */
        if (payment_result_build(&r, &it->result_json, &len, err, sizeof(err)) <
                0 ||
            (payment_id && !replayed &&
             payment_result_detail(&r, it->in.event_key, &it->result_detail,
                                   &len, err, sizeof(err)) < 0)) {
                pipeline_ctx(pl, it, &lc);
                log_error(&lc, "cannot build the %s result: %s",
                          payment_status_name(it->status), err);
                return -1;
        }
        return 0;
}

static bool dlq_send(struct pipeline *pl, struct item *it);
static void dlq_failed(struct pipeline *pl, struct item *it,
                       rd_kafka_resp_err_t err);

void pipeline_to_outbox(struct pipeline *pl, struct item *it,
                        enum outbox_kind kind, const char *payment_id)
{
        it->obx_kind = kind;
        if (pipeline_build_result(pl, it, kind == OUTBOX_REPLAY, payment_id) <
            0) {
                /* cannot happen with what intent and gateway let through;
                 * if it does, this one message is dead-lettered, never
                 * the process stopped */
                pipeline_dead_letter(pl, it, "result_unbuildable");
                return;
        }
        it->stage = ST_OUTBOX;
        pipeline_queue(&pl->outbox, it);
}

/* error.code and error.message of the result, always valid UTF-8 cut on
 * a code-point boundary, whatever the gateway or the store handed in. */
void pipeline_set_error(struct item *it, const char *code, const char *msg)
{
        (void)utf8_clean(code, strlen(code), (size_t)-1, it->error_code,
                         sizeof(it->error_code), NULL);
        (void)utf8_clean(msg, strlen(msg), (size_t)-1, it->error_message,
                         sizeof(it->error_message), NULL);
}

/* Answers it `rejected` with the rule it broke. */
void pipeline_reject(struct pipeline *pl, struct item *it)
{
        it->status = PAYMENT_STATUS_REJECTED;
        pipeline_set_error(it, it->in.reason, it->in.message);
        pl->st.rejected++;
        it->outcome = MI_REJECTED;
        pipeline_to_outbox(pl, it, OUTBOX_REJECTED, NULL);
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
                        pipeline_queue(&pl->probes, it);
                        return;
                }
                pipeline_reject(pl, it);
                return;
        }
        it->stage = ST_CLAIM;
        pipeline_queue(&pl->claims, it);
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

        pipeline_ctx(pl, it, &lc);
        pl->st.dlq_failed++;
        if (dlq_too_large(err) && !it->dlq_truncate) {
                it->dlq_truncate = true;
                log_warn(&lc,
                         "DLQ refused the %zu-byte value (%s); sending "
                         "it cut to %d bytes",
                         it->rkm->len, rd_kafka_err2str(err),
                         DLQ_TRUNCATED_BYTES);
                pipeline_queue(&pl->dlq_retry, it);
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
        pipeline_queue(&pl->dlq_retry, it);
}

static void dlq_done(void *opaque, rd_kafka_resp_err_t err)
{
        struct item *it     = opaque;
        struct pipeline *pl = it->pl;
        struct log_ctx lc;

        pipeline_ctx(pl, it, &lc);
        if (err) {
                if (pl->closing) {
                        log_warn(&lc,
                                 "DLQ delivery failed at shutdown (%s); "
                                 "redelivered later",
                                 rd_kafka_err2str(err));
                        pipeline_finish(pl, it, false);
                } else {
                        dlq_failed(pl, it, err);
                }
                return;
        }
        pl->dlq_backoff_ms = 0;
        log_warn(&lc, "dead-lettered: %s", it->in.reason);
        pl->st.dlq++;
        it->outcome = MI_DEAD_LETTERED;
        pipeline_finish(pl, it, true);
}

/*
 * This message cannot be answered after all (the database refuses it, or
 * its answer cannot be built): dead-letter it with reason, so it is
 * recorded exactly once and nothing waits behind it.
 */
void pipeline_dead_letter(struct pipeline *pl, struct item *it,
                          const char *reason)
{
        struct log_ctx lc;

        pipeline_ctx(pl, it, &lc);
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
                        { "dlq-source-topic", pl->o.topic, strlen(pl->o.topic) },
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
        if (kproducer_send(pl->dlq, pl->o.topic_dlq, m->key, m->key_len,
                           m->payload, len, h, nh, dlq_done, it) < 0) {
                rd_kafka_resp_err_t err = kproducer_last_error(pl->dlq);

                if (err == RD_KAFKA_RESP_ERR__QUEUE_FULL) {
                        pipeline_queue(&pl->dlq_retry, it);
                        return false;
                }
                dlq_failed(pl, it, err); /* retried later, after a pause */
                return true;
        }
        return true;
}

/* The DLQ retry list, once its back-off is over (a loop turn). */
void pipeline_dlq_retry(struct pipeline *pl)
{
        while (pl->dlq_retry.n > 0 && time_mono_ms() >= pl->dlq_next_ms) {
                if (!dlq_send(pl, pipeline_dequeue(&pl->dlq_retry))) {
                        /* queue full: later, not at once */
                        pl->dlq_next_ms = time_mono_ms() + 10;
                        break;
                }
        }
}

/* ------------------------------------------------------------------ */
/* incoming messages                                                    */

static uint32_t gen_of(struct pipeline *pl, int32_t p)
{
        return p >= 0 && p < pl->n_gens ? pl->gens[p] : 0;
}

struct item *pipeline_item_new(struct pipeline *pl, rd_kafka_message_t *m)
{
        struct item *it = xcalloc(1, sizeof(*it));

        flow_list_add(&pl->all, &it->live);
        it->pl         = pl;
        it->rkm        = m;
        it->partition  = m->partition;
        it->offset     = m->offset;
        it->gen        = gen_of(pl, m->partition);
        it->t_start_us = time_mono_us();
        it->outcome    = -1;
        atomic_init(&it->lease_until_ms, 0);
        intent_init(&it->in);
        pl->in_flight++;
        pl->st.consumed++;
        if (offsets_add(pl->ot, it->partition, it->gen, it->offset) < 0) {
                /* not ours (revoked meanwhile) or a re-fetched offset: the
                 * work is still safe to do, its offset is just not ours */
                it->gen = 0;
        }
        if (decoder_too_large(pl->dec, m))
                pl->st.too_large++; /* dead-lettered unparsed */
        return it;
}

void pipeline_on_message(struct pipeline *pl, rd_kafka_message_t *m,
                         struct intent *in)
{
        struct item *it = pipeline_item_new(pl, m);

        it->in = *in; /* moved: in is left empty */
        intent_init(in);
        pipeline_dispatch(pl, it);
}

void pipeline_dispatch(struct pipeline *pl, struct item *it)
{
        const rd_kafka_message_t *m = it->rkm;
        struct log_ctx lc;

        if (LOG_LVL_DEBUG <= log_current_level) {
                pipeline_ctx(pl, it, &lc);
                log_debug(&lc, "intent %s",
                          intent_verdict_name(it->in.verdict));
        }

        if (it->in.verdict == INTENT_DLQ) {
                dlq_send(pl, it);
                return;
        }
        /*
         * Per-intent order: queued by the intent's own tenant/key, read
         * from the value, whatever Kafka key the message carries, so that
         * two messages of one intent are never at work at once in this
         * process, whose owner instance would then hold two grants of one
         * payment at one epoch if a failover lost the first claim
         * (the model's A11). A message whose value names neither (never
         * here: those are dead-lettered) keeps its Kafka key.
         */
        if (payment_result_key(it->in.tenant_id, it->in.idempotency_key,
                               &it->qkey, &it->qkey_len) < 0) {
                if (m->key_len == 0)
                        abort();
                it->qkey_len = m->key_len;
                it->qkey     = xmalloc(m->key_len);
                memcpy(it->qkey, m->key, m->key_len);
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
        if (keyq_len(pl->kq, it->qkey, it->qkey_len) > pl->o.max_per_key) {
                it->overflow = true;
                pl->in_flight--;
                pl->overflow++;
                hot_adjust(pl, it->partition, +1);
        }
}
