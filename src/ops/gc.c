/* SPDX-License-Identifier: Apache-2.0 */
/*
 * ops/gc: one run of `chargeonce gc` (gc.h): the retention rule, the
 * batch loop, the report. The SQL is store/gc.c's, the rule
 * payment/key_retention.c's.
 */
#include "ops/gc.h"
#include "kafka/topic_config.h"
#include "ops/progress.h"
#include "payment/key_retention.h"
#include "store/gc.h"
#include "store/store.h"
#include "util/timeutil.h"

#include <errno.h>
#include <inttypes.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* How long the broker may take to describe the intents topic. */
#define GC_DESCRIBE_TIMEOUT_MS 10000

/* What the report says. */
struct gc_report {
        const char *topic;
        int64_t key_ms, topic_ms, gateway_ms;
        int64_t run_id; /* 0: dry run */
        struct store_gc_counts done;
        int64_t late; /* of done.inbox: copies recorded after a tombstone */
        struct store_gc_left left;
        int64_t batches, longest_ms;
        bool interrupted;
};

/* The retention rule: 0 go on, 1 the broker could not say, 2 refused. */
static int check_retention(const struct ops_gc_opts *o, struct gc_report *r)
{
        struct kafka_topic_retention tr;
        char err[1024];
        int rc;

        rc = kafka_topic_retention_get(
            o->kafka, r->topic, GC_DESCRIBE_TIMEOUT_MS, &tr, err, sizeof(err));
        if (rc < 0) {
                fprintf(stderr,
                        "chargeonce gc: cannot read the retention of the "
                        "intents topic: %s; nothing was done\n",
                        err);
                return 1;
        }
        r->topic_ms = tr.retention_ms;
        if (payment_key_retention_check(r->key_ms, r->topic_ms, r->topic,
                                        r->gateway_ms, err, sizeof(err)) < 0) {
                fprintf(stderr,
                        "chargeonce gc: refused: %s; nothing was done\n", err);
                return 2;
        }
        return 0;
}

static bool stopped(const atomic_int *stop)
{
        return stop && atomic_load(stop) != 0;
}

/* Sleeps ms, cut short by a signal (which interrupts nanosleep). */
static void sleep_ms(int64_t ms, const atomic_int *stop)
{
        struct timespec ts = { (time_t)(ms / 1000),
                               (long)(ms % 1000) * 1000000L };
        while (nanosleep(&ts, &ts) < 0 && errno == EINTR && !stopped(stop))
                ;
}

/*
 * One batch of the keys (late false: up to n keys into *c) or of the late
 * copies (late true: up to n rows, counted in c->inbox), timed into r.
 * 0 done, 1 failed or stopped.
 */
static int one_batch(struct store *st, struct gc_report *r, bool late, int n,
                     struct store_gc_counts *c, const atomic_int *stop)
{
        char err[1024];
        int64_t t0, dt;
        int rc;

        memset(c, 0, sizeof(*c));
        if (stopped(stop)) {
                r->interrupted = true;
                return 1;
        }
        t0 = time_mono_ms();
        rc = late ? store_gc_late_batch(st, r->run_id, n, c, err, sizeof(err))
                  : store_gc_batch(st, r->run_id, r->key_ms, n, c, err,
                                   sizeof(err));
        if (rc != STORE_OK) {
                fprintf(stderr, "chargeonce gc: %s\n", err);
                return 1;
        }
        dt = time_mono_ms() - t0;
        r->batches++;
        if (dt > r->longest_ms)
                r->longest_ms = dt;
        return 0;
}

/*
 * The inbox's late copies, after the keys: batches until none is left.
 * 0 done, 1 failed or stopped (the run then records no late_through: the
 * next one covers this window again).
 */
static int run_late(struct store *st, const struct ops_gc_opts *o,
                    struct gc_report *r, struct progress *pg,
                    const atomic_int *stop)
{
        for (;;) {
                struct store_gc_counts c;

                if (one_batch(st, r, true, (int)o->batch_size, &c, stop))
                        return 1;
                r->late += c.inbox;
                r->done.inbox += c.inbox;
                r->done.outbox += c.outbox;
                progress_update(
                    pg, "%" PRId64 " batches, %" PRId64 " late copies deleted",
                    r->batches, r->late);
                if (c.inbox < o->batch_size)
                        return 0;
                if (o->batch_pause_ms > 0)
                        sleep_ms(o->batch_pause_ms, stop);
        }
}

/* The batch loop: 0 done, 1 failed or stopped (what was done is in r). */
static int run_batches(struct store *st, const struct ops_gc_opts *o,
                       const struct ops_gc_args *a, struct gc_report *r,
                       struct progress *pg, const atomic_int *stop)
{
        int64_t batch = o->batch_size;
        int64_t pause = o->batch_pause_ms;
        int64_t left  = a->limit > 0 ? a->limit : INT64_MAX;
        char err[1024];

        if (store_gc_begin(st, r->key_ms, &r->run_id, err, sizeof(err)) !=
            STORE_OK) {
                fprintf(stderr, "chargeonce gc: %s\n", err);
                return 1;
        }
        while (left > 0) {
                struct store_gc_counts c;
                int n = (int)(batch < left ? batch : left);

                if (one_batch(st, r, false, n, &c, stop))
                        return 1;
                r->done.tombstones += c.tombstones;
                r->done.inbox += c.inbox;
                r->done.evidence += c.evidence;
                r->done.outbox += c.outbox;
                left -= c.tombstones;
                progress_update(pg,
                                "%" PRId64 " batches, %" PRId64
                                " tombstones, %" PRId64 " rows deleted",
                                r->batches, r->done.tombstones,
                                r->done.inbox + r->done.evidence +
                                    r->done.outbox);
                /* nothing left, or only keys someone else holds now */
                if (c.tombstones == 0)
                        break;
                if (left > 0 && pause > 0)
                        sleep_ms(pause, stop);
        }
        if (run_late(st, o, r, pg, stop) != 0)
                return 1;
        if (store_gc_end(st, r->run_id, true, err, sizeof(err)) != STORE_OK) {
                fprintf(stderr, "chargeonce gc: %s\n", err);
                return 1;
        }
        return 0;
}

static void report_json(const struct ops_gc_args *a, const struct gc_report *r)
{
        json_t *d = json_object(), *del = json_object(), *left = json_object();
        char *s;

        json_object_set_new(d, "command", json_string("gc"));
        json_object_set_new(d, "dry_run", json_boolean(a->dry_run));
        json_object_set_new(d, "run_id",
                            r->run_id ? json_integer(r->run_id) : json_null());
        json_object_set_new(d, "limit",
                            a->limit ? json_integer(a->limit) : json_null());
        json_object_set_new(d, "key_retention_ms", json_integer(r->key_ms));
        json_object_set_new(d, "topic", json_string(r->topic));
        json_object_set_new(d, "topic_retention_ms", json_integer(r->topic_ms));
        json_object_set_new(d, "gateway_key_retention_ms",
                            json_integer(r->gateway_ms));
        json_object_set_new(d, "tombstones", json_integer(r->done.tombstones));
        json_object_set_new(del, "inbox", json_integer(r->done.inbox));
        json_object_set_new(del, "inbox_late_copies", json_integer(r->late));
        json_object_set_new(del, "gateway_evidence",
                            json_integer(r->done.evidence));
        json_object_set_new(del, "outbox", json_integer(r->done.outbox));
        json_object_set_new(d, "deleted", del);
        json_object_set_new(left, "processing",
                            json_integer(r->left.processing));
        json_object_set_new(left, "review", json_integer(r->left.review));
        json_object_set_new(left, "unpublished", json_integer(r->left.held));
        json_object_set_new(d, "left", left);
        json_object_set_new(d, "batches", json_integer(r->batches));
        json_object_set_new(d, "longest_batch_ms", json_integer(r->longest_ms));
        json_object_set_new(d, "interrupted", json_boolean(r->interrupted));
        s = json_dumps(d, JSON_COMPACT);
        printf("%s\n", s ? s : "{}");
        free(s);
        json_decref(d);
}

static void report_text(const struct ops_gc_args *a, const struct gc_report *r)
{
        if (a->dry_run)
                printf("gc --dry-run: would make %" PRId64
                       " key(s) tombstones and delete %" PRId64
                       " inbox event(s) (%" PRId64 " late copies), %" PRId64
                       " gateway evidence row(s), %" PRId64
                       " published result(s); nothing was written\n",
                       r->done.tombstones, r->done.inbox, r->late,
                       r->done.evidence, r->done.outbox);
        else
                printf("gc run %" PRId64 "%s: %" PRId64
                       " key(s) made tombstones in %" PRId64
                       " batch(es) (longest %" PRId64 " ms); deleted %" PRId64
                       " inbox event(s) (%" PRId64 " late copies), %" PRId64
                       " gateway evidence row(s), %" PRId64
                       " published result(s)\n",
                       r->run_id, r->interrupted ? " (interrupted)" : "",
                       r->done.tombstones, r->batches, r->longest_ms,
                       r->done.inbox, r->late, r->done.evidence,
                       r->done.outbox);
        printf("expired keys left: %" PRId64 " processing, %" PRId64
               " in review, %" PRId64 " with a result not yet published\n",
               r->left.processing, r->left.review, r->left.held);
}

int ops_gc_run(const struct ops_gc_opts *o, const struct ops_gc_args *a,
               const atomic_int *stop)
{
        struct gc_report r;
        struct store_gc_counts late;
        struct progress pg;
        struct store *st;
        char err[1024];
        int rc;

        memset(&r, 0, sizeof(r));
        r.topic      = o->topic;
        r.key_ms     = o->key_retention_ms;
        r.gateway_ms = o->gateway_key_retention_ms;
        if ((rc = check_retention(o, &r)) != 0)
                return rc;
        if (!(st = store_connect(o->conninfo, err, sizeof(err)))) {
                fprintf(stderr, "chargeonce gc: %s\n", err);
                return 1;
        }
        progress_init(&pg, stderr, "gc", false);
        if (a->dry_run) {
                rc     = store_gc_count(st, r.key_ms, a->limit, &r.done, err,
                                        sizeof(err)) == STORE_OK &&
                             store_gc_late_count(st, r.key_ms, &late, err,
                                                     sizeof(err)) == STORE_OK
                             ? 0
                             : 1;
                r.late = late.inbox;
                r.done.inbox += late.inbox;
                r.done.outbox += late.outbox;
                if (rc)
                        fprintf(stderr, "chargeonce gc: %s\n", err);
        } else {
                rc = run_batches(st, o, a, &r, &pg, stop);
        }
        if (rc == 0 || r.run_id) {
                if (store_gc_left(st, r.key_ms, &r.left, err, sizeof(err)) !=
                    STORE_OK) {
                        fprintf(stderr, "chargeonce gc: %s\n", err);
                        rc = 1;
                }
                if (!a->dry_run)
                        progress_done(&pg,
                                      "%" PRId64 " batches, %" PRId64
                                      " tombstones%s",
                                      r.batches, r.done.tombstones,
                                      r.interrupted ? ", interrupted" : "");
                if (a->json)
                        report_json(a, &r);
                else
                        report_text(a, &r);
        }
        store_destroy(st);
        return rc;
}
