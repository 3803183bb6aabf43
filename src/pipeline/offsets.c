/* SPDX-License-Identifier: Apache-2.0 */
/* offsets: per-partition ring of in-flight offsets (see offsets.h). */
#include "pipeline/offsets.h"

#include "util/xalloc.h"

#include <stdlib.h>
#include <string.h>

struct entry {
        int64_t offset;
        bool done;
};

struct part {
        bool assigned;
        uint32_t gen;
        struct entry *ring;
        size_t cap, head, len; /* ring[head .. head+len) in offset order */
        int64_t last_added;    /* -1: none */
        int64_t committable;   /* next offset to store, -1: none yet */
        bool changed;
};

struct offsets {
        struct part *parts;
        int32_t n_parts;
        size_t pending;
        uint32_t next_gen;
};

struct offsets *offsets_new(void)
{
        struct offsets *ot = xcalloc(1, sizeof(*ot));
        ot->next_gen       = 1;
        return ot;
}

void offsets_destroy(struct offsets *ot)
{
        if (!ot)
                return;
        for (int32_t i = 0; i < ot->n_parts; i++)
                free(ot->parts[i].ring);
        free(ot->parts);
        free(ot);
}

static struct part *part_get(struct offsets *ot, int32_t p)
{
        if (p < 0)
                return NULL;
        if (p >= ot->n_parts) {
                int32_t n       = p + 1;
                struct part *np = xrealloc(ot->parts, (size_t)n * sizeof(*np));
                memset(np + ot->n_parts, 0,
                       (size_t)(n - ot->n_parts) * sizeof(*np));
                ot->parts   = np;
                ot->n_parts = n;
        }
        return &ot->parts[p];
}

static const struct part *part_find(const struct offsets *ot, int32_t p)
{
        return p >= 0 && p < ot->n_parts ? &ot->parts[p] : NULL;
}

uint32_t offsets_assign(struct offsets *ot, int32_t p)
{
        struct part *pt = part_get(ot, p);
        ot->pending -= pt->len;
        pt->assigned    = true;
        pt->gen         = ot->next_gen++;
        pt->head        = 0;
        pt->len         = 0;
        pt->last_added  = -1;
        pt->committable = -1;
        pt->changed     = false;
        return pt->gen;
}

void offsets_revoke(struct offsets *ot, int32_t p)
{
        struct part *pt = part_get(ot, p);
        ot->pending -= pt->len;
        pt->assigned = false;
        pt->len      = 0;
        pt->head     = 0;
        pt->changed  = false;
}


int offsets_add(struct offsets *ot, int32_t p, uint32_t gen, int64_t offset)
{
        struct part *pt = part_get(ot, p);

        if (!pt || !pt->assigned || pt->gen != gen || offset <= pt->last_added)
                return -1;
        if (pt->len == pt->cap) {
                size_t cap      = pt->cap ? pt->cap * 2 : 64;
                struct entry *r = xmalloc(cap * sizeof(*r));
                for (size_t i = 0; i < pt->len; i++)
                        r[i] = pt->ring[(pt->head + i) % pt->cap];
                free(pt->ring);
                pt->ring = r;
                pt->cap  = cap;
                pt->head = 0;
        }
        pt->ring[(pt->head + pt->len) % pt->cap] =
            (struct entry){ .offset = offset, .done = false };
        pt->len++;
        pt->last_added = offset;
        ot->pending++;
        return 0;
}

void offsets_done(struct offsets *ot, int32_t p, uint32_t gen, int64_t offset)
{
        struct part *pt = part_get(ot, p);
        size_t lo       = 0, hi;

        if (!pt || !pt->assigned || pt->gen != gen || pt->len == 0)
                return;
        /* binary search: the ring holds increasing offsets */
        hi = pt->len;
        while (lo < hi) {
                size_t mid = (lo + hi) / 2;
                int64_t o  = pt->ring[(pt->head + mid) % pt->cap].offset;
                if (o < offset)
                        lo = mid + 1;
                else
                        hi = mid;
        }
        if (lo == pt->len ||
            pt->ring[(pt->head + lo) % pt->cap].offset != offset)
                return;
        pt->ring[(pt->head + lo) % pt->cap].done = true;
        while (pt->len > 0 && pt->ring[pt->head].done) {
                pt->committable = pt->ring[pt->head].offset + 1;
                pt->changed     = true;
                pt->head        = (pt->head + 1) % pt->cap;
                pt->len--;
                ot->pending--;
        }
}

int64_t offsets_take_committable(struct offsets *ot, int32_t p)
{
        struct part *pt = part_get(ot, p);
        if (!pt || !pt->assigned || !pt->changed)
                return -1;
        pt->changed = false;
        return pt->committable;
}


size_t offsets_pending(const struct offsets *ot)
{
        return ot->pending;
}

size_t offsets_pending_in(const struct offsets *ot, int32_t p)
{
        const struct part *pt = part_find(ot, p);
        return pt && pt->assigned ? pt->len : 0;
}

int32_t offsets_partition_count(const struct offsets *ot)
{
        return ot->n_parts;
}
