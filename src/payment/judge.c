/* SPDX-License-Identifier: Apache-2.0 */
/*
 * payment/judge: verdict + lookups -> the category the service would give
 * a message (see judge.h), and the memory of a range. Pure, one thread.
 *
 * Must never: do I/O, or judge differently from the pipeline.
 */
#include "payment/judge.h"
#include "util/siphash.h"
#include "util/xalloc.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

static const char *const names[JUDGE_N_CATEGORIES] = {
        "new",      "duplicate_event", "in_progress",   "replayed",
        "conflict", "rejected",        "dead_lettered",
};

const char *payment_judge_name(enum judge_category c)
{
        return (unsigned)c < JUDGE_N_CATEGORIES ? names[c] : "?";
}

static enum judge_category stored(const struct judge_facts *f, const char **why,
                                  const char *reason)
{
        if (!f->stored_valid) {
                *why = "stored_outcome_invalid";
                return JUDGE_DEAD_LETTERED;
        }
        *why = reason;
        return JUDGE_REPLAYED;
}

enum judge_category payment_judge(const struct judge_facts *f, const char **why)
{
        const char *dummy;

        if (!why)
                why = &dummy;
        switch (f->verdict) {
        case JUDGE_MSG_DLQ:
                *why = "cannot be answered";
                return JUDGE_DEAD_LETTERED;
        case JUDGE_MSG_REJECTED:
                /* pipeline: a rejected copy with an intact hash is probed */
                if (f->has_hash && f->key != JUDGE_KEY_NONE && f->hash_equal) {
                        if (f->key == JUDGE_KEY_FINAL)
                                return stored(f, why,
                                              "rejected copy of a finished "
                                              "intent");
                        *why = "rejected copy of an intent in progress";
                        return JUDGE_IN_PROGRESS;
                }
                *why = "not acceptable";
                return JUDGE_REJECTED;
        case JUDGE_MSG_OK:
                break;
        }
        if (f->inbox_hit) {
                *why = "event id answered already";
                return JUDGE_DUPLICATE_EVENT;
        }
        if (f->key == JUDGE_KEY_NONE) {
                *why = "key not seen";
                return JUDGE_NEW;
        }
        if (!f->hash_equal) {
                *why = "key used with another request hash";
                return JUDGE_CONFLICT;
        }
        if (f->key == JUDGE_KEY_PROCESSING) {
                *why = "copy of an intent still processing";
                return JUDGE_IN_PROGRESS;
        }
        return stored(f, why, "copy of a finished intent");
}

/* ------------------------------------------------------------------ */
/* the range's memory: two string sets (open addressing, SipHash-2-4)  */

struct slot {
        char *k; /* "tenant\0rest\0": owned; NULL: empty */
        size_t klen;
        unsigned char hash[CRYPTO_SHA256_LEN]; /* keys only */
};

struct set {
        struct slot *s;
        size_t cap, n;                /* cap: a power of two */
        const struct siphash_key *hk; /* the range's */
        unsigned long long *probes;   /* the range's count */
};

struct judge_range {
        struct set events; /* (tenant, event key) in the inbox */
        struct set keys;   /* (tenant, idem key) claimed, final */
        /* The keys of both sets are read from a topic, chosen by whoever
         * produces to it: hashed under a random key of the range's own, so
         * that none can be built to collide and make every lookup walk one
         * cluster (unkeyed FNV-1a let them: tests/payment/test_judge.c). */
        struct siphash_key hk;
        unsigned long long probes;
};

static size_t home(const struct set *s, const char *k, size_t klen)
{
        return (size_t)siphash_u64(s->hk, k, klen) & (s->cap - 1);
}

/* "a\0b\0" in buf (malloc'd), its length in *len. */
static char *pair(const char *a, const char *b, size_t *len)
{
        size_t la = strlen(a), lb = strlen(b);
        char *k = xmalloc(la + lb + 2);

        memcpy(k, a, la + 1);
        memcpy(k + la + 1, b, lb + 1);
        *len = la + lb + 2;
        return k;
}

static struct slot *find(struct set *s, const char *k, size_t klen)
{
        size_t i;

        if (s->cap == 0)
                return NULL;
        for (i = home(s, k, klen);; i = (i + 1) & (s->cap - 1)) {
                struct slot *sl = &s->s[i];

                ++*s->probes;
                if (!sl->k)
                        return NULL;
                if (sl->klen == klen && !memcmp(sl->k, k, klen))
                        return sl;
        }
}

static void put_slot(struct set *s, struct slot v)
{
        size_t i = home(s, v.k, v.klen);

        for (++*s->probes; s->s[i].k; ++*s->probes)
                i = (i + 1) & (s->cap - 1);
        s->s[i] = v;
}

/* Adds k (taking it over) unless present (then frees it). */
static struct slot *add(struct set *s, char *k, size_t klen)
{
        struct slot *sl = find(s, k, klen);

        if (sl) {
                free(k);
                return sl;
        }
        if ((s->n + 1) * 2 > s->cap) {
                struct set g = { NULL, s->cap ? s->cap * 2 : 64, s->n, s->hk,
                                 s->probes };

                g.s = xcalloc(g.cap, sizeof(*g.s));
                for (size_t i = 0; i < s->cap; i++)
                        if (s->s[i].k)
                                put_slot(&g, s->s[i]);
                free(s->s);
                *s = g;
        }
        put_slot(s, (struct slot){ .k = k, .klen = klen });
        s->n++;
        return find(s, k, klen);
}

static void set_free(struct set *s)
{
        for (size_t i = 0; i < s->cap; i++)
                free(s->s[i].k);
        free(s->s);
}

struct judge_range *payment_judge_range_new(void)
{
        struct judge_range *r = xcalloc(1, sizeof(*r));

        siphash_key_random(&r->hk);
        r->events.hk = r->keys.hk = &r->hk;
        r->events.probes = r->keys.probes = &r->probes;
        return r;
}

unsigned long long payment_judge_range_probes(const struct judge_range *r)
{
        return r->probes;
}

void payment_judge_range_destroy(struct judge_range *r)
{
        if (!r)
                return;
        set_free(&r->events);
        set_free(&r->keys);
        free(r);
}

/* The database's facts, overlaid with what the range created so far. */
static void overlay(struct judge_range *r, const struct judge_msg *m,
                    struct judge_facts *f)
{
        struct slot *sl;
        size_t len;
        char *k;

        if (!m->tenant_id || !m->idem_key)
                return;
        if (m->event_key && f->verdict == JUDGE_MSG_OK) {
                k = pair(m->tenant_id, m->event_key, &len);
                if (find(&r->events, k, len))
                        f->inbox_hit = true;
                free(k);
        }
        k  = pair(m->tenant_id, m->idem_key, &len);
        sl = find(&r->keys, k, len);
        free(k);
        if (!sl)
                return;
        /* a key the range created: absent from the database now */
        f->key          = JUDGE_KEY_FINAL;
        f->stored_valid = true;
        f->hash_equal   = m->request_hash &&
                        !memcmp(sl->hash, m->request_hash, CRYPTO_SHA256_LEN);
}

/* What judging m as c leaves behind (pipeline: the claim writes new and
 * in_progress events into the inbox, the outbox batch replay, conflict
 * and rejected ones; a probed in_progress and a dead letter write
 * nothing). */
static void record(struct judge_range *r, const struct judge_msg *m,
                   const struct judge_facts *f, enum judge_category c)
{
        bool inbox = false;
        size_t len;
        char *k;

        if (!m->tenant_id || !m->idem_key)
                return;
        switch (c) {
        case JUDGE_NEW:
        case JUDGE_REPLAYED:
        case JUDGE_CONFLICT:
        case JUDGE_REJECTED:
                inbox = true;
                break;
        case JUDGE_IN_PROGRESS:
                inbox = f->verdict == JUDGE_MSG_OK;
                break;
        default:
                break;
        }
        if (inbox && m->event_key) {
                k = pair(m->tenant_id, m->event_key, &len);
                (void)add(&r->events, k, len);
        }
        if (c == JUDGE_NEW && m->request_hash) {
                struct slot *sl;

                k  = pair(m->tenant_id, m->idem_key, &len);
                sl = add(&r->keys, k, len);
                memcpy(sl->hash, m->request_hash, CRYPTO_SHA256_LEN);
        }
}

enum judge_category payment_judge_range_next(struct judge_range *r,
                                             const struct judge_msg *m,
                                             const struct judge_facts *f,
                                             const char **why)
{
        struct judge_facts eff = *f;
        enum judge_category c;

        overlay(r, m, &eff);
        c = payment_judge(&eff, why);
        record(r, m, &eff, c);
        return c;
}
