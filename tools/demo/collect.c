/* SPDX-License-Identifier: Apache-2.0 */
/*
 * collect: reads what came out — the result topic (deduplicated by the
 * result's event_id), the DLQ (deduplicated by the source partition and
 * offset), the simulator's ground truth and the database — and either
 * waits with a progress line (`wait`) or prints the table (`report`).
 * Nothing here trusts chargeonce's own counters.
 */
#include "demo.h"

#include <curl/curl.h>
#include <jansson.h>
#include <librdkafka/rdkafka.h>
#include <libpq-fe.h>
#include <errno.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

enum final { F_NONE = -1, F_SUCCEEDED, F_FAILED, F_REJECTED, F_REVIEW };

struct ev_ref {
        const char *ev;
        long msg;
};

struct tally {
        const struct workload *w;
        struct ev_ref *idx; /* event ids of the workload, sorted */
        int8_t *final;      /* per intent: enum final */
        char (*final_ev)[37];
        uint8_t *conflict_answered; /* per message */
        /* result event ids seen (open addressing) */
        char (*seen)[37];
        size_t seen_cap, seen_n;
        size_t result_msgs; /* result messages read, with re-publishes */
        size_t replayed, extra, unexpected;
        size_t count[4]; /* intents per final status */
        size_t answered, conflicts;
        /* DLQ: (partition, offset) of the source message */
        int64_t *dlq_src;
        size_t dlq_n, dlq_cap, dlq_msgs;
};

static int cmp_ref(const void *a, const void *b)
{
        return strcmp(((const struct ev_ref *)a)->ev,
                      ((const struct ev_ref *)b)->ev);
}

static void *xcalloc(size_t n, size_t sz)
{
        void *p = calloc(n ? n : 1, sz);
        if (!p) {
                fprintf(stderr, "chargeonce-demo: out of memory\n");
                exit(1);
        }
        return p;
}

static void tally_init(struct tally *t, const struct workload *w)
{
        memset(t, 0, sizeof(*t));
        t->w   = w;
        t->idx = xcalloc(w->n_msgs, sizeof(*t->idx));
        for (size_t i = 0; i < w->n_msgs; i++)
                t->idx[i] = (struct ev_ref){ w->msgs[i].event_id, (long)i };
        qsort(t->idx, w->n_msgs, sizeof(*t->idx), cmp_ref);
        t->final    = xcalloc(w->n_intents, 1);
        t->final_ev = xcalloc(w->n_intents, sizeof(*t->final_ev));
        memset(t->final, F_NONE, w->n_intents ? w->n_intents : 1);
        t->conflict_answered = xcalloc(w->n_msgs, 1);
        t->seen_cap          = 1024;
        while (t->seen_cap < 4 * w->n_msgs)
                t->seen_cap *= 2;
        t->seen = xcalloc(t->seen_cap, sizeof(*t->seen));
}

static void tally_free(struct tally *t)
{
        free(t->idx);
        free(t->final);
        free(t->final_ev);
        free(t->conflict_answered);
        free(t->seen);
        free(t->dlq_src);
}

static long find_msg(const struct tally *t, const char *ev)
{
        struct ev_ref k = { ev, 0 }, *r;
        r = bsearch(&k, t->idx, t->w->n_msgs, sizeof(*t->idx), cmp_ref);
        return r ? r->msg : -1;
}

static uint64_t hash_str(const char *s)
{
        uint64_t h = 1469598103934665603ULL;
        while (*s)
                h = (h ^ (unsigned char)*s++) * 1099511628211ULL;
        return h;
}

/* True if ev was not seen before (and remembers it). */
static bool first_sight(struct tally *t, const char *ev)
{
        size_t i;

        if (2 * (t->seen_n + 1) > t->seen_cap) {
                size_t ocap    = t->seen_cap;
                char(*old)[37] = t->seen;
                t->seen_cap *= 2;
                t->seen   = xcalloc(t->seen_cap, sizeof(*t->seen));
                t->seen_n = 0;
                for (i = 0; i < ocap; i++)
                        if (old[i][0])
                                (void)first_sight(t, old[i]);
                free(old);
        }
        for (i = hash_str(ev) & (t->seen_cap - 1); t->seen[i][0];
             i = (i + 1) & (t->seen_cap - 1))
                if (!strcmp(t->seen[i], ev))
                        return false;
        snprintf(t->seen[i], sizeof(t->seen[i]), "%s", ev);
        t->seen_n++;
        return true;
}

static void on_result(struct tally *t, const char *payload, size_t len)
{
        json_error_t e;
        json_t *o = json_loadb(payload, len, 0, &e);
        const char *ev, *iev, *status;
        long mi;
        int intent, f;

        t->result_msgs++;
        ev     = json_string_value(json_object_get(o, "event_id"));
        iev    = json_string_value(json_object_get(o, "intent_event_id"));
        status = json_string_value(json_object_get(o, "status"));
        if (!o || !ev || !iev || !status || strlen(ev) > 36) {
                t->unexpected++;
                json_decref(o);
                return;
        }
        if (!first_sight(t, ev)) { /* a re-publish of the same row */
                json_decref(o);
                return;
        }
        mi = find_msg(t, iev);
        if (mi < 0) {
                t->unexpected++;
                json_decref(o);
                return;
        }
        if (json_is_true(json_object_get(o, "replayed"))) {
                t->replayed++;
                json_decref(o);
                return;
        }
        intent = t->w->msgs[mi].intent;
        if (!strcmp(status, "conflict")) {
                if (!t->conflict_answered[mi] &&
                    t->w->msgs[mi].kind == MK_REUSE)
                        t->conflicts++;
                else
                        t->unexpected++;
                t->conflict_answered[mi] = 1;
                json_decref(o);
                return;
        }
        if (!strcmp(status, "succeeded"))
                f = F_SUCCEEDED;
        else if (!strcmp(status, "failed"))
                f = F_FAILED;
        else if (!strcmp(status, "rejected"))
                f = F_REJECTED;
        else if (!strcmp(status, "review"))
                f = F_REVIEW;
        else
                f = F_NONE;
        if (f == F_NONE || intent < 0 || t->w->msgs[mi].kind == MK_REUSE) {
                t->unexpected++;
        } else if (t->final[intent] == F_NONE) {
                t->final[intent] = (int8_t)f;
                snprintf(t->final_ev[intent], 37, "%s", ev);
                t->count[f]++;
                t->answered++;
        } else {
                /* a second final result of one intent, with its own
                 * event id: the contract allows exactly one */
                t->extra++;
        }
        json_decref(o);
}

static bool header_i64(rd_kafka_headers_t *h, const char *name, int64_t *v)
{
        const void *val;
        size_t n;
        char buf[32];

        if (!h || rd_kafka_header_get_last(h, name, &val, &n) || !n ||
            n >= sizeof(buf))
                return false;
        memcpy(buf, val, n);
        buf[n] = '\0';
        *v     = strtoll(buf, NULL, 10);
        return true;
}

static void on_dlq(struct tally *t, rd_kafka_message_t *m)
{
        rd_kafka_headers_t *h = NULL;
        int64_t part = -1, off = -1, k;

        t->dlq_msgs++;
        if (rd_kafka_message_headers(m, &h) ||
            !header_i64(h, "dlq-source-partition", &part) ||
            !header_i64(h, "dlq-source-offset", &off)) {
                t->unexpected++;
                return;
        }
        k = part * (INT64_C(1) << 40) + off;
        for (size_t i = 0; i < t->dlq_n; i++)
                if (t->dlq_src[i] == k)
                        return;
        if (t->dlq_n == t->dlq_cap) {
                t->dlq_cap = t->dlq_cap ? t->dlq_cap * 2 : 64;
                t->dlq_src = realloc(t->dlq_src, t->dlq_cap * sizeof(k));
                if (!t->dlq_src) {
                        fprintf(stderr, "chargeonce-demo: out of memory\n");
                        exit(1);
                }
        }
        t->dlq_src[t->dlq_n++] = k;
}

/* ------------------------------------------------------------------ */
/* a reader of every partition of the result and DLQ topics             */

struct reader {
        rd_kafka_t *rk;
        PGconn *ob; /* from_outbox: the database */
        long long ob_last;
        const char *results, *dlq;
        rd_kafka_topic_partition_list_t *parts; /* .offset: next to read */
        int64_t *hwm;
};

static int partitions_of(rd_kafka_t *rk, const char *topic)
{
        const struct rd_kafka_metadata *md = NULL;
        rd_kafka_topic_t *rkt = rd_kafka_topic_new(rk, topic, NULL);
        int n                 = -1;

        for (int tries = 0; tries < 20 && n < 0; tries++) {
                if (rd_kafka_metadata(rk, 0, rkt, &md, 5000) == 0) {
                        if (md->topic_cnt == 1 && !md->topics[0].err &&
                            md->topics[0].partition_cnt > 0)
                                n = md->topics[0].partition_cnt;
                        rd_kafka_metadata_destroy(md);
                }
                if (n < 0)
                        sleep_s(0.25);
        }
        rd_kafka_topic_destroy(rkt);
        return n;
}

static int reader_open(struct reader *r, const struct col_opts *o)
{
        char err[512], group[64];
        rd_kafka_conf_t *conf = rd_kafka_conf_new();
        const char *topics[2] = { o->dlq, o->results };
        int ntopics           = o->from_outbox ? 1 : 2;

        memset(r, 0, sizeof(*r));
        r->results = o->results;
        r->dlq     = o->dlq;
        snprintf(group, sizeof(group), "chargeonce-demo-reader-%d",
                 (int)getpid());
        if (rd_kafka_conf_set(conf, "bootstrap.servers", o->bootstrap, err,
                              sizeof(err)) ||
            rd_kafka_conf_set(conf, "group.id", group, err, sizeof(err)) ||
            rd_kafka_conf_set(conf, "enable.auto.commit", "false", err,
                              sizeof(err)) ||
            rd_kafka_conf_set(conf, "isolation.level", "read_uncommitted", err,
                              sizeof(err))) {
                fprintf(stderr, "chargeonce-demo: %s\n", err);
                rd_kafka_conf_destroy(conf);
                return -1;
        }
        if (!(r->rk =
                  rd_kafka_new(RD_KAFKA_CONSUMER, conf, err, sizeof(err)))) {
                fprintf(stderr, "chargeonce-demo: consumer: %s\n", err);
                return -1;
        }
        rd_kafka_poll_set_consumer(r->rk);
        r->parts = rd_kafka_topic_partition_list_new(16);
        if (o->from_outbox) {
                r->ob = PQconnectdb(o->conninfo ? o->conninfo : "");
                if (PQstatus(r->ob) != CONNECTION_OK) {
                        fprintf(stderr, "chargeonce-demo: database: %s",
                                PQerrorMessage(r->ob));
                        return -1;
                }
        }
        for (int t = 0; t < ntopics; t++) {
                int n = partitions_of(r->rk, topics[t]);
                if (n < 0) {
                        fprintf(stderr, "chargeonce-demo: no topic %s\n",
                                topics[t]);
                        return -1;
                }
                for (int p = 0; p < n; p++)
                        rd_kafka_topic_partition_list_add(r->parts, topics[t],
                                                          p)
                            ->offset = RD_KAFKA_OFFSET_BEGINNING;
        }
        r->hwm = xcalloc((size_t)r->parts->cnt, sizeof(*r->hwm));
        if (rd_kafka_assign(r->rk, r->parts)) {
                fprintf(stderr, "chargeonce-demo: assign failed\n");
                return -1;
        }
        for (int i = 0; i < r->parts->cnt; i++)
                r->parts->elems[i].offset = 0;
        return 0;
}

static void reader_close(struct reader *r)
{
        PQfinish(r->ob);
        if (r->rk) {
                rd_kafka_consumer_close(r->rk);
                rd_kafka_destroy(r->rk);
        }
        if (r->parts)
                rd_kafka_topic_partition_list_destroy(r->parts);
        free(r->hwm);
}

/* Reads new outbox rows; returns how many, or -1. */
static int outbox_poll(struct reader *r, struct tally *t)
{
        char sql[160];
        PGresult *res;
        int n;

        snprintf(sql, sizeof(sql),
                 "SELECT id, payload FROM outbox WHERE id > %lld ORDER BY id "
                 "LIMIT 5000",
                 r->ob_last);
        res = PQexec(r->ob, sql);
        if (PQresultStatus(res) != PGRES_TUPLES_OK) {
                fprintf(stderr, "chargeonce-demo: outbox: %s",
                        PQresultErrorMessage(res));
                PQclear(res);
                return -1;
        }
        n = PQntuples(res);
        for (int i = 0; i < n; i++) {
                r->ob_last = atoll(PQgetvalue(res, i, 0));
                on_result(t, PQgetvalue(res, i, 1),
                          (size_t)PQgetlength(res, i, 1));
        }
        PQclear(res);
        return n;
}

/* Reads what is there for up to ms. */
static void reader_poll(struct reader *r, struct tally *t, int ms)
{
        double end = now_s() + ms / 1000.0;

        if (r->ob)
                while (outbox_poll(r, t) == 5000)
                        ;

        do {
                rd_kafka_message_t *m = rd_kafka_consumer_poll(r->rk, 50);
                const char *topic;
                if (!m)
                        continue;
                if (m->err) {
                        rd_kafka_message_destroy(m);
                        continue;
                }
                topic = rd_kafka_topic_name(m->rkt);
                for (int i = 0; i < r->parts->cnt; i++)
                        if (r->parts->elems[i].partition == m->partition &&
                            !strcmp(r->parts->elems[i].topic, topic))
                                r->parts->elems[i].offset = m->offset + 1;
                if (!strcmp(topic, r->results))
                        on_result(t, m->payload, m->len);
                else
                        on_dlq(t, m);
                rd_kafka_message_destroy(m);
        } while (now_s() < end);
}

/* Reads until every partition is read up to its end as of now. */
static int reader_drain(struct reader *r, struct tally *t, int timeout_s)
{
        double end = now_s() + timeout_s;

        for (int i = 0; i < r->parts->cnt; i++) {
                int64_t lo;
                if (rd_kafka_query_watermark_offsets(
                        r->rk, r->parts->elems[i].topic,
                        r->parts->elems[i].partition, &lo, &r->hwm[i], 5000))
                        return -1;
        }
        while (r->ob && now_s() < end) {
                int n = outbox_poll(r, t);
                if (n < 0)
                        return -1;
                if (n < 5000)
                        break;
        }
        while (now_s() < end) {
                bool done = true;
                for (int i = 0; i < r->parts->cnt; i++)
                        if (r->parts->elems[i].offset < r->hwm[i])
                                done = false;
                if (done)
                        return 0;
                reader_poll(r, t, 200);
        }
        return -1;
}

/* ------------------------------------------------------------------ */
/* the simulator                                                         */

struct buf {
        char *p;
        size_t n;
};

static size_t on_body(char *d, size_t sz, size_t nm, void *u)
{
        struct buf *b = u;
        char *np      = realloc(b->p, b->n + sz * nm + 1);
        if (!np)
                return 0;
        b->p = np;
        memcpy(b->p + b->n, d, sz * nm);
        b->n += sz * nm;
        b->p[b->n] = '\0';
        return sz * nm;
}

/* GET /_sim/stats?summary=1, or NULL. */
static json_t *sim_stats(const char *base)
{
        char url[512];
        struct buf b = { NULL, 0 };
        CURL *c      = curl_easy_init();
        long status  = 0;
        json_t *j    = NULL;

        if (!c)
                return NULL;
        snprintf(url, sizeof(url), "%s/_sim/stats?summary=1", base);
        curl_easy_setopt(c, CURLOPT_URL, url);
        curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, on_body);
        curl_easy_setopt(c, CURLOPT_WRITEDATA, &b);
        curl_easy_setopt(c, CURLOPT_TIMEOUT_MS, 5000L);
        if (curl_easy_perform(c) == CURLE_OK)
                curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &status);
        if (status == 200 && b.p)
                j = json_loads(b.p, 0, NULL);
        free(b.p);
        curl_easy_cleanup(c);
        return j;
}

static long stat_of(json_t *j, const char *k)
{
        json_t *v = json_object_get(j, k);
        return json_is_integer(v) ? (long)json_integer_value(v) : -1;
}

/* ------------------------------------------------------------------ */

static bool complete(const struct tally *t, double fraction)
{
        const struct workload *w = t->w;
        double want              = fraction * (double)w->n_intents;
        size_t need              = (size_t)want;
        if ((double)need < want)
                need++;
        if (t->answered < need)
                return false;
        return fraction < 1.0 ||
               (t->conflicts >= w->reuses && t->dlq_n >= w->poison);
}

static void progress(const struct tally *t, const struct col_opts *o, double t0,
                     bool final)
{
        static double last;
        bool tty     = isatty(2);
        double now   = now_s();
        long charges = -1;
        json_t *st;

        if (!final && now - last < (tty ? 0.5 : 5.0))
                return;
        last = now;
        if (o->sim_url && (st = sim_stats(o->sim_url))) {
                charges = stat_of(st, "charges");
                json_decref(st);
        }
        fprintf(stderr,
                "%s  results for %zu/%zu intents (succeeded %zu, failed %zu, "
                "rejected %zu), conflicts %zu/%zu, dlq %zu/%zu, gateway "
                "charges %ld, %.0fs%s",
                tty ? "\r" : "", t->answered, t->w->n_intents,
                t->count[F_SUCCEEDED], t->count[F_FAILED], t->count[F_REJECTED],
                t->conflicts, t->w->reuses, t->dlq_n, t->w->poison, charges,
                now - t0, tty ? (final ? "\n" : "\033[K") : "\n");
        fflush(stderr);
}

/* The first pid of the comma-separated list that is gone, or 0. */
static long gone(const char *pids)
{
        const char *p = pids;
        char *end;

        while (p && *p) {
                long pid = strtol(p, &end, 10);
                if (end == p)
                        break;
                if (pid > 0 && kill((pid_t)pid, 0) < 0 && errno == ESRCH)
                        return pid;
                p = *end == ',' ? end + 1 : NULL;
        }
        return 0;
}

int collect_wait(const struct workload *w, const struct col_opts *o)
{
        struct reader r;
        struct tally t;
        double t0 = now_s(), end = t0 + o->timeout_s;
        int rc = 1;

        tally_init(&t, w);
        if (reader_open(&r, o) == 0) {
                while (now_s() < end) {
                        reader_poll(&r, &t, 200);
                        if (complete(&t, o->fraction)) {
                                rc = 0;
                                break;
                        }
                        progress(&t, o, t0, false);
                        if (o->watch && gone(o->watch)) {
                                fprintf(stderr,
                                        "\nchargeonce-demo: process %ld "
                                        "exited while results were still "
                                        "missing\n",
                                        gone(o->watch));
                                end = 0;
                        }
                }
                progress(&t, o, t0, true);
                if (rc && end > 0)
                        fprintf(stderr,
                                "chargeonce-demo: not every intent had its "
                                "result after %ds\n",
                                o->timeout_s);
        }
        reader_close(&r);
        tally_free(&t);
        return rc;
}

/* ------------------------------------------------------------------ */

static long db_long(PGconn *db, const char *sql)
{
        PGresult *res = PQexec(db, sql);
        long v        = -1;
        if (PQresultStatus(res) == PGRES_TUPLES_OK && PQntuples(res) == 1)
                v = atol(PQgetvalue(res, 0, 0));
        else
                fprintf(stderr, "chargeonce-demo: %s: %s", sql,
                        PQresultErrorMessage(res));
        PQclear(res);
        return v;
}

static void show_violations(PGconn *db)
{
        PGresult *res = PQexec(db, "SELECT * FROM invariant_violations "
                                   "LIMIT 10");
        if (PQresultStatus(res) == PGRES_TUPLES_OK) {
                for (int i = 0; i < PQntuples(res); i++) {
                        fprintf(stderr, "        ");
                        for (int c = 0; c < PQnfields(res); c++)
                                fprintf(stderr, "%s=%s ", PQfname(res, c),
                                        PQgetvalue(res, i, c));
                        fprintf(stderr, "\n");
                }
        }
        PQclear(res);
}

static long intents_messages(const struct reader *r, const char *topic)
{
        int n    = partitions_of(r->rk, topic);
        long sum = 0;

        for (int p = 0; p < n; p++) {
                int64_t lo, hi;
                if (rd_kafka_query_watermark_offsets(r->rk, topic, p, &lo, &hi,
                                                     5000))
                        return -1;
                sum += (long)(hi - lo);
        }
        return n > 0 ? sum : -1;
}

static int check(bool ok, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

static int check(bool ok, const char *fmt, ...)
{
        va_list ap;
        printf("  %-4s ", ok ? "ok" : "FAIL");
        va_start(ap, fmt);
        vprintf(fmt, ap);
        va_end(ap);
        printf("\n");
        return ok ? 0 : 1;
}

int collect_report(const struct workload *w, const struct col_opts *o)
{
        struct reader r;
        struct tally t;
        json_t *st;
        PGconn *db;
        long charges = -1, doubles = -1, messages, violations, processing;
        long no_result, taken_over = -1;
        int fails = 0;

        tally_init(&t, w);
        if (reader_open(&r, o) || reader_drain(&r, &t, 60)) {
                fprintf(stderr, "chargeonce-demo: could not read %s/%s\n",
                        o->results, o->dlq);
                reader_close(&r);
                tally_free(&t);
                return 1;
        }
        messages = intents_messages(&r, o->intents);
        reader_close(&r);
        if ((st = sim_stats(o->sim_url))) {
                charges = stat_of(st, "succeeded_charges");
                doubles = stat_of(st, "double_charges");
                json_decref(st);
        }
        db = PQconnectdb(o->conninfo);
        if (PQstatus(db) != CONNECTION_OK) {
                fprintf(stderr, "chargeonce-demo: database: %s",
                        PQerrorMessage(db));
                violations = processing = -1;
        } else {
                violations = db_long(db, "SELECT count(*) FROM "
                                         "invariant_violations");
                processing = db_long(db, "SELECT count(*) FROM payments "
                                         "WHERE status = 'processing'");
                taken_over = db_long(db, "SELECT count(*) FROM payments "
                                         "WHERE lease_epoch > 1");
        }
        no_result = (long)(w->n_intents - t.answered);

        printf("\n%7s  %8s  %15s  %14s  %9s  %9s  %6s  %8s  %8s  %6s  %3s\n",
               "intents", "messages", "gateway_charges", "double_charges",
               "no_result", "succeeded", "failed", "conflict", "rejected",
               "review", "dlq");
        printf("%7zu  %8ld  %15ld  %14ld  %9ld  %9zu  %6zu  %8zu  %8zu  "
               "%6zu  %3zu\n\n",
               w->n_intents, messages, charges, doubles, no_result,
               t.count[F_SUCCEEDED], t.count[F_FAILED], t.conflicts,
               t.count[F_REJECTED], t.count[F_REVIEW], t.dlq_n);
        fails += check(doubles == 0,
                       "double_charges = %ld: the simulator saw no order "
                       "charged twice",
                       doubles);
        fails +=
            check(no_result == 0 && t.extra == 0,
                  "no_result = %ld: every intent has exactly one final "
                  "result in %s (%zu extra)",
                  no_result, o->from_outbox ? "the outbox table" : o->results,
                  t.extra);
        fails += check(charges == (long)t.count[F_SUCCEEDED],
                       "gateway_charges = succeeded (%ld, %zu): no charge "
                       "without its result",
                       charges, t.count[F_SUCCEEDED]);
        fails += check(t.count[F_SUCCEEDED] == w->expect_succeeded &&
                           t.count[F_FAILED] == w->expect_failed &&
                           t.count[F_REJECTED] == w->expect_rejected &&
                           t.conflicts == w->reuses && t.dlq_n == w->poison &&
                           t.unexpected == 0,
                       "outcomes as the workload expects (succeeded %zu, "
                       "failed %zu, conflict %zu, rejected %zu, dlq %zu; "
                       "unexpected %zu)",
                       w->expect_succeeded, w->expect_failed, w->reuses,
                       w->expect_rejected, w->poison, t.unexpected);
        fails += check(messages == (long)w->n_msgs, "messages = %zu published",
                       w->n_msgs);
        fails += check(violations == 0,
                       "database: invariant_violations is empty (%ld rows)",
                       violations);
        if (violations > 0)
                show_violations(db);
        fails += check(processing == 0,
                       "database: %ld payments left processing", processing);
        printf("  database: %ld payments were finished by a reconciler "
               "(lease taken over)\n",
               taken_over);
        printf("  results read from %s%s: %zu (%zu distinct event ids, %zu "
               "replayed); dlq messages read: %zu\n",
               o->from_outbox ? "the outbox table" : "topic ",
               o->from_outbox ? " (no relay in this build)" : o->results,
               t.result_msgs, t.seen_n, t.replayed, t.dlq_msgs);
        PQfinish(db);
        tally_free(&t);
        return fails ? 1 : 0;
}
