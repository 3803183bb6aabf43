/* SPDX-License-Identifier: Apache-2.0 */
/*
 * ops/replay: one run of `chargeonce replay` (replay.h): the range
 * resolved against the topic, then the plan and the dry run's judgment,
 * or the rewind.
 */
#include "ops/replay.h"
#include "intent/intent.h"
#include "kafka/admin.h"
#include "kafka/range.h"
#include "ops/progress.h"
#include "payment/status.h"
#include "store/judge.h"
#include "store/store.h"
#include "util/timeutil.h"
#include "util/xalloc.h"

#include <inttypes.h>
#include <jansson.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define REPLAY_BATCH      500
#define REPLAY_TIMEOUT_MS 10000

/* A usage-level refusal (exit 2): "chargeonce replay: ..." on stderr. */
static int CO_PRINTF(1, 2) refuse_usage(const char *fmt, ...)
{
        va_list ap;

        fprintf(stderr, "chargeonce replay: ");
        va_start(ap, fmt);
        vfprintf(stderr, fmt, ap);
        va_end(ap);
        fputc('\n', stderr);
        return 2;
}

/* The resolved range: partitions and [from, to) of each. */
struct range {
        int n;
        int32_t *parts;
        int64_t *from, *to;
};

static void range_free(struct range *r)
{
        free(r->parts);
        free(r->from);
        free(r->to);
}

/* The partitions asked for, checked against the topic. 0, 1 or 2. */
static int pick_partitions(struct kadmin *ka, const char *topic,
                           const struct ops_replay_args *a, struct range *r,
                           struct log_ctx *lc)
{
        int32_t *all = NULL;
        int n_all    = 0;
        char err[512];

        if (kadmin_partitions(ka, topic, &all, &n_all, err, sizeof(err)) < 0) {
                log_error(lc, "%s", err);
                return 1;
        }
        if (a->n_parts == 0) {
                r->n     = n_all;
                r->parts = all;
        } else {
                r->n     = a->n_parts;
                r->parts = xcalloc((size_t)a->n_parts, sizeof(*r->parts));
                for (int i = 0; i < a->n_parts; i++) {
                        bool found = false;

                        for (int k = 0; k < n_all; k++)
                                found = found || all[k] == a->parts[i];
                        if (!found) {
                                free(all);
                                return refuse_usage(
                                    "--partition %d: topic %s has partitions "
                                    "0..%d",
                                    (int)a->parts[i], topic, n_all - 1);
                        }
                        r->parts[i] = a->parts[i];
                }
                free(all);
        }
        r->from = xcalloc((size_t)r->n, sizeof(*r->from));
        r->to   = xcalloc((size_t)r->n, sizeof(*r->to));
        return 0;
}

/*
 * Partitions and [from, to) of each: from clamped to the low watermark (a
 * start already deleted by retention begins at the oldest message), to the
 * high watermark now unless --to-*. 0, 1 or 2.
 */
static int resolve(struct kadmin *ka, const char *topic,
                   const struct ops_replay_args *a, struct range *r,
                   struct log_ctx *lc)
{
        int64_t *lo, *hi;
        char err[512];
        int rc;

        if ((rc = pick_partitions(ka, topic, a, r, lc)) != 0)
                return rc;
        lo = xcalloc((size_t)r->n, sizeof(*lo));
        hi = xcalloc((size_t)r->n, sizeof(*hi));
        rc = 1;
        for (int i = 0; i < r->n; i++)
                if (kadmin_watermarks(ka, topic, r->parts[i], &lo[i], &hi[i],
                                      err, sizeof(err)) < 0)
                        goto fail;
        if (a->from_time) {
                if (kadmin_offsets_for_time(ka, topic, r->parts, r->n, a->from,
                                            r->from, err, sizeof(err)) < 0)
                        goto fail;
        } else {
                for (int i = 0; i < r->n; i++) {
                        if (a->from > hi[i]) {
                                rc = refuse_usage(
                                    "--from-offset %" PRId64 " is past the "
                                    "end of partition %d (%" PRId64 ")",
                                    a->from, (int)r->parts[i], hi[i]);
                                goto out;
                        }
                        r->from[i] = a->from;
                }
        }
        if (a->has_to && a->to_time) {
                if (kadmin_offsets_for_time(ka, topic, r->parts, r->n, a->to,
                                            r->to, err, sizeof(err)) < 0)
                        goto fail;
        }
        for (int i = 0; i < r->n; i++) {
                if (r->from[i] < lo[i])
                        r->from[i] = lo[i];
                if (!a->has_to)
                        r->to[i] = hi[i];
                else if (!a->to_time)
                        r->to[i] = a->to;
                if (r->to[i] > hi[i])
                        r->to[i] = hi[i];
                if (r->to[i] < r->from[i])
                        r->to[i] = r->from[i];
        }
        rc = 0;
        goto out;
fail:
        log_error(lc, "%s", err);
out:
        free(lo);
        free(hi);
        return rc;
}

/* ------------------------------------------------------------------ */
/* dry run                                                              */

struct dry {
        struct store *st;
        struct judge_range *jr;
        struct replay_report rep;
        const struct range *r;
        size_t max_bytes;
        struct intent *in; /* REPLAY_BATCH decoded messages */
        struct judge_item *ji;
        int *slot; /* message k -> its judge item, or -1 */
};

static int part_index(const struct range *r, int32_t p)
{
        for (int i = 0; i < r->n; i++)
                if (r->parts[i] == p)
                        return i;
        return -1;
}

/* Judges msgs[0..n) in order: decode, one lookup statement, the range's
 * memory. 0 or -1 (logged). */
static int judge_batch(struct dry *d, rd_kafka_message_t **msgs, size_t n,
                       struct log_ctx *lc)
{
        size_t nj = 0;
        char err[512];

        for (size_t k = 0; k < n; k++) {
                struct intent *in     = &d->in[k];
                rd_kafka_message_t *m = msgs[k];

                intent_reset(in);
                d->slot[k] = -1;
                if (m->len + m->key_len > d->max_bytes) {
                        /* as the pipeline: before parsing */
                        in->verdict = INTENT_DLQ;
                        snprintf(in->reason, sizeof(in->reason),
                                 "message_too_large");
                        continue;
                }
                intent_parse(m->payload, m->len, in);
                if (in->verdict == INTENT_DLQ)
                        continue;
                memset(&d->ji[nj], 0, sizeof(d->ji[nj]));
                d->ji[nj].tenant_id = in->tenant_id;
                d->ji[nj].event_key = in->event_key;
                d->ji[nj].idem_key  = in->idempotency_key;
                d->ji[nj].has_hash  = in->has_hash;
                memcpy(d->ji[nj].request_hash, in->request_hash,
                       CRYPTO_SHA256_LEN);
                d->slot[k] = (int)nj++;
        }
        if (nj > 0 &&
            store_judge_batch(d->st, d->ji, nj, err, sizeof(err)) != STORE_OK) {
                log_error(lc, "%s", err);
                return -1;
        }
        for (size_t k = 0; k < n; k++) {
                const struct intent *in = &d->in[k];
                struct judge_facts f    = { 0 };
                struct judge_msg jm     = { 0 };
                enum payment_status ps;
                enum judge_category c;
                const char *why = NULL;
                int i           = part_index(d->r, msgs[k]->partition);

                f.verdict = in->verdict == INTENT_OK ? JUDGE_MSG_OK
                            : in->verdict == INTENT_REJECTED
                                ? JUDGE_MSG_REJECTED
                                : JUDGE_MSG_DLQ;
                if (d->slot[k] >= 0) {
                        const struct judge_item *j = &d->ji[d->slot[k]];

                        f.has_hash     = in->has_hash;
                        f.inbox_hit    = j->inbox_hit;
                        f.key          = j->key;
                        f.hash_equal   = j->hash_equal;
                        f.stored_valid = payment_status_parse(j->status, &ps) &&
                                         payment_status_is_result(ps);
                        jm.tenant_id = in->tenant_id;
                        jm.event_key = in->event_key;
                        jm.idem_key  = in->idempotency_key;
                        jm.request_hash =
                            in->has_hash ? in->request_hash : NULL;
                }
                c = payment_judge_range_next(d->jr, &jm, &f, &why);
                if (c == JUDGE_DEAD_LETTERED && in->verdict == INTENT_DLQ)
                        why = in->reason;
                else if (c == JUDGE_REJECTED)
                        why = in->reason;
                if (i >= 0)
                        ops_replay_report_add(
                            &d->rep, i, msgs[k]->offset, c, in->tenant_id,
                            in->idempotency_key, in->event_id, why);
        }
        return 0;
}

static uint64_t range_total(const struct range *r)
{
        uint64_t t = 0;

        for (int i = 0; i < r->n; i++)
                t += (uint64_t)(r->to[i] - r->from[i]);
        return t;
}

/* Reads and judges the whole range. 0 or 1. */
static int dry_read(struct dry *d, struct krange *kr, struct progress *pg,
                    struct log_ctx *lc)
{
        rd_kafka_message_t *msgs[REPLAY_BATCH];
        uint64_t total     = range_total(d->r);
        int64_t idle_since = time_mono_ms();
        bool done          = false;
        char err[512];

        while (!done) {
                int n = krange_poll(kr, msgs, REPLAY_BATCH, 100, &done, err,
                                    sizeof(err));
                int rc;

                if (n < 0) {
                        log_error(lc, "%s", err);
                        return 1;
                }
                if (n == 0 && !done &&
                    time_mono_ms() - idle_since > 3 * REPLAY_TIMEOUT_MS) {
                        log_error(lc, "no message for %d s: giving up",
                                  3 * REPLAY_TIMEOUT_MS / 1000);
                        return 1;
                }
                if (n > 0)
                        idle_since = time_mono_ms();
                rc = judge_batch(d, msgs, (size_t)n, lc);
                for (int k = 0; k < n; k++)
                        rd_kafka_message_destroy(msgs[k]);
                if (rc < 0)
                        return 1;
                progress_update(pg, "%" PRIu64 " / %" PRIu64 " messages",
                                d->rep.read, total);
        }
        progress_done(pg, "%" PRIu64 " / %" PRIu64 " messages judged",
                      d->rep.read, total);
        return 0;
}

/* ------------------------------------------------------------------ */
/* the plan: what --execute would change                                 */

/* The service group as it is now: its members (a rewind is refused while
 * it has any) and its committed offset of each partition of the range. */
struct plan {
        struct kadmin_group g;
        int64_t *committed; /* per partition of the range */
};

/* Reads the plan (read-only: the Admin API's Describe and List). 0 or 1. */
static int plan_read(struct kadmin *ka, const struct ops_replay_opts *o,
                     const struct range *r, struct plan *pl, struct log_ctx *lc)
{
        char err[512];

        pl->committed =
            xcalloc((size_t)(r->n ? r->n : 1), sizeof(*pl->committed));
        if (kadmin_group_describe(ka, o->group, &pl->g, err, sizeof(err)) < 0 ||
            kadmin_group_offsets(ka, o->group, o->topic, r->parts, r->n,
                                 pl->committed, err, sizeof(err)) < 0) {
                log_error(lc, "%s", err);
                return 1;
        }
        return 0;
}

static void print_offset(FILE *out, int64_t v)
{
        if (v == KADMIN_OFFSET_NONE)
                fprintf(out, "%12s", "none");
        else
                fprintf(out, "%12" PRId64, v);
}

static void plan_print(const struct ops_replay_opts *o, const struct range *r,
                       const struct plan *pl, FILE *out)
{
        fprintf(out,
                "plan: nothing was changed. With --execute, group %s would "
                "have its committed\noffsets on topic %s set as below "
                "(committed -> new):\n%9s %12s    %12s\n",
                o->group, o->topic, "partition", "committed", "new");
        for (int i = 0; i < r->n; i++) {
                fprintf(out, "%9d ", (int)r->parts[i]);
                print_offset(out, pl->committed[i]);
                fprintf(out, " -> ");
                print_offset(out, r->from[i]);
                fputc('\n', out);
        }
        if (pl->g.members)
                fprintf(out,
                        "group %s has %zu active member(s) (%s): --execute "
                        "would be refused until\nevery consumer of the "
                        "group is stopped (or give --wait).\n",
                        o->group, pl->g.members, pl->g.state);
        else
                fprintf(out, "group %s has no active member (%s).\n", o->group,
                        pl->g.state);
        fputc('\n', out);
}

static json_t *plan_json(const struct ops_replay_opts *o, const struct range *r,
                         const struct plan *pl)
{
        json_t *p = json_object(), *parts = json_array();

        json_object_set_new(p, "group", json_string(o->group));
        json_object_set_new(p, "group_state", json_string(pl->g.state));
        json_object_set_new(p, "group_members",
                            json_integer((json_int_t)pl->g.members));
        json_object_set_new(p, "changed", json_false());
        for (int i = 0; i < r->n; i++) {
                json_t *e = json_object();

                json_object_set_new(e, "partition", json_integer(r->parts[i]));
                json_object_set_new(e, "committed",
                                    pl->committed[i] == KADMIN_OFFSET_NONE
                                        ? json_null()
                                        : json_integer(pl->committed[i]));
                json_object_set_new(e, "new", json_integer(r->from[i]));
                json_array_append_new(parts, e);
        }
        json_object_set_new(p, "partitions", parts);
        return p;
}

/* Prints doc on stdout and frees it: 0, or 1 when it could not. */
static int dump_json(json_t *doc)
{
        int rc = json_dumpf(doc, stdout, JSON_INDENT(2) | JSON_SORT_KEYS);

        putchar('\n');
        json_decref(doc);
        return rc == 0 ? 0 : 1;
}

static int dry_run(const struct ops_replay_opts *o,
                   const struct ops_replay_args *a, const struct range *r,
                   const struct plan *pl, struct log_ctx *lc)
{
        char group[300], err[512];
        struct progress pg;
        struct krange *kr;
        struct dry d;
        int rc = 1;

        memset(&d, 0, sizeof(d));
        snprintf(group, sizeof(group), "%s.replay-dry-run.%d", o->group,
                 (int)getpid());
        if (!(d.st = store_connect(o->conninfo, err, sizeof(err)))) {
                log_error(lc, "%s", err);
                return 1;
        }
        if (!(kr = krange_new(o->kafka, group, o->topic, r->parts, r->from,
                              r->to, r->n, err, sizeof(err)))) {
                log_error(lc, "%s", err);
                store_destroy(d.st);
                return 1;
        }
        d.r         = r;
        d.max_bytes = o->max_message_bytes;
        d.jr        = payment_judge_range_new();
        d.in        = xcalloc(REPLAY_BATCH, sizeof(*d.in));
        d.ji        = xcalloc(REPLAY_BATCH, sizeof(*d.ji));
        d.slot      = xcalloc(REPLAY_BATCH, sizeof(*d.slot));
        for (int k = 0; k < REPLAY_BATCH; k++)
                intent_init(&d.in[k]);
        ops_replay_report_init(&d.rep, r->n, r->parts, r->from, r->to,
                               a->examples);
        d.rep.topic        = o->topic;
        d.rep.group        = o->group;
        d.rep.reader_group = group;
        progress_init(&pg, stderr, "replay", false);
        if (dry_read(&d, kr, &pg, lc) == 0) {
                if (a->json) {
                        json_t *doc = json_object();

                        ops_replay_report_json(&d.rep, doc);
                        json_object_set_new(doc, "plan", plan_json(o, r, pl));
                        rc = dump_json(doc);
                } else {
                        plan_print(o, r, pl, stdout);
                        ops_replay_report_print(&d.rep, stdout);
                        rc = 0;
                }
        }
        krange_destroy(kr);
        store_destroy(d.st);
        for (int k = 0; k < REPLAY_BATCH; k++)
                intent_reset(&d.in[k]);
        free(d.in);
        free(d.ji);
        free(d.slot);
        payment_judge_range_destroy(d.jr);
        ops_replay_report_free(&d.rep);
        return rc;
}

/* ------------------------------------------------------------------ */
/* rewind                                                               */

/* Until the group is empty (or refuses). 0 empty, 1 refused / error. */
static int wait_empty(struct kadmin *ka, const char *group,
                      const struct ops_replay_args *a, struct log_ctx *lc)
{
        int64_t start = time_mono_ms();
        struct kadmin_group g;
        struct progress pg;
        char err[512];

        progress_init(&pg, stderr, "replay", false);
        for (;;) {
                if (kadmin_group_describe(ka, group, &g, err, sizeof(err)) <
                    0) {
                        log_error(lc, "%s", err);
                        return 1;
                }
                if (g.members == 0) {
                        if (a->wait)
                                progress_done(&pg, "group %s is empty (%s)",
                                              group, g.state);
                        return 0;
                }
                if (!a->wait) {
                        fprintf(stderr,
                                "chargeonce replay: refused: group %s has %zu "
                                "active member(s) (%s); stop every consumer "
                                "of the group first, or give --wait "
                                "[SECONDS] to rewind as soon as it is "
                                "empty\n",
                                group, g.members, g.state);
                        return 1;
                }
                if (a->wait_s >= 0 &&
                    time_mono_ms() - start > a->wait_s * 1000) {
                        progress_done(&pg, "group %s still has %zu member(s)",
                                      group, g.members);
                        fprintf(stderr,
                                "chargeonce replay: refused: group %s still "
                                "has %zu active member(s) after --wait %" PRId64
                                " s\n",
                                group, g.members, a->wait_s);
                        return 1;
                }
                progress_update(&pg,
                                "waiting: group %s has %zu active member(s) "
                                "(%s), %" PRId64 " s",
                                group, g.members, g.state,
                                (time_mono_ms() - start) / 1000);
                usleep(500 * 1000);
        }
}

static int print_rewind(const struct ops_replay_opts *o, const struct range *r,
                        const int64_t *old, const int64_t *now, bool json)
{
        if (json) {
                json_t *doc = json_object(), *a = json_array();
                int rc;

                json_object_set_new(doc, "dry_run", json_false());
                json_object_set_new(doc, "changed", json_true());
                json_object_set_new(doc, "topic", json_string(o->topic));
                json_object_set_new(doc, "group", json_string(o->group));
                for (int i = 0; i < r->n; i++) {
                        json_t *p = json_object();

                        json_object_set_new(p, "partition",
                                            json_integer(r->parts[i]));
                        json_object_set_new(p, "old",
                                            old[i] == KADMIN_OFFSET_NONE
                                                ? json_null()
                                                : json_integer(old[i]));
                        json_object_set_new(p, "new", json_integer(now[i]));
                        json_array_append_new(a, p);
                }
                json_object_set_new(doc, "partitions", a);
                rc = json_dumpf(doc, stdout, JSON_INDENT(2) | JSON_SORT_KEYS);
                putchar('\n');
                json_decref(doc);
                return rc == 0 ? 0 : 1;
        }
        printf("changed: rewound group %s on topic %s (committed offset: "
               "old -> new)\n%9s %12s    %12s\n",
               o->group, o->topic, "partition", "old", "new");
        for (int i = 0; i < r->n; i++) {
                printf("%9d ", (int)r->parts[i]);
                print_offset(stdout, old[i]);
                printf(" -> ");
                print_offset(stdout, now[i]);
                putchar('\n');
        }
        return 0;
}

static int rewind_group(struct kadmin *ka, const struct ops_replay_opts *o,
                        const struct ops_replay_args *a, const struct range *r,
                        struct log_ctx *lc)
{
        const char *group = o->group, *topic = o->topic;
        int64_t *old = xcalloc((size_t)r->n, sizeof(*old));
        int64_t *now = xcalloc((size_t)r->n, sizeof(*now));
        char err[512];
        int rc = 1;

        if (wait_empty(ka, group, a, lc) != 0)
                goto done;
        if (kadmin_group_offsets(ka, group, topic, r->parts, r->n, old, err,
                                 sizeof(err)) < 0 ||
            kadmin_group_alter(ka, group, topic, r->parts, r->from, r->n, err,
                               sizeof(err)) < 0 ||
            kadmin_group_offsets(ka, group, topic, r->parts, r->n, now, err,
                                 sizeof(err)) < 0) {
                /* a member that joined after the check: the broker
                 * refuses, nothing was changed for that partition */
                log_error(lc, "%s", err);
                goto done;
        }
        rc = print_rewind(o, r, old, now, a->json);
done:
        free(old);
        free(now);
        return rc;
}

int ops_replay_run(const struct ops_replay_opts *o,
                   const struct ops_replay_args *a)
{
        struct log_ctx lc = LOG_CTX_INIT;
        struct range r    = { 0 };
        struct plan pl;
        struct kadmin *ka;
        char err[512];
        int rc;

        lc.component = "replay";
        memset(&pl, 0, sizeof(pl));
        if (!(ka = kadmin_new(o->kafka, REPLAY_TIMEOUT_MS, err, sizeof(err))))
                return refuse_usage("%s", err);
        rc = resolve(ka, o->topic, a, &r, &lc);
        if (rc == 0 && a->execute)
                rc = rewind_group(ka, o, a, &r, &lc);
        else if (rc == 0 && (rc = plan_read(ka, o, &r, &pl, &lc)) == 0)
                rc = dry_run(o, a, &r, &pl, &lc);
        free(pl.committed);
        range_free(&r);
        kadmin_destroy(ka);
        return rc;
}
