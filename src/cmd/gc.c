/*
 * cmd/gc: `chargeonce gc [--dry-run] [--json] [--limit N]`. Expired
 * idempotency keys become tombstones and their bulky rows go (store/gc.h),
 * in batches of gc.batch_size keys, each one short transaction, with
 * gc.batch_pause between two. Wiring only: arguments, the retention
 * checks, the batch loop, the report.
 *
 * Before anything is read or written, the retention rule
 * (payment/key_retention.h): idempotency.retention must be at least the
 * intents topic's retention.ms (read from the broker) and
 * gateway.key_retention, else exit 2 naming both numbers. Exit 0 done, 1
 * runtime failure (database or broker unreachable, or stopped by a
 * signal between two batches: what was done is committed and reported),
 * 2 usage error or refusal.
 *
 * Must never: remove anything in --dry-run, print an idempotency key,
 * keep a transaction open across the pause, or go on after a refusal.
 */
#include "cmd/cmd.h"
#include "cmd/opts.h"
#include "cmd/progress.h"
#include "kafka/topic_config.h"
#include "payment/key_retention.h"
#include "store/gc.h"
#include "store/store.h"
#include "util/config.h"
#include "util/timeutil.h"

#include <errno.h>
#include <inttypes.h>
#include <jansson.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* How long the broker may take to describe the intents topic. */
#define GC_DESCRIBE_TIMEOUT_MS 10000

static volatile sig_atomic_t gc_stop;

static void on_signal(int sig)
{
        (void)sig;
        gc_stop = 1;
}

struct gc_args {
        bool dry_run, json;
        int64_t limit; /* 0: none */
};

/* What the report says. */
struct gc_report {
        const char *topic;
        int64_t key_ms, topic_ms, gateway_ms;
        int64_t run_id; /* 0: dry run */
        struct store_gc_counts done;
        struct store_gc_left left;
        int64_t batches, longest_ms;
        bool interrupted;
};

static void usage(FILE *out)
{
        fprintf(out,
                "usage: chargeonce gc [--dry-run] [--json] [--limit N]\n"
                "Idempotency keys older than idempotency.retention (and "
                "past their expires_at),\nfinal with a succeeded or failed "
                "payment, become tombstones: tenant, key,\nrequest hash, "
                "payment id and outcome stay (a later copy of the intent is "
                "still\nanswered with its stored outcome, never charged "
                "again); the stored result and\nerror message, the "
                "payment's payment method, the key's inbox events, the\n"
                "payment's gateway evidence and its published results go. "
                "Keys in review,\nstill processing, or with a result not yet "
                "published are left (and counted).\nBatches of gc.batch_size "
                "keys, one short transaction each, gc.batch_pause\napart; a "
                "progress line on stderr, the summary on stdout.\n"
                "  --dry-run   count what would be done; write nothing\n"
                "  --json      the summary as one JSON document\n"
                "  --limit N   make at most N tombstones in this run\n"
                "Refuses (exit 2, nothing done) when idempotency.retention "
                "is shorter than the\nintents topic's retention.ms (read from "
                "the broker; -1 or a compact-only\ntopic keeps messages "
                "forever: always refused) or than "
                "gateway.key_retention.\nExit 0 done; 1 runtime failure "
                "(database or broker unreachable, or stopped\nby SIGINT or "
                "SIGTERM between two batches: the batches done are kept "
                "and\nreported); 2 usage error or refusal.\n");
}

/* 0 to go on, 2 on a usage error, -1 after --help (exit 0). */
static int parse_args(int argc, char **argv, struct gc_args *a)
{
        memset(a, 0, sizeof(*a));
        for (int i = 1; i < argc; i++) {
                const char *s = argv[i];

                if (!strcmp(s, "--help") || !strcmp(s, "-h")) {
                        usage(stdout);
                        return -1;
                } else if (!strcmp(s, "--dry-run")) {
                        a->dry_run = true;
                } else if (!strcmp(s, "--json")) {
                        a->json = true;
                } else if (!strcmp(s, "--limit")) {
                        char *end = NULL;
                        long long v;

                        if (i + 1 == argc)
                                return cmd_usage_error("gc", "--limit needs N");
                        errno = 0;
                        v     = strtoll(argv[++i], &end, 10);
                        if (errno || !end || *end || v <= 0)
                                return cmd_usage_error(
                                    "gc",
                                    "--limit: \"%s\" is not a positive "
                                    "integer",
                                    argv[i]);
                        a->limit = (int64_t)v;
                } else {
                        return cmd_usage_error("gc", "unexpected argument %s",
                                               s);
                }
        }
        return 0;
}

/* The retention rule: 0 go on, 1 the broker could not say, 2 refused. */
static int check_retention(const struct config *cfg, struct gc_report *r)
{
        struct cmd_opts o;
        struct kafka_topic_retention tr;
        char err[1024];
        int rc;

        cmd_opts_fill(&o, cfg);
        rc = kafka_topic_retention_get(
            &o.kafka, r->topic, GC_DESCRIBE_TIMEOUT_MS, &tr, err, sizeof(err));
        cmd_opts_free(&o);
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

static void sleep_ms(int64_t ms)
{
        struct timespec ts = { (time_t)(ms / 1000),
                               (long)(ms % 1000) * 1000000L };
        while (nanosleep(&ts, &ts) < 0 && errno == EINTR && !gc_stop)
                ;
}

/* The batch loop: 0 done, 1 failed or stopped (what was done is in r). */
static int run_batches(struct store *st, const struct config *cfg,
                       const struct gc_args *a, struct gc_report *r,
                       struct progress *pg)
{
        int64_t batch = config_int(cfg, "gc.batch_size");
        int64_t pause = config_ms(cfg, "gc.batch_pause");
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
                int64_t t0, dt;

                if (gc_stop) {
                        r->interrupted = true;
                        return 1;
                }
                t0 = time_mono_ms();
                if (store_gc_batch(st, r->run_id, r->key_ms, n, &c, err,
                                   sizeof(err)) != STORE_OK) {
                        fprintf(stderr, "chargeonce gc: %s\n", err);
                        return 1;
                }
                dt = time_mono_ms() - t0;
                r->batches++;
                if (dt > r->longest_ms)
                        r->longest_ms = dt;
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
                        sleep_ms(pause);
        }
        if (store_gc_end(st, r->run_id, err, sizeof(err)) != STORE_OK) {
                fprintf(stderr, "chargeonce gc: %s\n", err);
                return 1;
        }
        return 0;
}

static void report_json(const struct gc_args *a, const struct gc_report *r)
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

static void report_text(const struct gc_args *a, const struct gc_report *r)
{
        if (a->dry_run)
                printf("gc --dry-run: would make %" PRId64
                       " key(s) tombstones and delete %" PRId64
                       " inbox event(s), %" PRId64
                       " gateway evidence row(s), %" PRId64
                       " published result(s); nothing was written\n",
                       r->done.tombstones, r->done.inbox, r->done.evidence,
                       r->done.outbox);
        else
                printf("gc run %" PRId64 "%s: %" PRId64
                       " key(s) made tombstones in %" PRId64
                       " batch(es) (longest %" PRId64 " ms); deleted %" PRId64
                       " inbox event(s), %" PRId64
                       " gateway evidence row(s), %" PRId64
                       " published result(s)\n",
                       r->run_id, r->interrupted ? " (interrupted)" : "",
                       r->done.tombstones, r->batches, r->longest_ms,
                       r->done.inbox, r->done.evidence, r->done.outbox);
        printf("expired keys left: %" PRId64 " processing, %" PRId64
               " in review, %" PRId64 " with a result not yet published\n",
               r->left.processing, r->left.review, r->left.held);
}

int cmd_gc(struct config *cfg, int argc, char **argv)
{
        struct gc_args a;
        struct gc_report r;
        struct progress pg;
        struct store *st;
        struct sigaction sa;
        char err[1024];
        int rc;

        if ((rc = parse_args(argc, argv, &a)) != 0)
                return rc < 0 ? 0 : rc;
        memset(&r, 0, sizeof(r));
        r.topic      = config_str(cfg, "topic.intents");
        r.key_ms     = config_ms(cfg, "idempotency.retention");
        r.gateway_ms = config_ms(cfg, "gateway.key_retention");
        if ((rc = check_retention(cfg, &r)) != 0)
                return rc;
        if (!(st = store_connect(config_str(cfg, "db.conninfo"), err,
                                 sizeof(err)))) {
                fprintf(stderr, "chargeonce gc: %s\n", err);
                return 1;
        }
        memset(&sa, 0, sizeof(sa));
        sa.sa_handler = on_signal;
        sigaction(SIGINT, &sa, NULL);
        sigaction(SIGTERM, &sa, NULL);
        progress_init(&pg, stderr, "gc", false);
        if (a.dry_run) {
                rc = store_gc_count(st, r.key_ms, a.limit, &r.done, err,
                                    sizeof(err)) == STORE_OK
                         ? 0
                         : 1;
                if (rc)
                        fprintf(stderr, "chargeonce gc: %s\n", err);
        } else {
                rc = run_batches(st, cfg, &a, &r, &pg);
        }
        if (rc == 0 || r.run_id) {
                if (store_gc_left(st, r.key_ms, &r.left, err, sizeof(err)) !=
                    STORE_OK) {
                        fprintf(stderr, "chargeonce gc: %s\n", err);
                        rc = 1;
                }
                if (!a.dry_run)
                        progress_done(&pg,
                                      "%" PRId64 " batches, %" PRId64
                                      " tombstones%s",
                                      r.batches, r.done.tombstones,
                                      r.interrupted ? ", interrupted" : "");
                if (a.json)
                        report_json(&a, &r);
                else
                        report_text(&a, &r);
        }
        store_destroy(st);
        return rc;
}
