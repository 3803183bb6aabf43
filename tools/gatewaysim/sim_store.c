/* SPDX-License-Identifier: Apache-2.0 */
/*
 * sim_store: hash tables (intrusive, chained, power-of-two buckets) for
 * keys, orders and references, plus growable arrays of charges. All under
 * st->lock. Must never record a charge anywhere but sim_store_add_charge,
 * so the ground truth has one source.
 */
#include "sim_store.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

/* ---- intrusive string-keyed hash map ---- */

struct map_node {
        struct map_node *next;
        uint64_t hash;
        char *key; /* owned by the record */
        size_t keylen;
};

struct map {
        struct map_node **buckets;
        size_t nbuckets; /* power of two, 0 before first insert */
        size_t count;
};

static uint64_t map_hash(const char *s, size_t len)
{
        uint64_t h = 0xcbf29ce484222325ULL;
        size_t i;

        for (i = 0; i < len; i++) {
                h ^= (unsigned char)s[i];
                h *= 0x100000001b3ULL;
        }
        return h;
}

static struct map_node *map_get(const struct map *m, const char *key,
                                size_t keylen)
{
        uint64_t h = map_hash(key, keylen);
        struct map_node *n;

        if (!m->nbuckets)
                return NULL;
        for (n = m->buckets[h & (m->nbuckets - 1)]; n; n = n->next)
                if (n->hash == h && n->keylen == keylen &&
                    !memcmp(n->key, key, keylen))
                        return n;
        return NULL;
}

static int map_grow(struct map *m)
{
        size_t nb           = m->nbuckets ? m->nbuckets * 2 : 1024;
        struct map_node **b = calloc(nb, sizeof(*b));
        size_t i;

        if (!b)
                return -1;
        for (i = 0; i < m->nbuckets; i++) {
                struct map_node *n = m->buckets[i], *next;

                for (; n; n = next) {
                        next                  = n->next;
                        n->next               = b[n->hash & (nb - 1)];
                        b[n->hash & (nb - 1)] = n;
                }
        }
        free(m->buckets);
        m->buckets  = b;
        m->nbuckets = nb;
        return 0;
}

/* n->key and n->keylen must be set. */
static int map_put(struct map *m, struct map_node *n)
{
        if (m->count >= m->nbuckets && map_grow(m) < 0)
                return -1;
        n->hash = map_hash(n->key, n->keylen);
        n->next = m->buckets[n->hash & (m->nbuckets - 1)];
        m->buckets[n->hash & (m->nbuckets - 1)] = n;
        m->count++;
        return 0;
}

static void map_del(struct map *m, struct map_node *n)
{
        struct map_node **pp = &m->buckets[n->hash & (m->nbuckets - 1)];

        for (; *pp; pp = &(*pp)->next) {
                if (*pp == n) {
                        *pp = n->next;
                        m->count--;
                        return;
                }
        }
}

static void map_clear(struct map *m)
{
        free(m->buckets);
        memset(m, 0, sizeof(*m));
}

/* ---- records ---- */

struct key_entry {
        struct map_node node; /* node.key is the idempotency key */
        unsigned char fp[CRYPTO_SHA256_LEN];
        bool done;
        int status;
        char *body;
        int64_t done_ms;
        uint64_t gen;
        struct key_entry *older, *newer; /* retention FIFO (done only) */
};

struct tally {
        struct map_node node; /* "tenant\0order" or the reference */
        int64_t succeeded;
        int64_t failed;
        size_t *charges; /* indices into st->charges (references only) */
        size_t ncharges, cap;
};

struct vec {
        void **v;
        size_t n, cap;
};

struct sim_store {
        pthread_mutex_t lock;
        uint64_t gen;
        uint64_t seq;
        int64_t posts;
        int64_t succeeded;
        int64_t failed;
        int64_t double_charges;
        int64_t counters[SIM_CTR__COUNT];
        struct map keys;
        struct key_entry *oldest, *newest;
        struct map orders, refs;
        struct vec order_list, ref_list; /* tallies, first seen first */
        struct vec charges;              /* char * charge object text */
};

static int vec_push(struct vec *v, void *p)
{
        if (v->n == v->cap) {
                size_t cap = v->cap ? v->cap * 2 : 256;
                void **nv  = realloc(v->v, cap * sizeof(*nv));

                if (!nv)
                        return -1;
                v->v   = nv;
                v->cap = cap;
        }
        v->v[v->n++] = p;
        return 0;
}

static void key_free(struct key_entry *k)
{
        free(k->node.key);
        free(k->body);
        free(k);
}

static void tally_free(struct tally *t)
{
        free(t->node.key);
        free(t->charges);
        free(t);
}

static void fifo_unlink(struct sim_store *st, struct key_entry *k)
{
        if (k->older)
                k->older->newer = k->newer;
        else if (st->oldest == k)
                st->oldest = k->newer;
        if (k->newer)
                k->newer->older = k->older;
        else if (st->newest == k)
                st->newest = k->older;
        k->older = k->newer = NULL;
}

static void clear_all(struct sim_store *st)
{
        size_t i;

        for (i = 0; i < st->keys.nbuckets; i++) {
                struct map_node *n = st->keys.buckets[i], *next;

                for (; n; n = next) {
                        next = n->next;
                        key_free((struct key_entry *)n);
                }
        }
        map_clear(&st->keys);
        st->oldest = st->newest = NULL;
        for (i = 0; i < st->order_list.n; i++)
                tally_free(st->order_list.v[i]);
        for (i = 0; i < st->ref_list.n; i++)
                tally_free(st->ref_list.v[i]);
        for (i = 0; i < st->charges.n; i++)
                free(st->charges.v[i]);
        free(st->order_list.v);
        free(st->ref_list.v);
        free(st->charges.v);
        memset(&st->order_list, 0, sizeof(st->order_list));
        memset(&st->ref_list, 0, sizeof(st->ref_list));
        memset(&st->charges, 0, sizeof(st->charges));
        map_clear(&st->orders);
        map_clear(&st->refs);
        st->seq = st->posts = st->succeeded = st->failed = 0;
        st->double_charges                               = 0;
        memset(st->counters, 0, sizeof(st->counters));
        st->gen++;
}

struct sim_store *sim_store_new(void)
{
        struct sim_store *st = calloc(1, sizeof(*st));

        if (!st)
                return NULL;
        pthread_mutex_init(&st->lock, NULL);
        st->gen = 1;
        return st;
}

void sim_store_destroy(struct sim_store *st)
{
        if (!st)
                return;
        clear_all(st);
        pthread_mutex_destroy(&st->lock);
        free(st);
}

void sim_store_reset(struct sim_store *st)
{
        pthread_mutex_lock(&st->lock);
        clear_all(st);
        pthread_mutex_unlock(&st->lock);
}

void sim_store_count(struct sim_store *st, enum sim_counter ctr, int64_t n)
{
        pthread_mutex_lock(&st->lock);
        st->counters[ctr] += n;
        pthread_mutex_unlock(&st->lock);
}

uint64_t sim_store_next_post(struct sim_store *st)
{
        uint64_t seq;

        pthread_mutex_lock(&st->lock);
        st->posts++;
        seq = st->seq++;
        pthread_mutex_unlock(&st->lock);
        return seq;
}

void sim_store_restart_sequence(struct sim_store *st)
{
        pthread_mutex_lock(&st->lock);
        st->seq = 0;
        pthread_mutex_unlock(&st->lock);
}

static bool key_expired(const struct key_entry *k, int64_t now_ms,
                        int64_t retention_ms)
{
        return k->done && now_ms - k->done_ms >= retention_ms;
}

static void key_forget(struct sim_store *st, struct key_entry *k)
{
        fifo_unlink(st, k);
        map_del(&st->keys, &k->node);
        key_free(k);
}

enum sim_key_result
sim_store_key_begin(struct sim_store *st, const char *key,
                    const unsigned char fp[CRYPTO_SHA256_LEN], int64_t now_ms,
                    int64_t retention_ms, uint64_t *gen, int *status,
                    char **body)
{
        size_t keylen = strlen(key);
        enum sim_key_result res;
        struct key_entry *k;

        *body = NULL;
        pthread_mutex_lock(&st->lock);
        k = (struct key_entry *)map_get(&st->keys, key, keylen);
        if (k && key_expired(k, now_ms, retention_ms)) {
                key_forget(st, k);
                k = NULL;
        }
        if (k) {
                if (!k->done) {
                        res = SIM_KEY_IN_PROGRESS;
                } else if (memcmp(k->fp, fp, CRYPTO_SHA256_LEN) != 0) {
                        res = SIM_KEY_MISMATCH;
                } else {
                        *status = k->status;
                        *body   = strdup(k->body);
                        /* no memory for the copy: in progress, retry */
                        res = *body ? SIM_KEY_REPLAY : SIM_KEY_IN_PROGRESS;
                }
                goto out;
        }
        /* A key the store cannot hold is reported as in progress (409):
         * the client retries, nothing is charged without a record. */
        res = SIM_KEY_IN_PROGRESS;
        k   = calloc(1, sizeof(*k));
        if (!k)
                goto out;
        k->node.key = strdup(key);
        if (!k->node.key) {
                free(k);
                goto out;
        }
        k->node.keylen = keylen;
        memcpy(k->fp, fp, CRYPTO_SHA256_LEN);
        k->gen = st->gen;
        if (map_put(&st->keys, &k->node) < 0) {
                key_free(k);
                goto out;
        }
        *gen = st->gen;
        res  = SIM_KEY_NEW;
out:
        pthread_mutex_unlock(&st->lock);
        return res;
}

static struct key_entry *key_held(struct sim_store *st, const char *key,
                                  uint64_t gen)
{
        struct key_entry *k;

        if (gen != st->gen)
                return NULL;
        k = (struct key_entry *)map_get(&st->keys, key, strlen(key));
        if (!k || k->done || k->gen != gen)
                return NULL;
        return k;
}

void sim_store_key_release(struct sim_store *st, const char *key, uint64_t gen)
{
        struct key_entry *k;

        pthread_mutex_lock(&st->lock);
        k = key_held(st, key, gen);
        if (k)
                key_forget(st, k);
        pthread_mutex_unlock(&st->lock);
}

void sim_store_key_finish(struct sim_store *st, const char *key, uint64_t gen,
                          int status, const char *body, int64_t now_ms)
{
        struct key_entry *k;
        char *copy = strdup(body);

        pthread_mutex_lock(&st->lock);
        k = key_held(st, key, gen);
        if (!k) {
                free(copy);
                goto out;
        }
        if (!copy) {
                /* Cannot store the answer: forget the key rather than
                 * replay nothing. Documented as a limit. */
                key_forget(st, k);
                goto out;
        }
        k->done    = true;
        k->status  = status;
        k->body    = copy;
        k->done_ms = now_ms;
        k->older   = st->newest;
        if (st->newest)
                st->newest->newer = k;
        else
                st->oldest = k;
        st->newest = k;
out:
        pthread_mutex_unlock(&st->lock);
}

size_t sim_store_sweep(struct sim_store *st, int64_t now_ms,
                       int64_t retention_ms, size_t max)
{
        size_t n = 0;

        pthread_mutex_lock(&st->lock);
        while (n < max && st->oldest &&
               key_expired(st->oldest, now_ms, retention_ms)) {
                key_forget(st, st->oldest);
                n++;
        }
        pthread_mutex_unlock(&st->lock);
        return n;
}

/* Finds or creates the tally of key[0..keylen). Lock held. */
static struct tally *tally_get(struct map *m, struct vec *list, const char *key,
                               size_t keylen)
{
        struct tally *t = (struct tally *)map_get(m, key, keylen);

        if (t)
                return t;
        t = calloc(1, sizeof(*t));
        if (!t)
                return NULL;
        t->node.key = malloc(keylen + 1);
        if (!t->node.key)
                goto fail;
        memcpy(t->node.key, key, keylen);
        t->node.key[keylen] = '\0';
        t->node.keylen      = keylen;
        if (vec_push(list, t) < 0)
                goto fail;
        if (map_put(m, &t->node) < 0) {
                list->n--;
                goto fail;
        }
        return t;
fail:
        tally_free(t);
        return NULL;
}

int sim_store_add_charge(struct sim_store *st, const char *reference,
                         const char *tenant_id, const char *order_id,
                         bool succeeded, const char *charge_json)
{
        size_t tlen = strlen(tenant_id), olen = strlen(order_id);
        char *okey = malloc(tlen + olen + 1);
        char *text = strdup(charge_json);
        struct tally *ord, *ref;
        int ret = -1;

        pthread_mutex_lock(&st->lock);
        if (!okey || !text)
                goto out;
        memcpy(okey, tenant_id, tlen + 1); /* keeps the NUL separator */
        memcpy(okey + tlen + 1, order_id, olen);
        ord = tally_get(&st->orders, &st->order_list, okey, tlen + 1 + olen);
        ref = tally_get(&st->refs, &st->ref_list, reference, strlen(reference));
        if (!ord || !ref)
                goto out;
        if (ref->ncharges == ref->cap) {
                size_t cap  = ref->cap ? ref->cap * 2 : 2;
                size_t *idx = realloc(ref->charges, cap * sizeof(*idx));

                if (!idx)
                        goto out;
                ref->charges = idx;
                ref->cap     = cap;
        }
        if (vec_push(&st->charges, text) < 0)
                goto out;
        ref->charges[ref->ncharges++] = st->charges.n - 1;
        text                          = NULL;
        if (succeeded) {
                if (ord->succeeded >= 1)
                        st->double_charges++;
                ord->succeeded++;
                ref->succeeded++;
                st->succeeded++;
        } else {
                ord->failed++;
                ref->failed++;
                st->failed++;
                st->counters[SIM_CTR_402]++;
        }
        ret = 0;
out:
        pthread_mutex_unlock(&st->lock);
        free(okey);
        free(text);
        return ret;
}

char *sim_store_charges_by_reference(struct sim_store *st,
                                     const char *reference)
{
        static const char head[] = "{\"data\":[", tail[] = "]}";
        struct tally *ref;
        size_t len = sizeof(head) + sizeof(tail), i, off;
        char *out  = NULL;

        pthread_mutex_lock(&st->lock);
        ref = (struct tally *)map_get(&st->refs, reference, strlen(reference));
        for (i = 0; ref && i < ref->ncharges; i++)
                len += strlen(st->charges.v[ref->charges[i]]) + 1;
        out = malloc(len);
        if (!out)
                goto out;
        memcpy(out, head, sizeof(head) - 1);
        off = sizeof(head) - 1;
        for (i = 0; ref && i < ref->ncharges; i++) {
                const char *c = st->charges.v[ref->charges[i]];
                size_t cl     = strlen(c);

                if (i)
                        out[off++] = ',';
                memcpy(out + off, c, cl);
                off += cl;
        }
        memcpy(out + off, tail, sizeof(tail));
out:
        pthread_mutex_unlock(&st->lock);
        return out;
}

static const char *const counter_names[SIM_CTR__COUNT] = {
        [SIM_CTR_REPLAYED]            = "replayed",
        [SIM_CTR_409]                 = "in_progress_409",
        [SIM_CTR_422]                 = "mismatch_422",
        [SIM_CTR_400]                 = "invalid_400",
        [SIM_CTR_401]                 = "unauthorized_401",
        [SIM_CTR_402]                 = "declined_402",
        [SIM_FAULT_LATENCY]           = "latency",
        [SIM_FAULT_TAIL]              = "tail",
        [SIM_FAULT_SLOW]              = "slow",
        [SIM_FAULT_DROP_AFTER_CHARGE] = "drop_after_charge",
        [SIM_FAULT_500_AFTER_CHARGE]  = "500_after_charge",
        [SIM_FAULT_500_BEFORE_CHARGE] = "500_before_charge",
        [SIM_FAULT_429]               = "429",
        [SIM_FAULT_WEBHOOK_DUP]       = "webhook_dup",
        [SIM_CTR_WH_SENT]             = "sent",
        [SIM_CTR_WH_DELIVERED]        = "delivered",
        [SIM_CTR_WH_FAILED_ATTEMPTS]  = "failed_attempts",
        [SIM_CTR_WH_GAVE_UP]          = "gave_up",
        [SIM_CTR_WH_DROPPED]          = "dropped",
};

static json_t *counter_group(const struct sim_store *st, int from, int to)
{
        json_t *o = json_object();
        int i;

        for (i = from; i <= to; i++)
                json_object_set_new(o, counter_names[i],
                                    json_integer(st->counters[i]));
        return o;
}

json_t *sim_store_stats(struct sim_store *st, bool summary)
{
        json_t *o = json_object();
        size_t i;

        pthread_mutex_lock(&st->lock);
        json_object_set_new(o, "posts", json_integer(st->posts));
        json_object_set_new(o, "charges", json_integer(st->succeeded));
        json_object_set_new(o, "succeeded_charges",
                            json_integer(st->succeeded));
        json_object_set_new(o, "failed_charges", json_integer(st->failed));
        json_object_set_new(o, "double_charges",
                            json_integer(st->double_charges));
        json_object_set_new(o, "orders",
                            json_integer((json_int_t)st->order_list.n));
        json_object_set_new(o, "keys",
                            json_integer((json_int_t)st->keys.count));
        json_object_set_new(o, "answers",
                            counter_group(st, SIM_CTR_REPLAYED, SIM_CTR_402));
        json_object_set_new(
            o, "faults",
            counter_group(st, SIM_FAULT_LATENCY, SIM_FAULT_WEBHOOK_DUP));
        json_object_set_new(
            o, "webhooks",
            counter_group(st, SIM_CTR_WH_SENT, SIM_CTR_WH_DROPPED));
        if (!summary) {
                json_t *orders = json_array(), *refs = json_array();

                for (i = 0; i < st->order_list.n; i++) {
                        const struct tally *t = st->order_list.v[i];
                        const char *tenant    = t->node.key;

                        json_array_append_new(
                            orders,
                            json_pack("{sssssIsI}", "tenant_id", tenant,
                                      "order_id", tenant + strlen(tenant) + 1,
                                      "charges", (json_int_t)t->succeeded,
                                      "failed", (json_int_t)t->failed));
                }
                for (i = 0; i < st->ref_list.n; i++) {
                        const struct tally *t = st->ref_list.v[i];

                        json_array_append_new(
                            refs,
                            json_pack("{sssIsI}", "reference", t->node.key,
                                      "charges", (json_int_t)t->succeeded,
                                      "failed", (json_int_t)t->failed));
                }
                json_object_set_new(o, "by_order", orders);
                json_object_set_new(o, "by_reference", refs);
        }
        pthread_mutex_unlock(&st->lock);
        return o;
}
