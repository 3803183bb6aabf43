/* SPDX-License-Identifier: Apache-2.0 */
/*
 * pipeline/sift: an operator's replay (the group rewound) hands the loop
 * the very messages it has answered. After a start, and after a claim
 * batch of mostly recorded events, the loop stops decoding on arrival, for
 * as long as most messages are found byte for byte: each message's
 * (tenant, event key) is read from its raw JSON (intent_peek) and looked
 * up in the inbox together with the SHA-256 of its value
 * (store_sift_batch, one read-only statement per batch). A message whose
 * digest equals the one its event was recorded from is a duplicate_event
 * and is finished without being decoded (the same bytes decode to the
 * same event). Every other message (another digest, not recorded, not
 * peekable) is decoded as usual; a recorded one that decodes to the very
 * identity the sift looked up is a duplicate_event too (the claim's
 * pre-check would say so), the rest go on as if just polled.
 *
 * Order: messages polled while any is sifting wait in one FIFO and leave
 * it in poll order, so a message never overtakes an earlier one of its
 * key. Offsets are taken at poll time (pipeline_item_new), as always.
 * Loop thread only.
 */
#include "intent/peek.h"
#include "pipeline/decode.h"
#include "pipeline/pipeline_int.h"
#include "util/crypto.h"
#include "util/timeutil.h"
#include "util/xalloc.h"

#include <stdlib.h>
#include <string.h>

struct item_sift {
        struct intent_peek id;
        bool done;     /* its answer is in (or it needs none) */
        bool failed;   /* the look-up was given up (shutdown) */
        bool recorded; /* the identity is in the inbox */
        bool same;     /* ... recorded from these very bytes */
};

static void answered_dup(struct pipeline *pl, struct item *it)
{
        pl->st.dup_event++;
        it->outcome = MI_DUPLICATE_EVENT;
        pipeline_finish(pl, it, true);
}

/* Same identity as the sift looked up, recorded, and an intent the claim
 * would take: the claim's pre-check would call it a duplicate_event. */
static bool decoded_dup(const struct item *it, const struct item_sift *sf)
{
        return sf->recorded && it->in.verdict == INTENT_OK &&
               strcmp(it->in.tenant_id, sf->id.tenant_id) == 0 &&
               strcmp(it->in.event_key, sf->id.event_key) == 0;
}

/* Releases the FIFO's head while its answers are in. */
static void release(struct pipeline *pl)
{
        for (;;) {
                rd_kafka_message_t *msgs[POLL_BATCH];
                struct item *batch[POLL_BATCH];
                size_t k = 0;

                while (k < POLL_BATCH && pl->sift_head &&
                       pl->sift_head->sift->done) {
                        struct item *it = pl->sift_head;

                        pl->sift_head = it->sift_next;
                        if (!pl->sift_head)
                                pl->sift_tail = NULL;
                        it->sift_next = NULL;
                        if (it->sift->same) {
                                pl->st.sifted++;
                                metrics_inc(pl->o.metrics,
                                            METRIC_INTENTS_SIFTED, 0);
                                answered_dup(pl, it);
                        } else if (it->sift->failed || pl->closing) {
                                /* teardown starts nothing: redelivered */
                                pipeline_finish(pl, it, false);
                        } else {
                                batch[k]  = it;
                                msgs[k++] = it->rkm;
                        }
                }
                if (k == 0)
                        return;
                decoder_run(pl->dec, msgs, k, pl->decoded);
                for (size_t i = 0; i < k; i++) {
                        struct item *it      = batch[i];
                        struct item_sift *sf = it->sift;

                        it->in   = pl->decoded[i]; /* moved */
                        it->sift = NULL;
                        intent_init(&pl->decoded[i]);
                        if (decoded_dup(it, sf)) {
                                free(sf);
                                answered_dup(pl, it);
                                continue;
                        }
                        free(sf);
                        pipeline_dispatch(pl, it);
                }
        }
}

void pipeline_take(struct pipeline *pl, rd_kafka_message_t **msgs, size_t n)
{
        if (!pl->sift_on && !pl->sift_head) {
                decoder_run(pl->dec, msgs, n, pl->decoded);
                for (size_t i = 0; i < n; i++)
                        pipeline_on_message(pl, msgs[i], &pl->decoded[i]);
                return;
        }
        for (size_t i = 0; i < n; i++) {
                rd_kafka_message_t *m = msgs[i];
                struct item *it       = pipeline_item_new(pl, m);
                struct item_sift *sf  = xcalloc(1, sizeof(*sf));

                it->sift  = sf;
                it->stage = ST_SIFT;
                if (pl->sift_tail)
                        pl->sift_tail->sift_next = it;
                else
                        pl->sift_head = it;
                pl->sift_tail = it;
                if (!decoder_too_large(pl->dec, m) &&
                    intent_peek(m->payload, m->len, &sf->id)) {
                        crypto_sha256(m->payload, m->len, it->digest);
                        it->has_digest = true;
                        pipeline_queue(&pl->sifts, it);
                } else {
                        sf->done = true; /* decoded when its turn comes */
                }
        }
        release(pl);
}

void pipeline_sift_fill(struct item *it, struct sift_item *s)
{
        s->tenant_id  = it->sift->id.tenant_id;
        s->event_id   = it->sift->id.event_key;
        s->idem_key   = it->sift->id.idem_key; /* "" when not read */
        s->msg_digest = it->digest;
}

/*
 * Only an intent that decoded OK keeps a digest, so that a message the
 * sift finds byte for byte is one whose copies the claim calls
 * duplicate_event (a rejected one's copies are judged rejected or
 * replayed: those go the long way). Made here, once, unless the sift
 * made it: a duplicate or a dead letter never pays for it.
 */
const unsigned char *pipeline_msg_digest(struct item *it)
{
        if (it->in.verdict != INTENT_OK)
                return NULL;
        if (!it->has_digest) {
                crypto_sha256(it->rkm->payload ? it->rkm->payload : "",
                              it->rkm->len, it->digest);
                it->has_digest = true;
        }
        return it->digest;
}

void pipeline_sift_done(struct pipeline *pl, struct dbjob *j)
{
        size_t same = 0;

        for (size_t i = 0; i < j->n; i++) {
                struct item *it      = j->owners[i];
                struct item_sift *sf = it->sift;

                sf->done = true;
                if (j->rc == STORE_OK) {
                        sf->recorded = j->sifts[i].recorded;
                        sf->same     = j->sifts[i].same;
                        same += sf->same;
                } else if (j->rc != STORE_ERR_DATA) {
                        sf->failed = true; /* given up: shutdown */
                }
                /* STORE_ERR_DATA (cannot be: every field is set): the
                 * message is simply decoded */
        }
        /* Mostly not byte for byte recorded: back to decoding on arrival,
         * for at least SIFT_QUIET_MS. Copies re-sent with other bytes are
         * faster the usual way (decoded at once on the helper threads,
         * the claim's pre-check): with the sift they would be peeked,
         * looked up, then decoded in smaller slices (measured: a replay
         * of such copies 15 % slower with the sift kept on). */
        if (j->rc == STORE_OK && j->n > 0) {
                pl->sift_on = same * 2 >= j->n;
                if (!pl->sift_on)
                        pl->sift_quiet_until_ms =
                            time_mono_ms() + SIFT_QUIET_MS;
        }
        release(pl);
}
