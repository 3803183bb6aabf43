/* SPDX-License-Identifier: Apache-2.0 */
/*
 * scale_check: the end-of-run checks of test_scale, from the result topic,
 * the DLQ topic, the database and the simulator's ground truth.
 */
#include "scale.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* One result message, or after dedup one result (by its event id). */
struct res {
        char eid[40];  /* the result's event id */
        char ieid[40]; /* the intent's event id (header intent-event-id) */
        char mkey[80]; /* the message key */
        char status[16];
        bool replayed;
        int32_t partition;
        int64_t offset;
        long outbox_id;
        const char *value;
};


static int by_eid_then_pos(const void *a, const void *b)
{
        const struct res *x = a, *y = b;
        int c = strcmp(x->eid, y->eid);
        if (c)
                return c;
        if (x->partition != y->partition)
                return x->partition < y->partition ? -1 : 1;
        return x->offset < y->offset ? -1 : x->offset > y->offset;
}

static int by_eid(const void *a, const void *b)
{
        return strcmp(((const struct res *)a)->eid,
                      ((const struct res *)b)->eid);
}

static int by_key_then_pos(const void *a, const void *b)
{
        const struct res *x = a, *y = b;
        int c = strcmp(x->mkey, y->mkey);
        if (c)
                return c;
        if (x->partition != y->partition)
                return x->partition < y->partition ? -1 : 1;
        return x->offset < y->offset ? -1 : x->offset > y->offset;
}

static int by_ieid(const void *a, const void *b)
{
        return strcmp(((const struct res *)a)->ieid,
                      ((const struct res *)b)->ieid);
}

/* The result messages, parsed; *n_out their number. */
static struct res *read_results(struct scenario *sc, struct sc_msg **m,
                                size_t *nm, size_t *n_out)
{
        struct res *r;

        *nm = sc_read_topic(sc, sc->t_results, 2000, m);
        r   = calloc(*nm + 1, sizeof(*r));
        SC_CHECK(r, "oom");
        for (size_t i = 0; i < *nm; i++) {
                json_error_t e;
                json_t *j =
                    json_loads((*m)[i].value ? (*m)[i].value : "", 0, &e);
                const char *st;

                SC_CHECK(j, "result %zu is not JSON: %s", i, e.text);
                st = json_string_value(json_object_get(j, "status"));
                SC_CHECK(st, "result %zu has no status", i);
                snprintf(r[i].status, sizeof(r[i].status), "%s", st);
                r[i].replayed = json_is_true(json_object_get(j, "replayed"));
                json_decref(j);
                SC_CHECK(sc_header((*m)[i].headers, "event_id", r[i].eid,
                                   sizeof(r[i].eid)) &&
                             sc_header((*m)[i].headers, "intent-event-id",
                                       r[i].ieid, sizeof(r[i].ieid)),
                         "result %zu lacks its event id headers", i);
                snprintf(r[i].mkey, sizeof(r[i].mkey), "%s",
                         (*m)[i].key ? (*m)[i].key : "");
                r[i].partition = (*m)[i].partition;
                r[i].offset    = (*m)[i].offset;
                r[i].value     = (*m)[i].value;
        }
        *n_out = *nm;
        return r;
}

/* Keeps the first occurrence of each result event id (a relay may publish
 * a row again); a repeat must carry the same bytes. Returns the count. */
static size_t dedup(struct res *r, size_t n)
{
        size_t u = 0;

        qsort(r, n, sizeof(*r), by_eid_then_pos);
        for (size_t i = 0; i < n; i++) {
                if (u > 0 && !strcmp(r[u - 1].eid, r[i].eid)) {
                        SC_CHECK(!strcmp(r[u - 1].value, r[i].value),
                                 "result %s re-published with other bytes",
                                 r[i].eid);
                        continue;
                }
                r[u++] = r[i];
        }
        return u;
}

static bool is_final(const char *status);

/* The key's original outcome (its settle's row), as opposed to an answer
 * to a copy (replayed, conflict, rejected). */
static bool is_original(const struct res *r)
{
        return is_final(r->status) && !r->replayed;
}

/*
 * Every outbox row is on the topic and every result is an outbox row;
 * per message key the first occurrences come in outbox id order, except
 * between two answers to copies that may have been written by overlapping
 * transactions (ids are taken at insert, not at commit: two copies
 * answered at the same moment by two consumers; docs/data-model.md,
 * "Outbox ordering"), and a key's original outcome comes before every
 * replay of it (a replay is written only after the original committed).
 */
static void check_outbox_and_order(struct scenario *sc, struct res *u,
                                   size_t nu)
{
        PGresult *res = PQexec(sc->pg, "SELECT event_id, id FROM outbox");
        int rows;
        size_t keys = 0, swapped = 0;
        bool original_seen = false;

        SC_CHECK(PQresultStatus(res) == PGRES_TUPLES_OK, "%s",
                 PQresultErrorMessage(res));
        rows = PQntuples(res);
        SC_CHECK((size_t)rows == nu, "%d outbox rows, %zu distinct results",
                 rows, nu);
        for (int i = 0; i < rows; i++) {
                struct res key, *f;
                snprintf(key.eid, sizeof(key.eid), "%s", PQgetvalue(res, i, 0));
                /* u is sorted by event id (dedup), which is unique */
                f = bsearch(&key, u, nu, sizeof(*u), by_eid);
                SC_CHECK(f, "outbox row %s never published", key.eid);
                f->outbox_id = atol(PQgetvalue(res, i, 1));
        }
        PQclear(res);
        qsort(u, nu, sizeof(*u), by_key_then_pos);
        for (size_t i = 0; i < nu; i++) {
                SC_CHECK(u[i].outbox_id > 0, "result %s not in the outbox",
                         u[i].eid);
                if (i == 0 || strcmp(u[i - 1].mkey, u[i].mkey)) {
                        keys++;
                        original_seen = is_original(&u[i]);
                        SC_CHECK(!u[i].replayed,
                                 "key order broken: replay (outbox id %ld) "
                                 "first seen before the key's original",
                                 u[i].outbox_id);
                        continue;
                }
                SC_CHECK(u[i].partition == u[i - 1].partition,
                         "key %s on two partitions", u[i].mkey);
                SC_CHECK(!u[i].replayed || original_seen,
                         "key order broken: replay (outbox id %ld) first "
                         "seen before the key's original",
                         u[i].outbox_id);
                original_seen = original_seen || is_original(&u[i]);
                if (u[i].outbox_id > u[i - 1].outbox_id)
                        continue;
                SC_CHECK(!is_original(&u[i]) && !is_original(&u[i - 1]),
                         "key order broken: outbox id %ld (%s%s) first seen "
                         "after id %ld (%s%s) of the same key",
                         u[i].outbox_id, u[i].status,
                         u[i].replayed ? ", replayed" : "", u[i - 1].outbox_id,
                         u[i - 1].status,
                         u[i - 1].replayed ? ", replayed" : "");
                swapped++;
        }
        printf("check: %zu results on %zu message keys, each key in outbox "
               "id order (%zu pair(s) of concurrent copies' answers "
               "swapped)\n",
               nu, keys, swapped);
}

static bool is_final(const char *status)
{
        return !strcmp(status, "succeeded") || !strcmp(status, "failed") ||
               !strcmp(status, "review");
}

static int sent_by_group(const void *a, const void *b)
{
        const struct scale_sent *x = a, *y = b;
        int c = strcmp(x->tenant, y->tenant);
        return c ? c : strcmp(x->key, y->key);
}

/* The result of one message, or NULL (u sorted by ieid). */
static const struct res *result_of(const struct res *u, size_t nu,
                                   const char *event_id)
{
        struct res key;
        snprintf(key.ieid, sizeof(key.ieid), "%s", event_id);
        return bsearch(&key, u, nu, sizeof(*u), by_ieid);
}

/* Per intent (tenant, key): one non-replayed final result; the other
 * copies none (answered by the first while it was in progress) or a
 * replayed one of the same status, after it on the topic; conflicts and
 * rejected messages one each. Returns the number of intents. */
static long check_intents(struct res *u, size_t nu,
                          const struct scale_sent *sent_in, int n_sent)
{
        struct scale_sent *s = malloc(sizeof(*s) * (size_t)(n_sent + 1));
        long intents = 0, copies_answered = 0, copies_silent = 0;

        SC_CHECK(s, "oom");
        memcpy(s, sent_in, sizeof(*s) * (size_t)n_sent);
        qsort(u, nu, sizeof(*u), by_ieid);
        for (size_t i = 1; i < nu; i++)
                SC_CHECK(strcmp(u[i - 1].ieid, u[i].ieid),
                         "two results for intent event %s", u[i].ieid);
        qsort(s, (size_t)n_sent, sizeof(*s), sent_by_group);
        for (int g = 0; g < n_sent;) {
                int e                = g;
                const struct res *og = NULL;

                while (e < n_sent && !sent_by_group(&s[g], &s[e]))
                        e++;
                for (int i = g; i < e; i++) { /* the original */
                        const struct res *r = result_of(u, nu, s[i].event_id);
                        if ((s[i].kind == SK_ORIGINAL ||
                             s[i].kind == SK_COPY) &&
                            r && !r->replayed && is_final(r->status)) {
                                SC_CHECK(!og,
                                         "intent %s/%s: two non-replayed "
                                         "final results",
                                         s[i].tenant, s[i].key);
                                og = r;
                        }
                }
                if (s[g].kind != SK_REJECTED) {
                        SC_CHECK(og, "intent %s/%s: no final result",
                                 s[g].tenant, s[g].key);
                        intents++;
                }
                for (int i = g; i < e; i++) {
                        const struct res *r = result_of(u, nu, s[i].event_id);
                        const char *want = s[i].kind == SK_CONFLICT ? "conflict"
                                           : s[i].kind == SK_REJECTED
                                               ? "rejected"
                                               : NULL;
                        if (r == og)
                                continue;
                        if (want) {
                                SC_CHECK(r && !strcmp(r->status, want),
                                         "%s/%s event %s: %s, want %s",
                                         s[i].tenant, s[i].key, s[i].event_id,
                                         r ? r->status : "no result", want);
                                continue;
                        }
                        if (!r) {
                                copies_silent++;
                                continue;
                        }
                        SC_CHECK(r->replayed && !strcmp(r->status, og->status),
                                 "%s/%s copy: %s%s, original %s", s[i].tenant,
                                 s[i].key, r->status,
                                 r->replayed ? " replayed" : "", og->status);
                        SC_CHECK(r->partition == og->partition &&
                                     r->offset > og->offset,
                                 "%s/%s: a replayed result precedes the "
                                 "original",
                                 s[i].tenant, s[i].key);
                        copies_answered++;
                }
                g = e;
        }
        for (size_t i = 0; i < nu; i++) { /* nothing answers the unsent */
                bool found = false;
                for (int k = 0; k < n_sent && !found; k++)
                        found = !strcmp(sent_in[k].event_id, u[i].ieid);
                SC_CHECK(found, "a result for intent event %s, never sent",
                         u[i].ieid);
        }
        printf("check: %ld intents, one final result each; copies: %ld "
               "replayed, %ld answered by their first (in progress)\n",
               intents, copies_answered, copies_silent);
        free(s);
        return intents;
}

/* Each poison message in the DLQ (not_json), and nothing else there. */
static void check_dlq(struct scenario *sc, char (*poison)[48], int n_poison)
{
        struct sc_msg *m;
        size_t n = sc_read_topic(sc, sc->t_dlq, 2000, &m);

        for (int p = 0; p < n_poison; p++) {
                int found = 0;
                for (size_t i = 0; i < n; i++)
                        if (m[i].value && !strcmp(m[i].value, poison[p]))
                                found++;
                SC_CHECK(found >= 1, "poison %d not in the DLQ", p);
        }
        for (size_t i = 0; i < n; i++) {
                char reason[64];
                bool ours = false;
                for (int p = 0; p < n_poison && !ours; p++)
                        ours = m[i].value && !strcmp(m[i].value, poison[p]);
                SC_CHECK(ours, "a DLQ message that is no poison: %.60s",
                         m[i].value ? m[i].value : "(null)");
                SC_CHECK(sc_header(m[i].headers, "dlq-reason", reason,
                                   sizeof(reason)) &&
                             !strcmp(reason, "not_json"),
                         "poison in the DLQ without dlq-reason not_json");
        }
        printf("check: %d poison messages in the DLQ (%zu DLQ messages)\n",
               n_poison, n);
        sc_messages_free(m, n);
}

void scale_check(struct scenario *sc, struct sim *s,
                 const struct scale_sent *sent, int n_sent, char (*poison)[48],
                 int n_poison)
{
        struct sc_msg *m;
        size_t nm, n, nu;
        struct res *r = read_results(sc, &m, &nm, &n);
        long intents, succeeded;
        json_t *st;

        nu = dedup(r, n);
        printf("check: %zu result messages, %zu after dedup by event id\n", n,
               nu);
        check_outbox_and_order(sc, r, nu);
        intents = check_intents(r, nu, sent, n_sent);
        check_dlq(sc, poison, n_poison);
        SC_CHECK(sc_sql_long(sc, "SELECT count(*) FROM payments") == intents,
                 "%ld payments for %ld intents",
                 sc_sql_long(sc, "SELECT count(*) FROM payments"), intents);
        SC_CHECK(sc_sql_long(sc, "SELECT count(*) FROM payments WHERE status"
                                 " = 'processing'") == 0,
                 "payments left processing");
        SC_CHECK(sc_sql_long(
                     sc, "SELECT count(*) FROM outbox WHERE" SC_UNPUBLISHED) ==
                     0,
                 "outbox not drained");
        sc_check_invariants(sc);
        succeeded = sc_sql_long(sc, "SELECT count(*) FROM payments WHERE"
                                    " status = 'succeeded'");
        st        = sim_stats(s);
        SC_CHECK(sim_stat(st, "double_charges") == 0, "%ld DOUBLE CHARGES",
                 sim_stat(st, "double_charges"));
        SC_CHECK(sim_stat(st, "succeeded_charges") == succeeded,
                 "gateway charged %ld, succeeded payments %ld",
                 sim_stat(st, "succeeded_charges"), succeeded);
        printf("check: simulator: %ld charges for %ld succeeded payments, 0 "
               "double charges; invariants empty\n",
               sim_stat(st, "succeeded_charges"), succeeded);
        json_decref(st);
        free(r);
        sc_messages_free(m, nm);
}
