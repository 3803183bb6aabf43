/* SPDX-License-Identifier: Apache-2.0 */
/*
 * batch: the part every batch statement of the store shares (see
 * store_batch_def in store_int.h): check the items, put them in their
 * sending order without in-batch duplicates, fill the array parameters,
 * run the statement, map each result row back to its item.
 *
 * Must never: put a parameter value into errstr; send an item twice in
 * one statement; make the lock order depend on anything but the keys (the
 * sort is total: key, then batch position).
 */
#include "store/store_int.h"

#include "util/xalloc.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void store_batch_init(struct store_batch *b, const struct store_stmt *stmt,
                      int narrays, const char *what)
{
        memset(b, 0, sizeof(*b));
        b->what    = what;
        b->stmt    = stmt;
        b->narrays = narrays;
        for (int a = 0; a < narrays; a++)
                store_pgarr_init(&b->arr[a]);
}

void store_batch_free(struct store_batch *b)
{
        PQclear(b->res);
        b->res = NULL;
        free(b->sent);
        b->sent  = NULL;
        b->nsent = 0;
        for (int a = 0; a < b->narrays; a++)
                store_pgarr_free(&b->arr[a]);
}

size_t store_batch_item(const struct store_batch *b, size_t k)
{
        return b->sent ? b->sent[k] : k;
}

/* def->prepare on every item; the first incomplete one ends the batch. */
static int batch_check(const struct store_batch_def *def, void *items, size_t n,
                       char *errstr, size_t errstr_size)
{
        for (size_t i = 0; i < n; i++) {
                if (!def->prepare((char *)items + i * def->item_size)) {
                        snprintf(errstr, errstr_size, "%s: item %zu %s",
                                 def->what, i, def->incomplete);
                        return def->incomplete_rc;
                }
        }
        return STORE_OK;
}

/* An item's key and its position in the batch, the tie-break that keeps
 * "the first copy" well defined. */
struct batch_key {
        const char *k[2];
        size_t idx;
};

static int cmp_batch_key(const void *a, const void *b)
{
        const struct batch_key *x = a;
        const struct batch_key *y = b;
        int c                     = strcmp(x->k[0], y->k[0]);

        if (c == 0)
                c = strcmp(x->k[1], y->k[1]);
        if (c != 0)
                return c;
        return x->idx < y->idx ? -1 : x->idx > y->idx;
}

static bool same_key(const struct batch_key *x, const struct batch_key *y)
{
        return strcmp(x->k[0], y->k[0]) == 0 && strcmp(x->k[1], y->k[1]) == 0;
}

/* b->sent: the items to send, in their order (see store_batch_def). */
static void batch_order(struct store_batch *b,
                        const struct store_batch_def *def, void *items,
                        size_t n, void *arg)
{
        enum { SEND, DUP, SKIP };
        struct batch_key *v = xmalloc(n * sizeof(*v));
        unsigned char *what = xcalloc(n, 1); /* SEND */
        size_t m            = 0;

        b->nsent = 0;
        b->sent  = xmalloc(n * sizeof(*b->sent));
        for (size_t i = 0; i < n; i++) {
                if (def->skip && def->skip(items, i, arg)) {
                        what[i] = SKIP;
                        continue;
                }
                def->key(items, i, v[m].k);
                v[m++].idx = i;
        }
        qsort(v, m, sizeof(*v), cmp_batch_key);
        for (size_t j = 0; j < m; j++) {
                if (j > 0 && same_key(&v[j - 1], &v[j]))
                        what[v[j].idx] = DUP;
                else if (def->sorted)
                        b->sent[b->nsent++] = v[j].idx;
        }
        for (size_t i = 0; i < n; i++) {
                if (what[i] == DUP && def->on_dup)
                        def->on_dup(items, i);
                else if (!def->sorted && what[i] == SEND)
                        b->sent[b->nsent++] = i;
        }
        free(v);
        free(what);
}

PGresult *store_batch_exec(struct store *st, struct store_batch *b, int nfields,
                           int *rc, char *errstr, size_t errstr_size)
{
        for (int a = 0; a < b->narrays; a++) {
                b->values[a] = store_pgarr_finish(&b->arr[a]);
                if (!b->values[a]) {
                        snprintf(errstr, errstr_size, "%s: %s", b->what,
                                 b->arr[a].b.err == EMSGSIZE
                                     ? "batch too large for one statement"
                                     : "an array parameter cannot be built");
                        *rc = STORE_ERR;
                        return NULL;
                }
        }
        PQclear(b->res);
        b->res = store_exec(st, b->stmt, b->values, rc, errstr, errstr_size);
        if (!b->res)
                return NULL;
        if (nfields >= 0 && ((size_t)PQntuples(b->res) != b->nsent ||
                             PQnfields(b->res) != nfields)) {
                snprintf(errstr, errstr_size,
                         "%s: unexpected result shape (%d rows)", b->what,
                         PQntuples(b->res));
                *rc = STORE_ERR;
                return NULL;
        }
        return b->res;
}

/* The item that row r answers (column 0: its 1-based ordinal among the
 * items sent). False, errstr set, for an ordinal out of range. */
static bool batch_row(const struct store_batch *b, const PGresult *res, int r,
                      size_t *item, char *errstr, size_t errstr_size)
{
        long ord = strtol(PQgetvalue(res, r, 0), NULL, 10);

        if (ord < 1 || (size_t)ord > b->nsent) {
                snprintf(errstr, errstr_size, "%s: unexpected row order",
                         b->what);
                return false;
        }
        *item = store_batch_item(b, (size_t)ord - 1);
        return true;
}

int store_batch_run(struct store *st, const struct store_batch_def *def,
                    void *items, size_t n, void *arg, char *errstr,
                    size_t errstr_size)
{
        struct store_batch b;
        PGresult *res;
        int rc;

        store_batch_init(&b, def->stmt, def->narrays, def->what);
        rc = batch_check(def, items, n, errstr, errstr_size);
        if (rc != STORE_OK || n == 0)
                goto done;
        b.nsent = n; /* sent == NULL: every item, in batch order */
        if (def->key)
                batch_order(&b, def, items, n, arg);
        rc = STORE_ERR;
        if (!def->fill(&b, items, arg, errstr, errstr_size))
                goto done;
        rc = STORE_OK;
        if (b.nsent == 0)
                goto done; /* nothing but duplicates */
        res = store_batch_exec(st, &b, def->nfields, &rc, errstr, errstr_size);
        if (!res)
                goto done;
        rc = STORE_ERR;
        for (int r = 0; r < PQntuples(res); r++) {
                size_t i;

                if (!batch_row(&b, res, r, &i, errstr, errstr_size))
                        goto done;
                def->read_row(items, i, res, r, arg);
        }
        rc = STORE_OK;
done:
        store_batch_free(&b);
        return rc;
}
