/* SPDX-License-Identifier: Apache-2.0 */
/*
 * nf_check: the checker over a whole network-fault or failover run.
 *
 *   - 0 double charges: the simulator's ground truth, per (tenant, order);
 *     every intent has an order of its own;
 *   - 0 lost intents: every intent has a non-replayed final result
 *     (succeeded, failed, review) on the result topic;
 *   - one result per intent: after dedup by the result's event_id, one
 *     non-replayed final result; more are tolerated only when they carry
 *     the same facts (status, payment_id, provider_charge_id), and every
 *     replayed result of the intent carries them too;
 *   - per-key order: a replayed result never before its original, and the
 *     first occurrences of a key's results in outbox id order (where the
 *     database still has the row);
 *   - nothing but our intents' results; with the database: invariant view
 *     empty, nothing processing, the outbox drained, one payment per
 *     intent, the gateway's successful charges = succeeded payments.
 */
#include "nf.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define VIOLATION(count, ...)                                                  \
        do {                                                                   \
                if ((count) < 20) {                                            \
                        fprintf(stderr, "VIOLATION: ");                        \
                        fprintf(stderr, __VA_ARGS__);                          \
                        fprintf(stderr, "\n");                                 \
                }                                                              \
                (count)++;                                                     \
        } while (0)

static bool is_final(const char *status)
{
        return !strcmp(status, "succeeded") || !strcmp(status, "failed") ||
               !strcmp(status, "review");
}

static bool same_facts(const struct nf_result *a, const struct nf_result *b)
{
        return !strcmp(a->status, b->status) &&
               !strcmp(a->payment_id, b->payment_id) &&
               !strcmp(a->charge_id, b->charge_id);
}

/* outbox event_id -> id, sorted for bsearch */
struct ob_row {
        char event_id[40];
        long long id;
};

static int cmp_ob(const void *a, const void *b)
{
        return strcmp(((const struct ob_row *)a)->event_id,
                      ((const struct ob_row *)b)->event_id);
}

static struct ob_row *load_outbox(struct nf_run *run, size_t *n)
{
        PGresult *res;
        struct ob_row *rows;

        *n = 0;
        if (PQstatus(run->sc.pg) != CONNECTION_OK)
                PQreset(run->sc.pg);
        res = PQexec(run->sc.pg, "SELECT event_id, id FROM outbox");
        if (PQresultStatus(res) != PGRES_TUPLES_OK) {
                fprintf(stderr, "outbox: %s", PQresultErrorMessage(res));
                PQclear(res);
                return NULL;
        }
        rows = calloc((size_t)PQntuples(res) + 1, sizeof(*rows));
        SC_CHECK(rows, "oom");
        for (int i = 0; i < PQntuples(res); i++) {
                snprintf(rows[i].event_id, sizeof(rows[i].event_id), "%s",
                         PQgetvalue(res, i, 0));
                rows[i].id = atoll(PQgetvalue(res, i, 1));
        }
        *n = (size_t)PQntuples(res);
        PQclear(res);
        qsort(rows, *n, sizeof(*rows), cmp_ob);
        return rows;
}

static long long outbox_id(const struct ob_row *rows, size_t n,
                           const char *event_id)
{
        struct ob_row k;
        const struct ob_row *hit;

        if (!rows)
                return -1;
        snprintf(k.event_id, sizeof(k.event_id), "%s", event_id);
        hit = bsearch(&k, rows, n, sizeof(*rows), cmp_ob);
        return hit ? hit->id : -1;
}

/* Result indexes grouped by intent, in the order read (one key is one
 * partition, so that is the topic's order). */
struct by_intent {
        size_t *idx;
        size_t n;
        size_t *start; /* intent i: idx[start[i] .. start[i+1]) */
};

static void group(struct nf_run *run, struct by_intent *g)
{
        size_t *count = calloc((size_t)run->n_intents + 1, sizeof(*count));

        g->start = calloc((size_t)run->n_intents + 2, sizeof(*g->start));
        g->idx   = calloc(run->n_results + 1, sizeof(*g->idx));
        SC_CHECK(count && g->start && g->idx, "oom");
        for (size_t i = 0; i < run->n_results; i++)
                if (run->results[i].intent >= 0)
                        count[run->results[i].intent]++;
        for (int i = 0; i < run->n_intents; i++)
                g->start[i + 1] = g->start[i] + count[i];
        memset(count, 0, ((size_t)run->n_intents + 1) * sizeof(*count));
        for (size_t i = 0; i < run->n_results; i++) {
                int in = run->results[i].intent;
                if (in >= 0)
                        g->idx[g->start[in] + count[in]++] = i;
        }
        g->n = g->start[run->n_intents];
        free(count);
}

void nf_range(struct nf_run *run, json_t *stats, int from, int to,
              long *double_charges, long *lost)
{
        json_t *orders = json_object_get(stats, "by_order"), *row;
        size_t i;

        *double_charges = 0;
        *lost           = 0;
        json_array_foreach(orders, i, row)
        {
                const char *t =
                    json_string_value(json_object_get(row, "tenant_id"));
                const char *o =
                    json_string_value(json_object_get(row, "order_id"));
                long c =
                    (long)json_integer_value(json_object_get(row, "charges"));
                int idx = -1;

                if (t && o && !strcmp(t, NF_TENANT) &&
                    sscanf(o, "o%d", &idx) == 1 && idx >= from && idx < to &&
                    c > 1)
                        *double_charges += c - 1;
        }
        pthread_mutex_lock(&run->mu);
        for (int k = from; k < to && k < run->n_intents; k++)
                if (!run->intents[k].answered_ts)
                        (*lost)++;
        pthread_mutex_unlock(&run->mu);
}

void nf_check(struct nf_run *run, struct sim *s, bool db, struct nf_verdict *v)
{
        struct by_intent g;
        struct ob_row *ob = NULL;
        size_t n_ob       = 0;
        json_t *stats, *orders, *row;
        long other = 0;
        size_t i;

        memset(v, 0, sizeof(*v));
        if (db)
                ob = load_outbox(run, &n_ob);
        pthread_mutex_lock(&run->mu);
        v->intents  = run->n_intents;
        v->messages = (long)run->n_results;
        group(run, &g);
        for (int in = 0; in < run->n_intents; in++) {
                const struct nf_result *first = NULL;
                size_t finals                 = 0, a, b;
                long long last_id             = -1;
                bool disagree = false, order = false;

                for (a = g.start[in]; a < g.start[in + 1]; a++) {
                        const struct nf_result *r = &run->results[g.idx[a]];
                        bool seen                 = false;
                        long long id;

                        /* the same event id again: a re-published copy */
                        for (b = g.start[in]; b < a && !seen; b++)
                                seen = !strcmp(run->results[g.idx[b]].event_id,
                                               r->event_id);
                        if (seen) {
                                v->republished++;
                                continue;
                        }
                        if (!is_final(r->status)) {
                                VIOLATION(other,
                                          "intent %s: a %s result (event %s)",
                                          r->key, r->status, r->event_id);
                                continue;
                        }
                        if (!r->replayed) {
                                finals++;
                                if (!first)
                                        first = r;
                        } else if (!first) {
                                order = true;
                        }
                        if (first && !same_facts(first, r))
                                disagree = true;
                        id = outbox_id(ob, n_ob, r->event_id);
                        if (id >= 0) {
                                if (id < last_id)
                                        order = true;
                                last_id = id;
                        }
                }
                if (!finals) {
                        VIOLATION(v->lost, "intent k%06d has no final result",
                                  in);
                } else if (disagree) {
                        char facts[1024];
                        size_t len = 0;

                        facts[0] = '\0';
                        for (a = g.start[in];
                             a < g.start[in + 1] && len < sizeof(facts) - 1;
                             a++) {
                                const struct nf_result *r =
                                    &run->results[g.idx[a]];
                                len += (size_t)snprintf(
                                    facts + len, sizeof(facts) - len,
                                    " [%s%s %.8s %s]", r->status,
                                    r->replayed ? "*" : "", r->payment_id,
                                    r->charge_id);
                        }
                        VIOLATION(v->disagree,
                                  "intent k%06d: results disagree:%s", in,
                                  facts);
                } else if (finals > 1) {
                        v->extra++;
                }
                if (order)
                        VIOLATION(v->order,
                                  "intent k%06d: its results are out of "
                                  "order on the topic",
                                  in);
        }
        if (run->unknown_results)
                VIOLATION(other, "%ld result(s) answer nothing that was sent",
                          run->unknown_results);
        pthread_mutex_unlock(&run->mu);
        free(g.idx);
        free(g.start);
        free(ob);

        stats             = sim_stats(s);
        v->double_charges = sim_stat(stats, "double_charges");
        orders            = json_object_get(stats, "by_order");
        json_array_foreach(orders, i, row)
        {
                long c =
                    (long)json_integer_value(json_object_get(row, "charges"));
                if (c > 1) {
                        VIOLATION(
                            v->double_orders, "order %s charged %ld times",
                            json_string_value(json_object_get(row, "order_id")),
                            c);
                }
        }
        if (db) {
                long processing = sc_sql_long(
                    &run->sc, "SELECT count(*) FROM payments WHERE status"
                              " = 'processing'");
                long unpublished = sc_sql_long(
                    &run->sc,
                    "SELECT count(*) FROM outbox WHERE" SC_UNPUBLISHED);
                long payments =
                    sc_sql_long(&run->sc, "SELECT count(*) FROM payments");
                long succeeded = sc_sql_long(
                    &run->sc, "SELECT count(*) FROM payments WHERE status"
                              " = 'succeeded'");
                long inv = sc_sql_long(
                    &run->sc, "SELECT count(*) FROM invariant_violations");

                if (processing)
                        VIOLATION(other, "%ld payments left processing",
                                  processing);
                if (unpublished)
                        VIOLATION(other, "outbox not drained: %ld rows",
                                  unpublished);
                if (payments != v->intents)
                        VIOLATION(other, "%ld payments for %d intents",
                                  payments, v->intents);
                if (inv)
                        VIOLATION(other,
                                  "%ld rows in invariant_violations "
                                  "(chargeonce audit lists them)",
                                  inv);
                if (sim_stat(stats, "succeeded_charges") != succeeded)
                        VIOLATION(other,
                                  "the gateway charged %ld times, %ld "
                                  "payments succeeded",
                                  sim_stat(stats, "succeeded_charges"),
                                  succeeded);
        }
        json_decref(stats);
        v->violations =
            other + v->lost + v->disagree + v->order + v->double_charges;
}
