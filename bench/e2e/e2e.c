/* SPDX-License-Identifier: Apache-2.0 */
/*
 * chargeonce-e2e: the end-to-end load tool of bench/run.sh.
 *
 *   chargeonce-e2e topics --brokers B --partitions P TOPIC...
 *       creates the topics (librdkafka Admin API).
 *   chargeonce-e2e run --brokers B --intents T --results R --run ID
 *                      --n N [--rate R] [--warmup W] [--sim-ms L]
 *                      [--offset K] [--timeout S]
 *       produces W warm-up intents and waits for their results (the
 *       consumer has joined, connections are up), then N intents, at R/s
 *       (0: as fast as possible), each with its produce time inside
 *       (metadata.bench_produced_us and occurred_at), and reads the result
 *       topic in the same process, joining by the result's intent_event_id.
 *       Prints one JSON line: intents/s from the first produce to the last
 *       result, and the latency produce -> result received (p50/p99/max),
 *       also minus the simulator's latency L. CHARGEONCE_E2E_SERIES=FILE
 *       also writes the latency second by second of production there;
 *       CHARGEONCE_E2E_TRACE=FILE each measured intent's times (produced,
 *       its result's message timestamp, read) for bench/latency_split.py.
 *   chargeonce-e2e replay --brokers B --intents T --group G --run ID --n N
 *                      [--offset K] [--timeout S]
 *       produces again the intents K..K+N-1 of run ID (the same event ids)
 *       and waits until group G has committed the end of every partition:
 *       prints the rate at which the replay was absorbed.
 *   chargeonce-e2e produce --brokers B --intents T --run ID --n N
 *                      [--offset K]
 *       produces the intents K..K+N-1 of run ID as fast as it can and
 *       exits (a backlog for drain).
 *   chargeonce-e2e drain --brokers B --results R --run ID --n N
 *                      --t0-us T [--offset K] [--timeout S]
 *       reads the result topic from the beginning until the N intents
 *       K..K+N-1 of run ID have a result. The time of a result is its
 *       message timestamp (set when the consumer published it; the time it
 *       was read when the broker gives none), so the reader may start late.
 *       Prints one JSON line: seconds from T (wall-clock us when the
 *       consumer was started) to the last result, intents/s over that, and
 *       over the time from the first result to the last.
 *
 * Event ids are derived from (run, index), so a replay names the same
 * events. Only for benchmarks on loopback.
 */
#include <jansson.h>
#include <librdkafka/rdkafka.h>

#include <inttypes.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static const char *brokers;

static int64_t wall_us(void)
{
        struct timespec ts;

        clock_gettime(CLOCK_REALTIME, &ts);
        return (int64_t)ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
}

static int64_t mono_us(void)
{
        struct timespec ts;

        clock_gettime(CLOCK_MONOTONIC, &ts);
        return (int64_t)ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
}

static void sleep_us(int64_t us)
{
        struct timespec ts;

        if (us <= 0)
                return;
        ts.tv_sec  = (time_t)(us / 1000000);
        ts.tv_nsec = (long)(us % 1000000) * 1000;
        nanosleep(&ts, NULL);
}

static void die(const char *what, const char *why)
{
        fprintf(stderr, "chargeonce-e2e: %s: %s\n", what, why);
        exit(1);
}

static rd_kafka_conf_t *base_conf(void)
{
        rd_kafka_conf_t *c = rd_kafka_conf_new();
        char err[512];

        if (rd_kafka_conf_set(c, "bootstrap.servers", brokers, err,
                              sizeof(err)) != RD_KAFKA_CONF_OK)
                die("bootstrap.servers", err);
        return c;
}

static void conf_set(rd_kafka_conf_t *c, const char *k, const char *v)
{
        char err[512];

        if (rd_kafka_conf_set(c, k, v, err, sizeof(err)) != RD_KAFKA_CONF_OK)
                die(k, err);
}

/* ------------------------------------------------------------------ */
/* topics                                                              */

static int create_topics(char **names, int n, int partitions)
{
        char err[512];
        rd_kafka_t *rk;
        rd_kafka_NewTopic_t **nt = calloc((size_t)n, sizeof(*nt));
        rd_kafka_queue_t *q;
        rd_kafka_event_t *ev;
        int rc = 1;

        rk = rd_kafka_new(RD_KAFKA_PRODUCER, base_conf(), err, sizeof(err));
        if (!rk || !nt)
                die("producer", err);
        for (int i = 0; i < n; i++) {
                nt[i] = rd_kafka_NewTopic_new(names[i], partitions, 1, err,
                                              sizeof(err));
                if (!nt[i])
                        die(names[i], err);
        }
        q = rd_kafka_queue_new(rk);
        rd_kafka_CreateTopics(rk, nt, (size_t)n, NULL, q);
        ev = rd_kafka_queue_poll(q, 30000);
        if (ev) {
                size_t cnt = 0;
                const rd_kafka_CreateTopics_result_t *res =
                    rd_kafka_event_CreateTopics_result(ev);
                const rd_kafka_topic_result_t **tr =
                    res ? rd_kafka_CreateTopics_result_topics(res, &cnt) : NULL;

                rc = rd_kafka_event_error(ev) || !tr ? 1 : 0;
                for (size_t i = 0; tr && i < cnt; i++) {
                        rd_kafka_resp_err_t e =
                            rd_kafka_topic_result_error(tr[i]);
                        if (e && e != RD_KAFKA_RESP_ERR_TOPIC_ALREADY_EXISTS) {
                                fprintf(stderr, "create %s: %s\n",
                                        rd_kafka_topic_result_name(tr[i]),
                                        rd_kafka_err2str(e));
                                rc = 1;
                        }
                }
                rd_kafka_event_destroy(ev);
        }
        for (int i = 0; i < n; i++)
                rd_kafka_NewTopic_destroy(nt[i]);
        free(nt);
        rd_kafka_queue_destroy(q);
        rd_kafka_destroy(rk);
        return rc;
}

/* ------------------------------------------------------------------ */
/* intents                                                             */

struct load {
        const char *intents, *results, *run, *group;
        long n, warmup, offset;
        double rate;
        long timeout_s;
        int64_t *t_prod; /* wall us of each produce, by index */
        atomic_long produced;
        atomic_bool failed;
        int64_t t_first_us; /* mono: first measured produce */
};

/* The event id of intent i of run (a UUID-shaped string). */
static void event_id(const char *run, long i, char out[37])
{
        unsigned long h = 5381;

        for (const char *p = run; *p; p++)
                h = h * 33 + (unsigned char)*p;
        snprintf(out, 37, "%08lx-be0c-4000-8000-%012lx", h & 0xffffffffUL,
                 (unsigned long)i);
}

/* Index of an event id of run, or -1. */
static long index_of(const char *run, const char *eid, size_t len)
{
        char want[37], buf[37];

        if (len != 36)
                return -1;
        event_id(run, 0, want);
        if (memcmp(eid, want, 24) != 0)
                return -1;
        memcpy(buf, eid + 24, 12);
        buf[12] = '\0';
        return strtol(buf, NULL, 16);
}

static void rfc3339_us(int64_t us, char *out, size_t outsz)
{
        time_t s = (time_t)(us / 1000000);
        struct tm tm;

        gmtime_r(&s, &tm);
        snprintf(out, outsz, "%04d-%02d-%02dT%02d:%02d:%02d.%03dZ",
                 tm.tm_year + 1900, tm.tm_mon + 1, tm.tm_mday, tm.tm_hour,
                 tm.tm_min, tm.tm_sec, (int)(us % 1000000 / 1000));
}

static int produce_one(rd_kafka_t *rk, const char *topic, const char *run,
                       long i, int64_t now_us)
{
        char eid[37], key[128], ts[64], pus[48], payload[1024];
        int len;
        rd_kafka_resp_err_t err;

        event_id(run, i, eid);
        snprintf(key, sizeof(key), "bench/%s-%ld", run, i);
        rfc3339_us(now_us, ts, sizeof(ts));
        /* seconds and microseconds apart: 16 digits in a row would be
         * refused as a card number by chargeonce's guard */
        snprintf(pus, sizeof(pus), "%" PRId64 ".%06" PRId64, now_us / 1000000,
                 now_us % 1000000);
        len = snprintf(payload, sizeof(payload),
                       "{\"schema_version\":1,\"event_id\":\"%s\","
                       "\"tenant_id\":\"bench\",\"idempotency_key\":"
                       "\"%s-%ld\",\"order_id\":\"o-%s-%ld\","
                       "\"customer_id\":\"c-%ld\",\"amount\":%ld,"
                       "\"currency\":\"EUR\",\"payment_method\":"
                       "\"pm_tok_bench\",\"metadata\":{"
                       "\"bench_produced_us\":\"%s\"},\"occurred_at\":"
                       "\"%s\"}",
                       eid, run, i, run, i, i % 1000, 100 + i % 1000, pus, ts);
        for (int tries = 0; tries < 1000; tries++) {
                err = rd_kafka_producev(
                    rk, RD_KAFKA_V_TOPIC(topic),
                    RD_KAFKA_V_KEY(key, strlen(key)),
                    RD_KAFKA_V_VALUE(payload, (size_t)len),
                    RD_KAFKA_V_MSGFLAGS(RD_KAFKA_MSG_F_COPY), RD_KAFKA_V_END);
                if (err != RD_KAFKA_RESP_ERR__QUEUE_FULL)
                        break;
                rd_kafka_poll(rk, 10);
        }
        if (err) {
                fprintf(stderr, "produce: %s\n", rd_kafka_err2str(err));
                return -1;
        }
        return 0;
}

static rd_kafka_t *new_producer(void)
{
        char err[512];
        rd_kafka_conf_t *c = base_conf();
        rd_kafka_t *rk;

        conf_set(c, "linger.ms", "2");
        conf_set(c, "enable.idempotence", "true");
        conf_set(c, "queue.buffering.max.messages", "200000");
        rk = rd_kafka_new(RD_KAFKA_PRODUCER, c, err, sizeof(err));
        if (!rk)
                die("producer", err);
        return rk;
}

/* Produces indexes [from, to) at rate/s (0: at once). */
static int produce_range(rd_kafka_t *rk, struct load *L, long from, long to,
                         double rate)
{
        int64_t t0 = mono_us();

        for (long i = from; i < to; i++) {
                if (rate > 0) {
                        int64_t due =
                            t0 + (int64_t)((double)(i - from) * 1e6 / rate);
                        int64_t now = mono_us();
                        if (due > now + 200)
                                sleep_us(due - now);
                }
                int64_t w = wall_us();
                if (L->t_prod)
                        L->t_prod[i - L->offset] = w;
                if (produce_one(rk, L->intents, L->run, i, w) < 0)
                        return -1;
                atomic_fetch_add(&L->produced, 1);
                rd_kafka_poll(rk, 0);
        }
        return 0;
}

/* ------------------------------------------------------------------ */
/* run: produce and read results                                       */

static void *producer_main(void *arg)
{
        struct load *L = arg;
        rd_kafka_t *rk = new_producer();
        long first     = L->offset + L->warmup;

        /* warm-up first; the reader tells us when it came back */
        if (produce_range(rk, L, L->offset, first, 0) < 0)
                atomic_store(&L->failed, true);
        rd_kafka_flush(rk, 30000);
        while (!atomic_load(&L->failed) && L->t_first_us == 0)
                sleep_us(2000);
        if (!atomic_load(&L->failed) &&
            produce_range(rk, L, first, first + L->n, L->rate) < 0)
                atomic_store(&L->failed, true);
        if (rd_kafka_flush(rk, 60000) != 0)
                atomic_store(&L->failed, true);
        rd_kafka_destroy(rk);
        return NULL;
}

static int cmp_i64(const void *a, const void *b)
{
        int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
        return x < y ? -1 : x > y;
}

static double pct(const int64_t *v, size_t n, double p)
{
        size_t i;

        if (n == 0)
                return 0;
        i = (size_t)(p * (double)(n - 1) + 0.5);
        return (double)v[i] / 1000.0;
}

static rd_kafka_t *results_reader(const char *topic)
{
        char err[512], grp[64];
        rd_kafka_conf_t *c = base_conf();
        rd_kafka_t *rk;
        const rd_kafka_metadata_t *md = NULL;
        rd_kafka_topic_partition_list_t *l;
        rd_kafka_topic_t *t;

        snprintf(grp, sizeof(grp), "bench-reader-%" PRId64, wall_us());
        conf_set(c, "group.id", grp);
        conf_set(c, "enable.auto.commit", "false");
        conf_set(c, "fetch.wait.max.ms", "10");
        rk = rd_kafka_new(RD_KAFKA_CONSUMER, c, err, sizeof(err));
        if (!rk)
                die("consumer", err);
        rd_kafka_poll_set_consumer(rk);
        t = rd_kafka_topic_new(rk, topic, NULL);
        if (rd_kafka_metadata(rk, 0, t, &md, 10000) != 0 || !md ||
            md->topic_cnt != 1 || md->topics[0].partition_cnt < 1)
                die(topic, "no metadata");
        l = rd_kafka_topic_partition_list_new(md->topics[0].partition_cnt);
        for (int p = 0; p < md->topics[0].partition_cnt; p++)
                rd_kafka_topic_partition_list_add(l, topic, p)->offset =
                    RD_KAFKA_OFFSET_BEGINNING;
        if (rd_kafka_assign(rk, l) != 0)
                die(topic, "assign");
        rd_kafka_topic_partition_list_destroy(l);
        rd_kafka_metadata_destroy(md);
        rd_kafka_topic_destroy(t);
        return rk;
}

/* CHARGEONCE_E2E_SERIES=FILE: the latency second by second of production
 * (from the first measured intent), one line each: second, results, p50,
 * p99 and max in ms, so that a p99 can be told from a few bad seconds. */
static void write_series(const struct load *L, const int64_t *lat_i,
                         double sim_ms)
{
        const char *path = getenv("CHARGEONCE_E2E_SERIES");
        FILE *f;
        int64_t *w;
        long from = L->warmup, total = L->warmup + L->n;

        if (!path || !*path || L->n <= 0)
                return;
        f = fopen(path, "w");
        w = calloc((size_t)L->n, sizeof(*w));
        if (!f || !w) {
                fprintf(stderr, "chargeonce-e2e: %s: cannot write\n", path);
                if (f)
                        fclose(f);
                free(w);
                return;
        }
        fprintf(f, "# second results p50_ms p99_ms max_ms (sim %.1f ms)\n",
                sim_ms);
        for (long sec = 0, i = from; i < total; sec++) {
                size_t k    = 0;
                int64_t end = L->t_prod[from] + (sec + 1) * 1000000;

                for (; i < total && L->t_prod[i] < end; i++)
                        if (lat_i[i] > 0)
                                w[k++] = lat_i[i];
                qsort(w, k, sizeof(*w), cmp_i64);
                fprintf(f, "%ld %zu %.1f %.1f %.1f\n", sec, k, pct(w, k, 0.50),
                        pct(w, k, 0.99), k ? (double)w[k - 1] / 1000.0 : 0);
        }
        fclose(f);
        free(w);
}

/* CHARGEONCE_E2E_TRACE=FILE: one line per measured intent with a result:
 * index, produced (wall-clock us), the result's message timestamp (ms, set
 * when the relay produced it) and read (us). */
static void write_trace(const struct load *L, const int64_t *lat_i,
                        const int64_t *ts_i)
{
        const char *path = getenv("CHARGEONCE_E2E_TRACE");
        FILE *f;

        if (!path || !*path)
                return;
        f = fopen(path, "w");
        if (!f) {
                fprintf(stderr, "chargeonce-e2e: %s: cannot write\n", path);
                return;
        }
        fprintf(f, "# index produced_us result_ts_ms read_us\n");
        for (long i = L->warmup; i < L->warmup + L->n; i++)
                if (lat_i[i] > 0)
                        fprintf(f, "%ld %" PRId64 " %" PRId64 " %" PRId64 "\n",
                                i + L->offset, L->t_prod[i], ts_i[i],
                                L->t_prod[i] + lat_i[i]);
        fclose(f);
}

static int cmd_run(struct load *L, double sim_ms)
{
        rd_kafka_t *rk = results_reader(L->results);
        long total     = L->warmup + L->n;
        uint8_t *seen  = calloc((size_t)total, 1);
        int64_t *lat   = calloc((size_t)(L->n ? L->n : 1), sizeof(*lat));
        int64_t *lat_i = calloc((size_t)total, sizeof(*lat_i));
        int64_t *ts_i  = calloc((size_t)total, sizeof(*ts_i));
        size_t nlat = 0, warm_seen = 0, meas_seen = 0, dups = 0, foreign = 0,
               not_ok = 0;
        int64_t deadline, warm_deadline, t_last = 0;
        pthread_t th;

        L->t_prod = calloc((size_t)total, sizeof(*L->t_prod));
        if (!seen || !lat || !lat_i || !ts_i || !L->t_prod)
                die("memory", "out of memory");
        if (L->warmup == 0)
                L->t_first_us = mono_us();
        if (pthread_create(&th, NULL, producer_main, L) != 0)
                die("thread", "pthread_create");
        deadline      = mono_us() + (int64_t)L->timeout_s * 1000000;
        warm_deadline = mono_us() + 60 * 1000000LL;
        while (meas_seen < (size_t)L->n && mono_us() < deadline &&
               !atomic_load(&L->failed)) {
                rd_kafka_message_t *m = rd_kafka_consumer_poll(rk, 50);

                if (L->t_first_us == 0 && mono_us() > warm_deadline) {
                        fprintf(stderr, "chargeonce-e2e: the warm-up did not "
                                        "come back in 60 s\n");
                        atomic_store(&L->failed, true);
                }
                const char *eid;
                size_t elen = 0;
                long i;

                if (!m)
                        continue;
                if (m->err) {
                        rd_kafka_message_destroy(m);
                        continue;
                }
                int64_t now = wall_us();
                json_t *doc = json_loadb(m->payload, m->len, 0, NULL);
                json_t *v   = json_object_get(doc, "intent_event_id");

                eid  = json_string_value(v);
                elen = eid ? json_string_length(v) : 0;
                i    = eid ? index_of(L->run, eid, elen) - L->offset : -1;
                if (json_is_string(json_object_get(doc, "status")) &&
                    strcmp(json_string_value(json_object_get(doc, "status")),
                           "succeeded") != 0)
                        not_ok++;
                json_decref(doc);
                if (i < 0 || i >= total) {
                        foreign++;
                } else if (seen[i]) {
                        dups++;
                } else {
                        seen[i] = 1;
                        if (i < L->warmup) {
                                if (++warm_seen == (size_t)L->warmup)
                                        L->t_first_us = mono_us();
                        } else {
                                meas_seen++;
                                lat[nlat++] = now - L->t_prod[i];
                                lat_i[i]    = now - L->t_prod[i];
                                ts_i[i] = rd_kafka_message_timestamp(m, NULL);
                                t_last  = mono_us();
                        }
                }
                rd_kafka_message_destroy(m);
        }
        if (L->t_first_us == 0)
                L->t_first_us = mono_us(); /* warm-up never came back */
        atomic_store(&L->failed,
                     atomic_load(&L->failed) || meas_seen < (size_t)L->n);
        pthread_join(th, NULL);
        rd_kafka_consumer_close(rk);
        rd_kafka_destroy(rk);

        qsort(lat, nlat, sizeof(*lat), cmp_i64);
        double secs =
            t_last > L->t_first_us ? (double)(t_last - L->t_first_us) / 1e6 : 0;
        double p50 = pct(lat, nlat, 0.50), p99 = pct(lat, nlat, 0.99);
        printf("{\"n\":%ld,\"results\":%zu,\"warmup\":%ld,\"duplicates\":%zu,"
               "\"foreign\":%zu,\"not_succeeded\":%zu,\"seconds\":%.3f,"
               "\"intents_per_s\":%.1f,"
               "\"rate\":%.1f,\"p50_ms\":%.2f,\"p99_ms\":%.2f,"
               "\"max_ms\":%.2f,\"sim_ms\":%.1f,\"p50_overhead_ms\":%.2f,"
               "\"p99_overhead_ms\":%.2f,\"ok\":%s}\n",
               L->n, meas_seen, L->warmup, dups, foreign, not_ok, secs,
               secs > 0 ? (double)meas_seen / secs : 0, L->rate, p50, p99,
               nlat ? (double)lat[nlat - 1] / 1000.0 : 0, sim_ms, p50 - sim_ms,
               p99 - sim_ms, atomic_load(&L->failed) ? "false" : "true");
        write_series(L, lat_i, sim_ms);
        write_trace(L, lat_i, ts_i);
        free(ts_i);
        free(seen);
        free(lat);
        free(lat_i);
        free(L->t_prod);
        return atomic_load(&L->failed) ? 1 : 0;
}

/* ------------------------------------------------------------------ */
/* replay: produce the same events again, wait for the group           */

/* True when group has committed the high watermark of every partition. */
static bool group_at_end(rd_kafka_t *rk, const char *topic, int parts,
                         int64_t *committed_total)
{
        rd_kafka_topic_partition_list_t *l =
            rd_kafka_topic_partition_list_new(parts);
        bool done = true;

        *committed_total = 0;
        for (int p = 0; p < parts; p++)
                rd_kafka_topic_partition_list_add(l, topic, p);
        if (rd_kafka_committed(rk, l, 5000) != 0)
                done = false;
        for (int p = 0; done && p < parts; p++) {
                int64_t lo, hi;
                if (rd_kafka_query_watermark_offsets(rk, topic, p, &lo, &hi,
                                                     5000) != 0) {
                        done = false;
                        break;
                }
                if (l->elems[p].offset >= 0)
                        *committed_total += l->elems[p].offset;
                if (hi > 0 && l->elems[p].offset < hi)
                        done = false;
        }
        rd_kafka_topic_partition_list_destroy(l);
        return done;
}

static int cmd_replay(struct load *L)
{
        char err[512];
        rd_kafka_conf_t *c = base_conf();
        rd_kafka_t *grk, *prk;
        const rd_kafka_metadata_t *md = NULL;
        rd_kafka_topic_t *t;
        int parts;
        int64_t t0, t_produced = 0, deadline, committed = 0;
        bool done = false;

        conf_set(c, "group.id", L->group);
        grk = rd_kafka_new(RD_KAFKA_CONSUMER, c, err, sizeof(err));
        if (!grk)
                die("consumer", err);
        t = rd_kafka_topic_new(grk, L->intents, NULL);
        if (rd_kafka_metadata(grk, 0, t, &md, 10000) != 0 || !md ||
            md->topic_cnt != 1)
                die(L->intents, "no metadata");
        parts = md->topics[0].partition_cnt;
        rd_kafka_metadata_destroy(md);
        rd_kafka_topic_destroy(t);

        prk = new_producer();
        t0  = mono_us();
        if (produce_range(prk, L, L->offset, L->offset + L->n, 0) < 0 ||
            rd_kafka_flush(prk, 60000) != 0)
                die("replay", "produce failed");
        t_produced = mono_us();
        rd_kafka_destroy(prk);
        deadline = t0 + (int64_t)L->timeout_s * 1000000;
        while (mono_us() < deadline) {
                if (group_at_end(grk, L->intents, parts, &committed)) {
                        done = true;
                        break;
                }
                sleep_us(50000);
        }
        double secs = (double)(mono_us() - t0) / 1e6;
        printf("{\"n\":%ld,\"seconds\":%.3f,\"intents_per_s\":%.1f,"
               "\"produce_seconds\":%.3f,\"ok\":%s}\n",
               L->n, secs, secs > 0 ? (double)L->n / secs : 0,
               (double)(t_produced - t0) / 1e6, done ? "true" : "false");
        rd_kafka_destroy(grk);
        return done ? 0 : 1;
}

/* ------------------------------------------------------------------ */
/* produce and drain: a backlog, then the consumer is started          */

static int cmd_produce(struct load *L)
{
        rd_kafka_t *rk = new_producer();
        int64_t t0     = mono_us();
        int rc         = 0;

        if (produce_range(rk, L, L->offset, L->offset + L->n, 0) < 0 ||
            rd_kafka_flush(rk, 60000) != 0)
                rc = 1;
        double secs = (double)(mono_us() - t0) / 1e6;
        printf("{\"n\":%ld,\"seconds\":%.3f,\"ok\":%s}\n", L->n, secs,
               rc ? "false" : "true");
        rd_kafka_destroy(rk);
        return rc;
}

static int cmd_drain(struct load *L, int64_t t0_us)
{
        rd_kafka_t *rk   = results_reader(L->results);
        uint8_t *seen    = calloc((size_t)L->n, 1);
        size_t meas_seen = 0, dups = 0, foreign = 0, not_ok = 0;
        int64_t deadline = mono_us() + (int64_t)L->timeout_s * 1000000;
        int64_t t_first = 0, t_last = 0; /* wall us */

        if (!seen)
                die("memory", "out of memory");
        while (meas_seen < (size_t)L->n && mono_us() < deadline) {
                rd_kafka_message_t *m = rd_kafka_consumer_poll(rk, 50);
                rd_kafka_timestamp_type_t tst;
                const char *eid;
                size_t elen;
                long i;

                if (!m)
                        continue;
                if (m->err) {
                        rd_kafka_message_destroy(m);
                        continue;
                }
                int64_t ts  = rd_kafka_message_timestamp(m, &tst);
                int64_t at  = tst != RD_KAFKA_TIMESTAMP_NOT_AVAILABLE && ts > 0
                                  ? ts * 1000
                                  : wall_us();
                json_t *doc = json_loadb(m->payload, m->len, 0, NULL);
                json_t *v   = json_object_get(doc, "intent_event_id");
                json_t *st  = json_object_get(doc, "status");

                eid  = json_string_value(v);
                elen = eid ? json_string_length(v) : 0;
                i    = eid ? index_of(L->run, eid, elen) - L->offset : -1;
                if (i < 0 || i >= L->n) {
                        foreign++;
                } else if (seen[i]) {
                        dups++;
                } else {
                        seen[i] = 1;
                        meas_seen++;
                        if (!json_is_string(st) ||
                            strcmp(json_string_value(st), "succeeded") != 0)
                                not_ok++;
                        if (t_first == 0 || at < t_first)
                                t_first = at;
                        if (at > t_last)
                                t_last = at;
                }
                json_decref(doc);
                rd_kafka_message_destroy(m);
        }
        rd_kafka_consumer_close(rk);
        rd_kafka_destroy(rk);

        bool ok     = meas_seen == (size_t)L->n;
        double secs = t_last > t0_us ? (double)(t_last - t0_us) / 1e6 : 0;
        double from_first =
            t_last > t_first ? (double)(t_last - t_first) / 1e6 : 0;
        printf("{\"n\":%ld,\"results\":%zu,\"duplicates\":%zu,"
               "\"foreign\":%zu,\"not_succeeded\":%zu,\"seconds\":%.3f,"
               "\"intents_per_s\":%.1f,\"seconds_to_first_result\":%.3f,"
               "\"seconds_from_first_result\":%.3f,"
               "\"intents_per_s_from_first_result\":%.1f,\"ok\":%s}\n",
               L->n, meas_seen, dups, foreign, not_ok, secs,
               secs > 0 ? (double)meas_seen / secs : 0,
               t_first > t0_us ? (double)(t_first - t0_us) / 1e6 : 0,
               from_first,
               from_first > 0 ? (double)(meas_seen - 1) / from_first : 0,
               ok ? "true" : "false");
        free(seen);
        return ok ? 0 : 1;
}

/* ------------------------------------------------------------------ */

static void usage(void)
{
        fprintf(stderr,
                "usage: chargeonce-e2e topics --brokers B [--partitions P] "
                "TOPIC...\n"
                "       chargeonce-e2e run --brokers B --intents T --results R "
                "--run ID --n N [--rate R] [--warmup W] [--sim-ms L] "
                "[--offset K] [--timeout S]\n"
                "       chargeonce-e2e replay --brokers B --intents T --group "
                "G --run ID --n N [--offset K] [--timeout S]\n"
                "       chargeonce-e2e produce --brokers B --intents T --run "
                "ID --n N [--offset K]\n"
                "       chargeonce-e2e drain --brokers B --results R --run ID "
                "--n N --t0-us T [--offset K] [--timeout S]\n");
        exit(2);
}

int main(int argc, char **argv)
{
        struct load L;
        const char *cmd;
        char *topics[16];
        int ntopics = 0, partitions = 1;
        double sim_ms = 0;
        int64_t t0_us = 0;

        memset(&L, 0, sizeof(L));
        L.timeout_s = 120;
        L.run       = "bench";
        if (argc < 2)
                usage();
        cmd = argv[1];
        for (int i = 2; i < argc; i++) {
                const char *a = argv[i];
                const char *v = i + 1 < argc ? argv[i + 1] : NULL;

                if (a[0] != '-') {
                        if (ntopics < 16)
                                topics[ntopics++] = argv[i];
                        continue;
                }
                if (!v)
                        usage();
                i++;
                if (!strcmp(a, "--brokers"))
                        brokers = v;
                else if (!strcmp(a, "--partitions"))
                        partitions = atoi(v);
                else if (!strcmp(a, "--intents"))
                        L.intents = v;
                else if (!strcmp(a, "--results"))
                        L.results = v;
                else if (!strcmp(a, "--group"))
                        L.group = v;
                else if (!strcmp(a, "--run"))
                        L.run = v;
                else if (!strcmp(a, "--n"))
                        L.n = atol(v);
                else if (!strcmp(a, "--rate"))
                        L.rate = atof(v);
                else if (!strcmp(a, "--warmup"))
                        L.warmup = atol(v);
                else if (!strcmp(a, "--offset"))
                        L.offset = atol(v);
                else if (!strcmp(a, "--sim-ms"))
                        sim_ms = atof(v);
                else if (!strcmp(a, "--t0-us"))
                        t0_us = strtoll(v, NULL, 10);
                else if (!strcmp(a, "--timeout"))
                        L.timeout_s = atol(v);
                else
                        usage();
        }
        if (!brokers)
                usage();
        if (!strcmp(cmd, "topics"))
                return ntopics ? create_topics(topics, ntopics, partitions) : 2;
        if (!strcmp(cmd, "run") && L.intents && L.results && L.n > 0)
                return cmd_run(&L, sim_ms);
        if (!strcmp(cmd, "replay") && L.intents && L.group && L.n > 0)
                return cmd_replay(&L);
        if (!strcmp(cmd, "produce") && L.intents && L.n > 0)
                return cmd_produce(&L);
        if (!strcmp(cmd, "drain") && L.results && L.n > 0 && t0_us > 0)
                return cmd_drain(&L, t0_us);
        usage();
        return 2;
}
