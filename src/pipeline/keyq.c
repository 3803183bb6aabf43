/* SPDX-License-Identifier: Apache-2.0 */
/* keyq: a chained hash table of FIFO queues (see keyq.h), hashed with
 * SipHash-2-4 under a random key of its own. */
#include "pipeline/keyq.h"

#include "util/siphash.h"
#include "util/xalloc.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

struct slot {
        struct slot *next;
        uint64_t hash;
        struct keyq_node *head, *tail;
        size_t len; /* nodes queued */
        size_t key_len;
        char key[];
};

struct keyq {
        struct slot **buckets;
        size_t n_buckets, n_keys;
        struct siphash_key hk; /* drawn by keyq_new */
};

/* The keys are the producers' (or "<tenant>/<key>" of their intents): a
 * keyed hash, so that nobody can build keys that share a bucket and make
 * every push and pop walk one long chain (FNV-1a, unkeyed, was open to
 * that). */
static uint64_t hash_of(const struct keyq *kq, const void *key, size_t len)
{
        return siphash_u64(&kq->hk, key, len);
}

struct keyq *keyq_new(void)
{
        struct keyq *kq = xcalloc(1, sizeof(*kq));
        kq->n_buckets   = 1024;
        kq->buckets     = xcalloc(kq->n_buckets, sizeof(*kq->buckets));
        siphash_key_random(&kq->hk);
        return kq;
}

void keyq_destroy(struct keyq *kq)
{
        if (!kq)
                return;
        for (size_t i = 0; i < kq->n_buckets; i++) {
                struct slot *s = kq->buckets[i], *next;
                for (; s; s = next) {
                        next = s->next;
                        free(s);
                }
        }
        free(kq->buckets);
        free(kq);
}

static void grow(struct keyq *kq)
{
        size_t n        = kq->n_buckets * 2;
        struct slot **b = xcalloc(n, sizeof(*b));
        for (size_t i = 0; i < kq->n_buckets; i++) {
                struct slot *s = kq->buckets[i], *next;
                for (; s; s = next) {
                        next                 = s->next;
                        s->next              = b[s->hash & (n - 1)];
                        b[s->hash & (n - 1)] = s;
                }
        }
        free(kq->buckets);
        kq->buckets   = b;
        kq->n_buckets = n;
}

static struct slot **find(struct keyq *kq, const void *key, size_t len,
                          uint64_t h)
{
        struct slot **sp = &kq->buckets[h & (kq->n_buckets - 1)];
        for (; *sp; sp = &(*sp)->next)
                if ((*sp)->hash == h && (*sp)->key_len == len &&
                    memcmp((*sp)->key, key, len) == 0)
                        return sp;
        return sp;
}

bool keyq_push(struct keyq *kq, const void *key, size_t key_len,
               struct keyq_node *n)
{
        uint64_t h       = hash_of(kq, key, key_len);
        struct slot **sp = find(kq, key, key_len, h), *s;

        n->next = NULL;
        if (*sp) {
                s             = *sp;
                s->tail->next = n;
                s->tail       = n;
                s->len++;
                return false;
        }
        s       = xmalloc(sizeof(*s) + key_len);
        s->next = NULL;
        s->hash = h;
        s->head = s->tail = n;
        s->len            = 1;
        s->key_len        = key_len;
        memcpy(s->key, key, key_len);
        *sp = s;
        if (++kq->n_keys > kq->n_buckets)
                grow(kq);
        return true;
}

struct keyq_node *keyq_pop(struct keyq *kq, const void *key, size_t key_len)
{
        uint64_t h       = hash_of(kq, key, key_len);
        struct slot **sp = find(kq, key, key_len, h), *s = *sp;
        struct keyq_node *next;

        if (!s)
                return NULL;
        next    = s->head->next;
        s->head = next;
        if (next) {
                s->len--;
                return next;
        }
        *sp = s->next;
        free(s);
        kq->n_keys--;
        return NULL;
}

size_t keyq_len(const struct keyq *kq, const void *key, size_t key_len)
{
        struct slot **sp = find((struct keyq *)(uintptr_t)kq, key, key_len,
                                hash_of(kq, key, key_len));

        return *sp ? (*sp)->len : 0;
}

size_t keyq_keys(const struct keyq *kq)
{
        return kq->n_keys;
}

uint64_t keyq_hash(const struct keyq *kq, const void *key, size_t key_len)
{
        return hash_of(kq, key, key_len);
}

size_t keyq_max_chain(const struct keyq *kq)
{
        size_t most = 0;

        for (size_t i = 0; i < kq->n_buckets; i++) {
                size_t n = 0;

                for (const struct slot *s = kq->buckets[i]; s; s = s->next)
                        n++;
                if (n > most)
                        most = n;
        }
        return most;
}
