/* SPDX-License-Identifier: Apache-2.0 */
/* flow: the engines' shared loop pieces (see flow.h). */
#include "flow/flow.h"

#include <string.h>

enum flow_step flow_drain_step(struct flow_drain *d, int level, int64_t now_ms,
                               int64_t budget_ms, size_t left)
{
        if (level >= FLOW_EXIT)
                return FLOW_STEP_EXIT;
        if (level == FLOW_RUN && !d->draining)
                return FLOW_STEP_RUN;
        if (!d->draining) {
                d->draining    = true;
                d->deadline_ms = now_ms + budget_ms;
                /* nothing in hand: drained already */
                return left == 0 ? FLOW_STEP_DONE : FLOW_STEP_BEGIN;
        }
        if (left == 0 || now_ms > d->deadline_ms)
                return FLOW_STEP_DONE;
        return FLOW_STEP_RUN;
}

bool flow_tick_due(struct flow_tick *t, int64_t now_ms)
{
        if (t->next_ms && now_ms < t->next_ms)
                return false;
        t->next_ms = now_ms + t->every_ms;
        return true;
}

int64_t flow_tick_wait(const struct flow_tick *t, int64_t now_ms,
                       int64_t cap_ms)
{
        int64_t w = t->next_ms - now_ms;

        if (w < 0)
                w = 0;
        return w < cap_ms ? w : cap_ms;
}

bool flow_stats_due(struct flow_tick *t, int64_t now_ms, bool force,
                    const void *cur, void *last, size_t n)
{
        if (!force) {
                if (!flow_tick_due(t, now_ms))
                        return false;
                if (!memcmp(cur, last, n))
                        return false;
        } else {
                t->next_ms = now_ms + t->every_ms;
        }
        memcpy(last, cur, n);
        return true;
}

void flow_list_add(struct flow_list *l, struct flow_link *k)
{
        k->prev = NULL;
        k->next = l->head;
        if (l->head)
                l->head->prev = k;
        l->head = k;
        l->n++;
}

void flow_list_remove(struct flow_list *l, struct flow_link *k)
{
        if (k->prev)
                k->prev->next = k->next;
        else
                l->head = k->next;
        if (k->next)
                k->next->prev = k->prev;
        k->prev = k->next = NULL;
        l->n--;
}

void flow_queue_push(struct flow_queue *q, struct flow_qnode *x, int64_t now_us)
{
        x->next     = NULL;
        x->since_us = now_us;
        if (q->tail)
                q->tail->next = x;
        else
                q->head = x;
        q->tail = x;
        q->n++;
}

struct flow_qnode *flow_queue_pop(struct flow_queue *q)
{
        struct flow_qnode *x = q->head;

        if (!x)
                return NULL;
        q->head = x->next;
        if (!q->head)
                q->tail = NULL;
        q->n--;
        x->next = NULL;
        return x;
}

bool flow_queue_ready(const struct flow_queue *q, size_t batch_size,
                      int64_t linger_us, int64_t now_us, bool force, bool idle)
{
        if (q->n == 0)
                return false;
        return force || idle || q->n >= batch_size ||
               now_us - q->head->since_us >= linger_us;
}

void flow_renew_init(struct flow_renew *r, int64_t lease_ms)
{
        r->every_ms      = lease_ms / 3;
        r->check_ms      = r->every_ms < 2000 ? r->every_ms / 2 : 1000;
        r->last_round_ms = 0;
}

bool flow_renew_round(struct flow_renew *r, int64_t now_ms)
{
        if (r->last_round_ms && now_ms - r->last_round_ms < r->check_ms)
                return false;
        r->last_round_ms = now_ms;
        return true;
}

bool flow_renew_due(const struct flow_renew *r, int64_t renewed_ms,
                    int64_t now_ms)
{
        return now_ms - renewed_ms >= r->every_ms;
}
