/* SPDX-License-Identifier: Apache-2.0 */
/* nf_history: the loader, the reader and the questions asked of the
 * history (see nf.h). */
#include "nf.h"
#include "testenv.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

int64_t nf_now_ms(void)
{
        struct timespec ts;
        clock_gettime(CLOCK_REALTIME, &ts);
        return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

void nf_sleep_ms(int ms)
{
        struct timespec ts = { ms / 1000, (long)(ms % 1000) * 1000000L };
        nanosleep(&ts, NULL);
}

void nf_log_append_time(const char *topic)
{
        char err[512];
        rd_kafka_t *rk = rd_kafka_new(RD_KAFKA_PRODUCER, testenv_kafka_conf(),
                                      err, sizeof(err));
        rd_kafka_ConfigResource_t *cr;
        rd_kafka_queue_t *q;
        rd_kafka_event_t *ev;
        const rd_kafka_ConfigResource_t **res;
        size_t n = 0;

        SC_CHECK(rk, "admin client: %s", err);
        cr = rd_kafka_ConfigResource_new(RD_KAFKA_RESOURCE_TOPIC, topic);
        SC_CHECK(!rd_kafka_ConfigResource_set_config(
                     cr, "message.timestamp.type", "LogAppendTime"),
                 "set_config");
        q = rd_kafka_queue_new(rk);
        rd_kafka_AlterConfigs(rk, &cr, 1, NULL, q);
        ev = rd_kafka_queue_poll(q, 30000);
        SC_CHECK(ev && !rd_kafka_event_error(ev), "AlterConfigs %s: %s", topic,
                 ev ? rd_kafka_event_error_string(ev) : "timed out");
        res = rd_kafka_AlterConfigs_result_resources(
            rd_kafka_event_AlterConfigs_result(ev), &n);
        SC_CHECK(n == 1 && !rd_kafka_ConfigResource_error(res[0]),
                 "AlterConfigs %s: %s", topic,
                 n == 1 ? rd_kafka_ConfigResource_error_string(res[0])
                        : "no result");
        rd_kafka_event_destroy(ev);
        rd_kafka_ConfigResource_destroy(cr);
        rd_kafka_queue_destroy(q);
        rd_kafka_destroy(rk);
}

void nf_init(struct nf_run *run, unsigned seed, int rate)
{
        memset(run, 0, sizeof(*run));
        run->seed      = seed;
        run->rate      = rate > 0 ? rate : 20;
        run->load_rand = seed * 2654435761u + 1;
        pthread_mutex_init(&run->mu, NULL);
}

/* ---- the loader ---- */

static void produce_one(struct nf_run *run)
{
        char key[32], order[32], ev[40];
        struct intent_spec is;
        int i, r;

        pthread_mutex_lock(&run->mu);
        if (run->n_intents == run->cap_intents) {
                int cap = run->cap_intents ? run->cap_intents * 2 : 1024;
                struct nf_intent *p =
                    realloc(run->intents, (size_t)cap * sizeof(*p));
                SC_CHECK(p, "oom");
                run->intents     = p;
                run->cap_intents = cap;
        }
        i = run->n_intents;
        memset(&run->intents[i], 0, sizeof(run->intents[i]));
        pthread_mutex_unlock(&run->mu);

        snprintf(key, sizeof(key), "k%06d", i);
        snprintf(order, sizeof(order), "o%06d", i);
        memset(&is, 0, sizeof(is));
        is.tenant = NF_TENANT;
        is.key    = key;
        is.order  = order;
        is.amount = 100 + i;
        /* every 20th card is declined: a `failed` result, no charge */
        is.method = i % 20 == 7 ? "pm_decline_x" : "pm_tok";
        r         = (int)(rand_r(&run->load_rand) % 100);
        {
                int64_t t = nf_now_ms();

                sc_produce_intent(&run->sc, -1, &is, ev);
                pthread_mutex_lock(&run->mu);
                run->intents[i].produced_ms = t;
                run->n_intents              = i + 1;
                pthread_mutex_unlock(&run->mu);
        }
        /* copies behind it on its partition: a client retry with a new
         * event id (a replayed result, or none while the first is in
         * progress) or a redelivery of the same event (no result) */
        if (r >= 7)
                return;
        if (r >= 4)
                is.event_id = ev;
        sc_produce_intent(&run->sc, -1, &is, NULL);
        pthread_mutex_lock(&run->mu);
        run->intents[i].copies++;
        pthread_mutex_unlock(&run->mu);
}

static void *loader(void *arg)
{
        struct nf_run *run = arg;
        int64_t period_us  = 1000000 / run->rate;
        struct timespec next;

        clock_gettime(CLOCK_MONOTONIC, &next);
        while (!atomic_load(&run->load_stop)) {
                produce_one(run);
                next.tv_nsec += (long)(period_us * 1000);
                while (next.tv_nsec >= 1000000000L) {
                        next.tv_nsec -= 1000000000L;
                        next.tv_sec++;
                }
                clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &next, NULL);
        }
        return NULL;
}

void nf_load_start(struct nf_run *run)
{
        atomic_store(&run->load_stop, 0);
        SC_CHECK(!pthread_create(&run->loader, NULL, loader, run), "thread");
        run->loading = true;
}

void nf_load_stop(struct nf_run *run)
{
        if (!run->loading)
                return;
        atomic_store(&run->load_stop, 1);
        pthread_join(run->loader, NULL);
        run->loading = false;
        sc_flush(&run->sc);
}

/* ---- the reader ---- */

static void copy_str(char *dst, size_t size, json_t *v)
{
        const char *s = json_string_value(v);
        snprintf(dst, size, "%s", s ? s : "");
}

static void record(struct nf_run *run, const rd_kafka_message_t *m)
{
        rd_kafka_timestamp_type_t tstype;
        int64_t ts = rd_kafka_message_timestamp(m, &tstype);
        struct nf_result r;
        json_error_t e;
        json_t *j = NULL;
        const char *tenant;

        memset(&r, 0, sizeof(r));
        r.partition = m->partition;
        r.offset    = m->offset;
        r.ts        = ts;
        r.intent    = -1;
        SC_CHECK(tstype == RD_KAFKA_TIMESTAMP_LOG_APPEND_TIME,
                 "result %d/%lld is not stamped LogAppendTime", m->partition,
                 (long long)m->offset);
        if (m->payload)
                j = json_loadb(m->payload, m->len, 0, &e);
        tenant = j ? json_string_value(json_object_get(j, "tenant_id")) : NULL;
        if (j && tenant && !strcmp(tenant, NF_TENANT)) {
                int idx = -1;

                copy_str(r.key, sizeof(r.key),
                         json_object_get(j, "idempotency_key"));
                copy_str(r.event_id, sizeof(r.event_id),
                         json_object_get(j, "event_id"));
                copy_str(r.status, sizeof(r.status),
                         json_object_get(j, "status"));
                copy_str(r.payment_id, sizeof(r.payment_id),
                         json_object_get(j, "payment_id"));
                copy_str(r.charge_id, sizeof(r.charge_id),
                         json_object_get(j, "provider_charge_id"));
                r.replayed = json_is_true(json_object_get(j, "replayed"));
                r.parsed   = r.event_id[0] && r.status[0];
                if (sscanf(r.key, "k%d", &idx) == 1)
                        r.intent = idx;
        }
        json_decref(j);

        pthread_mutex_lock(&run->mu);
        if (!r.parsed || r.intent < 0 || r.intent >= run->n_intents) {
                r.intent = -1;
                run->unknown_results++;
        }
        if (run->n_results == run->cap_results) {
                size_t cap = run->cap_results ? run->cap_results * 2 : 1024;
                struct nf_result *p = realloc(run->results, cap * sizeof(*p));
                SC_CHECK(p, "oom");
                run->results     = p;
                run->cap_results = cap;
        }
        run->results[run->n_results++] = r;
        if (r.intent >= 0 && !r.replayed &&
            (!strcmp(r.status, "succeeded") || !strcmp(r.status, "failed") ||
             !strcmp(r.status, "review")) &&
            (!run->intents[r.intent].answered_ts ||
             ts < run->intents[r.intent].answered_ts))
                run->intents[r.intent].answered_ts = ts;
        pthread_mutex_unlock(&run->mu);
}

static void *reader(void *arg)
{
        struct nf_run *run = arg;
        char err[512], group[160];
        rd_kafka_conf_t *conf = testenv_kafka_conf();
        rd_kafka_topic_partition_list_t *sub;
        rd_kafka_t *rk;

        testenv_unique("nfreader", group, sizeof(group));
        rd_kafka_conf_set(conf, "group.id", group, err, sizeof(err));
        rd_kafka_conf_set(conf, "auto.offset.reset", "earliest", err,
                          sizeof(err));
        rd_kafka_conf_set(conf, "enable.auto.commit", "false", err,
                          sizeof(err));
        rd_kafka_conf_set(conf, "fetch.wait.max.ms", "50", err, sizeof(err));
        rk = rd_kafka_new(RD_KAFKA_CONSUMER, conf, err, sizeof(err));
        SC_CHECK(rk, "reader: %s", err);
        rd_kafka_poll_set_consumer(rk);
        sub = rd_kafka_topic_partition_list_new(1);
        rd_kafka_topic_partition_list_add(sub, run->sc.t_results,
                                          RD_KAFKA_PARTITION_UA);
        SC_CHECK(!rd_kafka_subscribe(rk, sub), "subscribe");
        rd_kafka_topic_partition_list_destroy(sub);
        while (atomic_load(&run->read_stop) < 2) {
                rd_kafka_message_t *m = rd_kafka_consumer_poll(rk, 100);

                if (!m) {
                        /* asked to stop and idle: done */
                        if (atomic_load(&run->read_stop) == 1)
                                atomic_store(&run->read_stop, 2);
                        continue;
                }
                if (!m->err)
                        record(run, m);
                rd_kafka_message_destroy(m);
        }
        rd_kafka_consumer_close(rk);
        rd_kafka_destroy(rk);
        return NULL;
}

void nf_read_start(struct nf_run *run)
{
        atomic_store(&run->read_stop, 0);
        SC_CHECK(!pthread_create(&run->reader, NULL, reader, run), "thread");
        run->reading = true;
}

void nf_read_stop(struct nf_run *run, int idle_ms)
{
        size_t seen = (size_t)-1;

        if (!run->reading)
                return;
        /* nothing new for idle_ms, then the reader's next idle poll ends */
        for (;;) {
                size_t n;

                pthread_mutex_lock(&run->mu);
                n = run->n_results;
                pthread_mutex_unlock(&run->mu);
                if (n == seen)
                        break;
                seen = n;
                nf_sleep_ms(idle_ms);
        }
        atomic_store(&run->read_stop, 1);
        pthread_join(run->reader, NULL);
        run->reading = false;
}

/* ---- questions ---- */

int nf_intents(struct nf_run *run)
{
        int n;
        pthread_mutex_lock(&run->mu);
        n = run->n_intents;
        pthread_mutex_unlock(&run->mu);
        return n;
}

static bool is_final(const struct nf_result *r)
{
        return !strcmp(r->status, "succeeded") ||
               !strcmp(r->status, "failed") || !strcmp(r->status, "review");
}

int64_t nf_first_after(struct nf_run *run, int64_t after_ms, int min_intent)
{
        int64_t best = 0;

        pthread_mutex_lock(&run->mu);
        for (size_t i = 0; i < run->n_results; i++) {
                const struct nf_result *r = &run->results[i];

                if (r->intent >= min_intent && !r->replayed && is_final(r) &&
                    r->ts > after_ms && (!best || r->ts < best))
                        best = r->ts;
        }
        pthread_mutex_unlock(&run->mu);
        return best;
}

int64_t nf_answered_upto(struct nf_run *run, int upto)
{
        int64_t last = 0;

        pthread_mutex_lock(&run->mu);
        for (int i = 0; i < upto && i < run->n_intents; i++) {
                if (!run->intents[i].answered_ts) {
                        last = 0;
                        break;
                }
                if (run->intents[i].answered_ts > last)
                        last = run->intents[i].answered_ts;
        }
        pthread_mutex_unlock(&run->mu);
        return last;
}

int nf_unanswered(struct nf_run *run, int upto)
{
        int n = 0;

        pthread_mutex_lock(&run->mu);
        for (int i = 0; i < upto && i < run->n_intents; i++)
                if (!run->intents[i].answered_ts)
                        n++;
        pthread_mutex_unlock(&run->mu);
        return n;
}

long nf_results_between(struct nf_run *run, int64_t after_ms, int64_t before_ms)
{
        long n = 0;

        pthread_mutex_lock(&run->mu);
        for (size_t i = 0; i < run->n_results; i++)
                if (!run->results[i].replayed && is_final(&run->results[i]) &&
                    run->results[i].ts > after_ms &&
                    (!before_ms || run->results[i].ts < before_ms))
                        n++;
        pthread_mutex_unlock(&run->mu);
        return n;
}
