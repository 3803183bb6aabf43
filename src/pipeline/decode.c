/* SPDX-License-Identifier: Apache-2.0 */
/* decode: see decode.h. */
#include "pipeline/decode.h"

#include "util/xalloc.h"

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>

/* Fewer messages than this per thread: not worth a hand-over (a wake-up
 * costs tens of microseconds; one message about fifteen to decode). */
#define DECODE_MIN_PER_THREAD 32

struct decoder;

/* A helper thread and the slice it takes: index 1..helpers (the caller
 * takes slice 0). */
struct helper {
        struct decoder *d;
        int index;
        pthread_t tid;
};

struct decoder {
        size_t max_bytes;
        int helpers;
        struct helper *h; /* h[0..helpers) */
        int started;

        pthread_mutex_t mu;
        pthread_cond_t go;   /* a new round, or stop */
        pthread_cond_t done; /* a helper finished its slice */
        /* the round, under mu */
        unsigned long round;
        bool stop;
        rd_kafka_message_t *const *msgs;
        struct intent *in;
        size_t n;
        int slices;  /* threads taking part this round, caller included */
        int pending; /* helpers' slices not yet decoded */
};

bool decoder_too_large(const struct decoder *d, const rd_kafka_message_t *m)
{
        return m->len + m->key_len > d->max_bytes;
}

static void decode_one(const struct decoder *d, const rd_kafka_message_t *m,
                       struct intent *in)
{
        if (decoder_too_large(d, m)) {
                /* before parsing: a message this large is no intent (the
                 * key counts too: it is copied for the per-key queue) */
                intent_reset(in);
                in->verdict = INTENT_DLQ;
                snprintf(in->reason, sizeof(in->reason), "message_too_large");
                return;
        }
        intent_parse(m->payload, m->len, in);
}

/* Slice s of `slices` over n messages: [*from, *to). */
static void slice_of(size_t n, int slices, int s, size_t *from, size_t *to)
{
        *from = n * (size_t)s / (size_t)slices;
        *to   = n * (size_t)(s + 1) / (size_t)slices;
}

static void decode_slice(const struct decoder *d,
                         rd_kafka_message_t *const *msgs, struct intent *in,
                         size_t n, int slices, int s)
{
        size_t from, to;

        slice_of(n, slices, s, &from, &to);
        for (size_t i = from; i < to; i++)
                decode_one(d, msgs[i], &in[i]);
}

static void *helper_main(void *p)
{
        const struct helper *h = p;
        struct decoder *d      = h->d;
        int index              = h->index;
        unsigned long seen     = 0;

        pthread_mutex_lock(&d->mu);
        for (;;) {
                while (!d->stop && d->round == seen)
                        pthread_cond_wait(&d->go, &d->mu);
                if (d->stop)
                        break;
                seen = d->round;
                if (index >= d->slices)
                        continue; /* a small round: not ours */
                rd_kafka_message_t *const *msgs = d->msgs;
                struct intent *in               = d->in;
                size_t n                        = d->n;
                int slices                      = d->slices;

                pthread_mutex_unlock(&d->mu);
                decode_slice(d, msgs, in, n, slices, index);
                pthread_mutex_lock(&d->mu);
                if (--d->pending == 0)
                        pthread_cond_signal(&d->done);
        }
        pthread_mutex_unlock(&d->mu);
        return NULL;
}

struct decoder *decoder_new(int helpers, size_t max_bytes)
{
        struct decoder *d = xcalloc(1, sizeof(*d));

        d->max_bytes = max_bytes;
        d->helpers   = helpers > 0 ? helpers : 0;
        pthread_mutex_init(&d->mu, NULL);
        pthread_cond_init(&d->go, NULL);
        pthread_cond_init(&d->done, NULL);
        if (d->helpers == 0)
                return d;
        d->h = xcalloc((size_t)d->helpers, sizeof(*d->h));
        for (int i = 0; i < d->helpers; i++) {
                int rc;

                d->h[i].d     = d;
                d->h[i].index = i + 1;
                if ((rc = pthread_create(&d->h[i].tid, NULL, helper_main,
                                         &d->h[i])) != 0) {
                        decoder_destroy(d);
                        errno = rc;
                        return NULL;
                }
                d->started++;
        }
        return d;
}

void decoder_destroy(struct decoder *d)
{
        if (!d)
                return;
        pthread_mutex_lock(&d->mu);
        d->stop = true;
        pthread_cond_broadcast(&d->go);
        pthread_mutex_unlock(&d->mu);
        for (int i = 0; i < d->started; i++)
                pthread_join(d->h[i].tid, NULL);
        free(d->h);
        pthread_cond_destroy(&d->done);
        pthread_cond_destroy(&d->go);
        pthread_mutex_destroy(&d->mu);
        free(d);
}

void decoder_run(struct decoder *d, rd_kafka_message_t *const *msgs, size_t n,
                 struct intent *in)
{
        int slices = 1 + d->helpers;

        if ((size_t)slices > n / DECODE_MIN_PER_THREAD)
                slices = (int)(n / DECODE_MIN_PER_THREAD);
        if (slices <= 1) {
                decode_slice(d, msgs, in, n, 1, 0);
                return;
        }
        pthread_mutex_lock(&d->mu);
        d->msgs    = msgs;
        d->in      = in;
        d->n       = n;
        d->slices  = slices;
        d->pending = slices - 1;
        d->round++;
        pthread_cond_broadcast(&d->go);
        pthread_mutex_unlock(&d->mu);

        decode_slice(d, msgs, in, n, slices, 0);

        pthread_mutex_lock(&d->mu);
        while (d->pending > 0)
                pthread_cond_wait(&d->done, &d->mu);
        d->msgs = NULL;
        d->in   = NULL;
        pthread_mutex_unlock(&d->mu);
}
