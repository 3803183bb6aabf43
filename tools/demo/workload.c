/* SPDX-License-Identifier: Apache-2.0 */
/*
 * workload: the demo's messages, a pure function of the options. Same
 * intents, seed and decline rate: the same messages, byte for byte, in the
 * same order (docs/demo.md lists what the workload holds).
 */
#include "demo.h"

#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

uint64_t prng_next(uint64_t *state)
{
        uint64_t z = (*state += 0x9e3779b97f4a7c15ULL);
        z          = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
        z          = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
        return z ^ (z >> 31);
}

double prng_unit(uint64_t *state)
{
        return (double)(prng_next(state) >> 11) / 9007199254740992.0;
}

static unsigned below(uint64_t *st, unsigned n)
{
        return (unsigned)(prng_next(st) % n);
}

/* A version 4 UUID drawn from the seeded generator. */
static void uuid_draw(uint64_t *st, char out[37])
{
        uint64_t a = prng_next(st), b = prng_next(st);
        a = (a & ~0xf000ULL) | 0x4000ULL;
        b = (b & ~(0x3ULL << 62)) | (0x2ULL << 62);
        snprintf(out, 37, "%08x-%04x-%04x-%04x-%012llx", (unsigned)(a >> 32),
                 (unsigned)(a >> 16) & 0xffff, (unsigned)a & 0xffff,
                 (unsigned)(b >> 48),
                 (unsigned long long)(b & 0xffffffffffffULL));
}

/*
 * Digits in the longest run of digits that single separators ('-', ' ')
 * join. 13 or more may read as a card number, which the contract forbids
 * in an idempotency key (chargeonce rejects such an intent); about 0.3% of
 * random UUIDs are like that, so the demo draws its keys again.
 */
static int digit_run(const char *s)
{
        int run = 0, best = 0;

        for (const char *p = s; *p; p++) {
                if (*p >= '0' && *p <= '9')
                        run++;
                else if (!((*p == '-' || *p == ' ') && p > s && p[-1] >= '0' &&
                           p[-1] <= '9' && p[1] >= '0' && p[1] <= '9'))
                        run = 0;
                if (run > best)
                        best = run;
        }
        return best;
}

/* A message before sorting: pos orders the stream. */
struct slot {
        double pos;
        size_t seq; /* tie-break: keeps generation order */
        struct wl_msg m;
};

struct slots {
        struct slot *s;
        size_t n, cap;
};

static struct wl_msg *add(struct slots *v, double pos)
{
        if (v->n == v->cap) {
                v->cap = v->cap ? v->cap * 2 : 1024;
                v->s   = realloc(v->s, v->cap * sizeof(*v->s));
                if (!v->s) {
                        fprintf(stderr, "out of memory\n");
                        exit(1);
                }
        }
        memset(&v->s[v->n], 0, sizeof(v->s[0]));
        v->s[v->n].pos = pos;
        v->s[v->n].seq = v->n;
        return &v->s[v->n++].m;
}

static int by_pos(const void *a, const void *b)
{
        const struct slot *x = a, *y = b;
        if (x->pos != y->pos)
                return x->pos < y->pos ? -1 : 1;
        return x->seq < y->seq ? -1 : x->seq > y->seq;
}

static char *xstrdup(const char *s)
{
        char *d = strdup(s);
        if (!d) {
                fprintf(stderr, "out of memory\n");
                exit(1);
        }
        return d;
}

static char *intent_json(const struct wl_intent *in, const char *event_id,
                         long long amount, size_t i)
{
        char at[32];
        json_t *o;
        char *s;

        snprintf(at, sizeof(at), "2026-11-29T%02zu:%02zu:%02zuZ",
                 8 + i / 3600 % 12, i / 60 % 60, i % 60);
        o = json_pack("{s:i, s:s, s:s, s:s, s:s, s:s, s:I, s:s, s:s, s:s}",
                      "schema_version", 1, "event_id", event_id, "tenant_id",
                      in->tenant, "idempotency_key", in->key, "order_id",
                      in->order, "customer_id", in->customer, "amount",
                      (json_int_t)amount, "currency", in->currency,
                      "payment_method", in->method, "occurred_at", at);
        if (!o || !(s = json_dumps(o, JSON_COMPACT))) {
                fprintf(stderr, "json_pack failed\n");
                exit(1);
        }
        json_decref(o);
        return s;
}

static char *msg_key(const struct wl_intent *in)
{
        char k[64];
        snprintf(k, sizeof(k), "%s/%s", in->tenant, in->key);
        return xstrdup(k);
}

static void poison(struct wl_msg *m, size_t k, uint64_t *st)
{
        char ev[37], key[40], buf[512];

        /* kinds in turn: not JSON, truncated JSON, no event_id, no
         * tenant_id, no idempotency_key */
        uuid_draw(st, ev);
        uuid_draw(st, key);
        m->kind      = MK_POISON;
        m->intent    = -1;
        m->partition = -1;
        m->group     = 1;
        snprintf(m->event_id, sizeof(m->event_id), "%s", ev);
        switch (k % 5) {
        case 0:
                snprintf(buf, sizeof(buf), "payment for order %zu, amount 5",
                         k);
                break;
        case 1:
                snprintf(buf, sizeof(buf),
                         "{\"schema_version\":1,\"event_id\":\"%s\","
                         "\"tenant_id\":\"shop-1\",\"idempotency_key\":\"%s\","
                         "\"amount\":12",
                         ev, key);
                break;
        case 2:
                snprintf(buf, sizeof(buf),
                         "{\"schema_version\":1,\"tenant_id\":\"shop-1\","
                         "\"idempotency_key\":\"%s\",\"order_id\":\"p-%zu\","
                         "\"amount\":100,\"currency\":\"VND\"}",
                         key, k);
                break;
        case 3:
                snprintf(buf, sizeof(buf),
                         "{\"schema_version\":1,\"event_id\":\"%s\","
                         "\"idempotency_key\":\"%s\",\"order_id\":\"p-%zu\","
                         "\"amount\":100,\"currency\":\"VND\"}",
                         ev, key, k);
                break;
        default:
                snprintf(buf, sizeof(buf),
                         "{\"schema_version\":1,\"event_id\":\"%s\","
                         "\"tenant_id\":\"shop-2\",\"order_id\":\"p-%zu\","
                         "\"amount\":100,\"currency\":\"VND\"}",
                         ev, k);
                break;
        }
        m->value = xstrdup(buf);
        if (k % 5 != 0) {
                snprintf(buf, sizeof(buf), "shop-1/%s", key);
                m->key = xstrdup(buf);
        }
}

int workload_build(struct workload *w, const struct wl_opts *o)
{
        uint64_t st    = o->seed * 0x2545f4914f6cdd1dULL + 1;
        struct slots v = { NULL, 0, 0 };
        size_t n       = o->intents, npoison, reuse_forced;
        int parts      = o->partitions > 0 ? o->partitions : 6;

        memset(w, 0, sizeof(*w));
        w->n_intents = n;
        w->in        = calloc(n ? n : 1, sizeof(*w->in));
        if (!w->in)
                return -1;
        /* at least one key reused for another amount, somewhere mid-run */
        reuse_forced = n / 2;
        for (size_t i = 0; i < n; i++) {
                struct wl_intent *in = &w->in[i];
                struct wl_msg *m;
                double pos = (double)i;
                unsigned r;

                snprintf(in->tenant, sizeof(in->tenant), "shop-%u",
                         1 + below(&st, 3));
                uuid_draw(&st, in->key);
                for (int tries = 0; tries < 100 && digit_run(in->key) >= 13;
                     tries++)
                        uuid_draw(&st, in->key);
                snprintf(in->order, sizeof(in->order), "order-%06zu", i);
                snprintf(in->customer, sizeof(in->customer), "cust-%04u",
                         below(&st, 5000));
                in->amount = 1000LL * (10 + below(&st, 5000));
                snprintf(in->currency, sizeof(in->currency), "VND");
                snprintf(in->method, sizeof(in->method), "pm_tok_%08x",
                         (unsigned)prng_next(&st));
                uuid_draw(&st, in->event_id);
                r          = below(&st, 1000);
                in->expect = EX_SUCCEEDED;
                if (prng_unit(&st) < o->p_decline) {
                        snprintf(in->method, sizeof(in->method),
                                 "pm_decline_insufficient_funds");
                        in->expect = EX_FAILED;
                }
                if (r < 10 && i != reuse_forced) {
                        /* answerable but not acceptable */
                        if (r % 2)
                                in->amount = 0;
                        else
                                snprintf(in->currency, sizeof(in->currency),
                                         "ABC");
                        in->expect = EX_REJECTED;
                }
                switch (in->expect) {
                case EX_SUCCEEDED:
                        w->expect_succeeded++;
                        break;
                case EX_FAILED:
                        w->expect_failed++;
                        break;
                case EX_REJECTED:
                        w->expect_rejected++;
                        break;
                }
                r = below(&st, 100);
                if (i == reuse_forced)
                        r = 14;
                if (in->expect != EX_REJECTED && r >= 12 && r < 14) {
                        /* concurrent copies: 4 at once, 4 partitions */
                        int base = (int)below(&st, (unsigned)parts);
                        for (int c = 0; c < 4; c++) {
                                m            = add(&v, pos);
                                m->kind      = c ? MK_CONCURRENT : MK_ORIGINAL;
                                m->intent    = (int)i;
                                m->partition = (base + c) % parts;
                                m->group     = c ? 1 : 4;
                                if (c)
                                        uuid_draw(&st, m->event_id);
                                else
                                        memcpy(m->event_id, in->event_id, 37);
                                m->key = msg_key(in);
                                m->value =
                                    intent_json(in, m->event_id, in->amount, i);
                        }
                        w->concurrent += 3;
                        continue;
                }
                m            = add(&v, pos);
                m->kind      = MK_ORIGINAL;
                m->intent    = (int)i;
                m->partition = -1;
                m->group     = 1;
                memcpy(m->event_id, in->event_id, 37);
                m->key   = msg_key(in);
                m->value = intent_json(in, in->event_id, in->amount, i);
                if (in->expect == EX_REJECTED)
                        continue;
                /* a later copy, 1..60 messages on */
                pos += 1.0 + below(&st, 60) + 0.5;
                if (r < 6) { /* redelivered: the same message */
                        m            = add(&v, pos);
                        m->kind      = MK_REDELIVERY;
                        m->intent    = (int)i;
                        m->partition = -1;
                        m->group     = 1;
                        memcpy(m->event_id, in->event_id, 37);
                        m->key   = msg_key(in);
                        m->value = intent_json(in, in->event_id, in->amount, i);
                        w->redeliveries++;
                } else if (r < 12) { /* client retry: new event id */
                        m            = add(&v, pos);
                        m->kind      = MK_RETRY;
                        m->intent    = (int)i;
                        m->partition = -1;
                        m->group     = 1;
                        uuid_draw(&st, m->event_id);
                        m->key   = msg_key(in);
                        m->value = intent_json(in, m->event_id, in->amount, i);
                        w->retries++;
                } else if (r == 14) { /* the key again, another amount */
                        m            = add(&v, pos);
                        m->kind      = MK_REUSE;
                        m->intent    = (int)i;
                        m->partition = -1;
                        m->group     = 1;
                        uuid_draw(&st, m->event_id);
                        m->key = msg_key(in);
                        m->value =
                            intent_json(in, m->event_id, in->amount + 1000, i);
                        w->reuses++;
                }
        }
        npoison = n / 200 > 5 ? n / 200 : 5;
        for (size_t k = 0; k < npoison && n > 0; k++) {
                double pos = (double)below(&st, (unsigned)n) + 0.75;
                poison(add(&v, pos), k, &st);
        }
        w->poison = npoison;
        qsort(v.s, v.n, sizeof(*v.s), by_pos);
        w->n_msgs = v.n;
        w->msgs   = calloc(v.n ? v.n : 1, sizeof(*w->msgs));
        if (!w->msgs)
                return -1;
        for (size_t i = 0; i < v.n; i++)
                w->msgs[i] = v.s[i].m;
        free(v.s);
        return 0;
}

void workload_free(struct workload *w)
{
        for (size_t i = 0; i < w->n_msgs; i++) {
                free(w->msgs[i].key);
                free(w->msgs[i].value);
        }
        free(w->msgs);
        free(w->in);
        memset(w, 0, sizeof(*w));
}

long workload_find_event(const struct workload *w, const char *ev)
{
        for (size_t i = 0; i < w->n_msgs; i++)
                if (!strcmp(w->msgs[i].event_id, ev))
                        return (long)i;
        return -1;
}
