/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Unit tests of util/metrics: exact counting from many threads, the
 * exposition text of a small state (pinned in full), escaping and number
 * formats, NULL registry, a bad call aborts, the lag table, liveness.
 * The exposition is also parsed by another tool: metrics_parse.py with
 * Python's prometheus_client (metrics_render_sample feeds it).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "util/metrics.h"

#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define THREADS    8
#define PER_THREAD 100000

struct worker {
        struct metrics *m;
        pthread_barrier_t *bar;
        int idx;
};

static void *count_thread(void *arg)
{
        struct worker *w = arg;

        pthread_barrier_wait(w->bar);
        for (int i = 0; i < PER_THREAD; i++) {
                metrics_inc(w->m, METRIC_INTENTS, (unsigned)(i % 7));
                metrics_add(w->m, METRIC_RESULTS_PUBLISHED, 0, 2);
                metrics_gauge_add(w->m, METRIC_IN_FLIGHT, 1);
                metrics_gauge_add(w->m, METRIC_IN_FLIGHT, -1);
                if (i % 10 == w->idx % 10)
                        metrics_observe(w->m, METRIC_GATEWAY_DURATION, 0.25);
        }
        return NULL;
}

/* Every increment of every thread, started together, is counted. */
static void test_threads_exact(void **state)
{
        struct metrics *m = metrics_new();
        pthread_barrier_t bar;
        pthread_t th[THREADS];
        struct worker w[THREADS];
        uint64_t sum = 0;
        struct buf b;
        char want[128];

        (void)state;
        pthread_barrier_init(&bar, NULL, THREADS);
        for (int i = 0; i < THREADS; i++) {
                w[i] = (struct worker){ m, &bar, i };
                assert_int_equal(
                    pthread_create(&th[i], NULL, count_thread, &w[i]), 0);
        }
        for (int i = 0; i < THREADS; i++)
                pthread_join(th[i], NULL);
        pthread_barrier_destroy(&bar);
        for (unsigned k = 0; k < 7; k++) {
                uint64_t per =
                    (uint64_t)THREADS * (PER_THREAD / 7 + (k < PER_THREAD % 7));
                assert_int_equal(metrics_counter(m, METRIC_INTENTS, k), per);
                sum += metrics_counter(m, METRIC_INTENTS, k);
        }
        assert_int_equal(sum, (uint64_t)THREADS * PER_THREAD);
        assert_int_equal(metrics_counter(m, METRIC_RESULTS_PUBLISHED, 0),
                         (uint64_t)THREADS * PER_THREAD * 2);
        assert_true(metrics_gauge(m, METRIC_IN_FLIGHT) == 0.0);
        buf_init(&b, 1 << 20);
        assert_int_equal(metrics_render(m, &b), 0);
        snprintf(want, sizeof(want),
                 "\nchargeonce_gateway_request_duration_seconds_count %d\n",
                 THREADS * PER_THREAD / 10);
        assert_non_null(strstr(buf_str(&b), want));
        assert_non_null(strstr(buf_str(&b),
                               "chargeonce_gateway_request_duration_seconds_"
                               "bucket{le=\"0.1\"} 0\n"));
        buf_free(&b);
        metrics_destroy(m);
}

/* The whole exposition of a small state, line by line. */
static const char expected[] =
    "# HELP chargeonce_intents_total Intent messages answered, by how they "
    "were judged\n"
    "# TYPE chargeonce_intents_total counter\n"
    "chargeonce_intents_total{outcome=\"new\"} 3\n"
    "chargeonce_intents_total{outcome=\"duplicate_event\"} 0\n"
    "chargeonce_intents_total{outcome=\"in_progress\"} 0\n"
    "chargeonce_intents_total{outcome=\"replayed\"} 0\n"
    "chargeonce_intents_total{outcome=\"conflict\"} 0\n"
    "chargeonce_intents_total{outcome=\"rejected\"} 0\n"
    "chargeonce_intents_total{outcome=\"dead_lettered\"} 1\n"
    "# HELP chargeonce_payments_finished_total Payments this process moved "
    "to a final status\n"
    "# TYPE chargeonce_payments_finished_total counter\n"
    "chargeonce_payments_finished_total{status=\"succeeded\"} 2\n"
    "chargeonce_payments_finished_total{status=\"failed\"} 0\n"
    "chargeonce_payments_finished_total{status=\"review\"} 0\n"
    "# HELP chargeonce_gateway_requests_total HTTP requests to the gateway, "
    "by how they ended\n"
    "# TYPE chargeonce_gateway_requests_total counter\n"
    "chargeonce_gateway_requests_total{result=\"succeeded\"} 0\n"
    "chargeonce_gateway_requests_total{result=\"failed\"} 0\n"
    "chargeonce_gateway_requests_total{result=\"in_progress\"} 0\n"
    "chargeonce_gateway_requests_total{result=\"rate_limited\"} 0\n"
    "chargeonce_gateway_requests_total{result=\"unknown\"} 0\n"
    "chargeonce_gateway_requests_total{result=\"defect\"} 0\n"
    "chargeonce_gateway_requests_total{result=\"not_found\"} 0\n"
    "chargeonce_gateway_requests_total{result=\"timeout\"} 1\n"
    "chargeonce_gateway_requests_total{result=\"transport_error\"} 0\n"
    "# HELP chargeonce_gateway_request_duration_seconds Duration of one HTTP "
    "request to the gateway\n"
    "# TYPE chargeonce_gateway_request_duration_seconds histogram\n"
    "chargeonce_gateway_request_duration_seconds_bucket{le=\"0.001\"} 0\n"
    "chargeonce_gateway_request_duration_seconds_bucket{le=\"0.0025\"} 0\n"
    "chargeonce_gateway_request_duration_seconds_bucket{le=\"0.005\"} 1\n"
    "chargeonce_gateway_request_duration_seconds_bucket{le=\"0.01\"} 1\n"
    "chargeonce_gateway_request_duration_seconds_bucket{le=\"0.025\"} 1\n"
    "chargeonce_gateway_request_duration_seconds_bucket{le=\"0.05\"} 1\n"
    "chargeonce_gateway_request_duration_seconds_bucket{le=\"0.1\"} 1\n"
    "chargeonce_gateway_request_duration_seconds_bucket{le=\"0.25\"} 1\n"
    "chargeonce_gateway_request_duration_seconds_bucket{le=\"0.5\"} 1\n"
    "chargeonce_gateway_request_duration_seconds_bucket{le=\"1\"} 2\n"
    "chargeonce_gateway_request_duration_seconds_bucket{le=\"2.5\"} 2\n"
    "chargeonce_gateway_request_duration_seconds_bucket{le=\"5\"} 2\n"
    "chargeonce_gateway_request_duration_seconds_bucket{le=\"10\"} 2\n"
    "chargeonce_gateway_request_duration_seconds_bucket{le=\"+Inf\"} 3\n"
    "chargeonce_gateway_request_duration_seconds_sum 31.005\n"
    "chargeonce_gateway_request_duration_seconds_count 3\n"
    "# HELP chargeonce_in_flight Payments this process holds a lease on and "
    "works on now\n"
    "# TYPE chargeonce_in_flight gauge\n"
    "chargeonce_in_flight 2\n"
    "# HELP chargeonce_processing_oldest_seconds Age of the oldest payment "
    "still processing (all workers)\n"
    "# TYPE chargeonce_processing_oldest_seconds gauge\n"
    "chargeonce_processing_oldest_seconds 12.5\n"
    "# HELP chargeonce_outbox_unpublished Outbox rows not yet published (all "
    "workers)\n"
    "# TYPE chargeonce_outbox_unpublished gauge\n"
    "chargeonce_outbox_unpublished 12345678901\n"
    "# HELP chargeonce_outbox_oldest_unpublished_seconds Age of the oldest "
    "unpublished outbox row\n"
    "# TYPE chargeonce_outbox_oldest_unpublished_seconds gauge\n"
    "chargeonce_outbox_oldest_unpublished_seconds 1e-07\n"
    "# HELP chargeonce_outbox_parked Outbox rows the relay parked (each "
    "needs an operator)\n"
    "# TYPE chargeonce_outbox_parked gauge\n"
    "chargeonce_outbox_parked 0\n"
    "# HELP chargeonce_review_payments Payments in review (a person must "
    "decide)\n"
    "# TYPE chargeonce_review_payments gauge\n"
    "chargeonce_review_payments +Inf\n"
    "# HELP chargeonce_lease_takeovers_total Expired leases this process "
    "took over\n"
    "# TYPE chargeonce_lease_takeovers_total counter\n"
    "chargeonce_lease_takeovers_total 0\n"
    "# HELP chargeonce_settles_fenced_total Settles refused because the "
    "lease was lost\n"
    "# TYPE chargeonce_settles_fenced_total counter\n"
    "chargeonce_settles_fenced_total 0\n"
    "# HELP chargeonce_results_published_total Outbox rows this process "
    "published\n"
    "# TYPE chargeonce_results_published_total counter\n"
    "chargeonce_results_published_total 18446744073709551615\n"
    "# HELP chargeonce_consumer_lag Messages between the committed offset "
    "and the end, by partition\n"
    "# TYPE chargeonce_consumer_lag gauge\n"
    "chargeonce_consumer_lag{partition=\"0\"} 0\n"
    "chargeonce_consumer_lag{partition=\"2\"} 7\n"
    "# HELP chargeonce_consumer_group_joined 1 while the consumer has "
    "joined its group\n"
    "# TYPE chargeonce_consumer_group_joined gauge\n"
    "chargeonce_consumer_group_joined 1\n"
    "# HELP chargeonce_consumer_rejoins_total Times this process made its "
    "consumer again after the group fenced its own rejoin (a static member "
    "whose session ran out)\n"
    "# TYPE chargeonce_consumer_rejoins_total counter\n"
    "chargeonce_consumer_rejoins_total 0\n"
    "# HELP chargeonce_webhooks_total Gateway webhooks received, by what "
    "they did\n"
    "# TYPE chargeonce_webhooks_total counter\n"
    "chargeonce_webhooks_total{result=\"applied\"} 0\n"
    "chargeonce_webhooks_total{result=\"duplicate\"} 0\n"
    "chargeonce_webhooks_total{result=\"ignored\"} 0\n"
    "chargeonce_webhooks_total{result=\"rejected\"} 0\n"
    "chargeonce_webhooks_total{result=\"contradiction\"} 0\n"
    "chargeonce_webhooks_total{result=\"unknown_reference\"} 0\n"
    "# HELP chargeonce_invariant_violations Invariant violations the "
    "periodic audit found in what was written since it started, until "
    "repaired (0 when healthy; NaN until this process completed an "
    "audit)\n"
    "# TYPE chargeonce_invariant_violations gauge\n"
    "chargeonce_invariant_violations 0\n"
    "# HELP chargeonce_webhook_contradictions Open webhook "
    "contradictions (not acknowledged), from the database (NaN until an "
    "audit completed)\n"
    "# TYPE chargeonce_webhook_contradictions gauge\n"
    "chargeonce_webhook_contradictions -3\n"
    "# HELP chargeonce_intents_sifted_total Duplicate events recognised by "
    "their message's bytes, not decoded (also in intents_total as "
    "duplicate_event)\n"
    "# TYPE chargeonce_intents_sifted_total counter\n"
    "chargeonce_intents_sifted_total 0\n"
    "# HELP chargeonce_payments_reclaimed_total Settles that found their "
    "payment gone (the database lost committed writes) and claimed the "
    "intent again\n"
    "# TYPE chargeonce_payments_reclaimed_total counter\n"
    "chargeonce_payments_reclaimed_total 0\n"
    "# HELP chargeonce_db_refused_total Items the database refused for "
    "their data, alone: a claim or a result dead-lettered, a settle parked "
    "in review\n"
    "# TYPE chargeonce_db_refused_total counter\n"
    "chargeonce_db_refused_total{kind=\"claim\"} 0\n"
    "chargeonce_db_refused_total{kind=\"settle\"} 0\n"
    "chargeonce_db_refused_total{kind=\"result\"} 0\n"
    "chargeonce_db_refused_total{kind=\"probe\"} 0\n"
    "# HELP chargeonce_db_standbys Standbys streaming from the primary (-1: "
    "not visible to this role; refreshed periodically)\n"
    "# TYPE chargeonce_db_standbys gauge\n"
    "chargeonce_db_standbys 0\n"
    "# HELP chargeonce_db_synchronous_standbys Of them, those that confirm "
    "commits (sync or quorum); 0 with standbys: a failover may lose the "
    "last commits\n"
    "# TYPE chargeonce_db_synchronous_standbys gauge\n"
    "chargeonce_db_synchronous_standbys 0\n"
    "# HELP chargeonce_audit_last_success_timestamp_seconds Unix time at "
    "which this process's last complete invariant audit ended (0: none "
    "yet)\n"
    "# TYPE chargeonce_audit_last_success_timestamp_seconds gauge\n"
    "chargeonce_audit_last_success_timestamp_seconds 0\n"
    "# HELP chargeonce_audit_failures_total Periodic invariant audits that "
    "failed or timed out (the audit gauges keep the last complete audit's "
    "values)\n"
    "# TYPE chargeonce_audit_failures_total counter\n"
    "chargeonce_audit_failures_total 0\n"
    "# HELP chargeonce_audit_duration_seconds How long this process's last "
    "complete invariant audit took\n"
    "# TYPE chargeonce_audit_duration_seconds gauge\n"
    "chargeonce_audit_duration_seconds 0\n"
    "# HELP chargeonce_audit_leader 1 while this process is the database's "
    "auditor (it holds the audit lock and runs the periodic audit), 0 while "
    "another one is\n"
    "# TYPE chargeonce_audit_leader gauge\n"
    "chargeonce_audit_leader 0\n"
    "# HELP chargeonce_audit_rows_total Rows of the outbox, the ledger and "
    "the evidence the periodic audit read (each new row once, a late one "
    "when it committed)\n"
    "# TYPE chargeonce_audit_rows_total counter\n"
    "chargeonce_audit_rows_total 0\n"
    "# HELP chargeonce_build_info The version and commit this process runs "
    "(always 1)\n"
    "# TYPE chargeonce_build_info gauge\n"
    "chargeonce_build_info{version=\"1.2.3\",commit=\"0123abcd\\\"x\"} 1\n"
    "# HELP process_cpu_seconds_total Total user and system CPU time spent "
    "in seconds\n"
    "# TYPE process_cpu_seconds_total counter\n"
    "process_cpu_seconds_total 1.25\n"
    "# HELP process_open_fds Number of open file descriptors\n"
    "# TYPE process_open_fds gauge\n"
    "process_open_fds 17\n"
    "# HELP process_max_fds Maximum number of open file descriptors\n"
    "# TYPE process_max_fds gauge\n"
    "process_max_fds 1024\n"
    "# HELP process_virtual_memory_bytes Virtual memory size in bytes\n"
    "# TYPE process_virtual_memory_bytes gauge\n"
    "process_virtual_memory_bytes 123456789\n"
    "# HELP process_resident_memory_bytes Resident memory size in bytes\n"
    "# TYPE process_resident_memory_bytes gauge\n"
    "process_resident_memory_bytes 4096000\n"
    "# HELP process_start_time_seconds Start time of the process since unix "
    "epoch in seconds\n"
    "# TYPE process_start_time_seconds gauge\n"
    "process_start_time_seconds 1796000000.5\n";

/* A fixed reading of the process, for the pinned exposition. */
static bool fixed_process(struct metrics_process *p)
{
        p->cpu_seconds        = 1.25;
        p->open_fds           = 17;
        p->max_fds            = 1024;
        p->virtual_bytes      = 123456789;
        p->resident_bytes     = 4096000;
        p->start_time_seconds = 1796000000.5;
        return true;
}

static bool no_process(struct metrics_process *p)
{
        (void)p;
        return false;
}

static void test_render_fixed(void **state)
{
        struct metrics *m     = metrics_new();
        const int32_t parts[] = { 2, 0 };
        const int64_t lags[]  = { 7, 0 };
        struct buf b;

        (void)state;
        metrics_add(m, METRIC_INTENTS, MI_NEW, 3);
        metrics_inc(m, METRIC_INTENTS, MI_DEAD_LETTERED);
        metrics_add(m, METRIC_PAYMENTS_FINISHED, MF_SUCCEEDED, 2);
        metrics_inc(m, METRIC_GATEWAY_REQUESTS, MG_TIMEOUT);
        metrics_observe(m, METRIC_GATEWAY_DURATION, 0.005); /* le is <= */
        metrics_observe(m, METRIC_GATEWAY_DURATION, 1);
        metrics_observe(m, METRIC_GATEWAY_DURATION, 30);
        metrics_gauge_add(m, METRIC_IN_FLIGHT, 3);
        metrics_gauge_add(m, METRIC_IN_FLIGHT, -1);
        metrics_set(m, METRIC_PROCESSING_OLDEST, 12.5);
        metrics_set(m, METRIC_OUTBOX_UNPUBLISHED, 12345678901.0);
        metrics_set(m, METRIC_OUTBOX_OLDEST, 1e-7);
        metrics_set(m, METRIC_REVIEW_PAYMENTS, 1.0 / 0.0);
        metrics_add(m, METRIC_RESULTS_PUBLISHED, 0, UINT64_MAX);
        metrics_lag_set(m, parts, lags, 2);
        metrics_set(m, METRIC_CONSUMER_JOINED, 1);
        metrics_set(m, METRIC_WEBHOOK_CONTRADICTIONS, -3);
        metrics_set_build(m, "1.2.3", "0123abcd\"x"); /* escaped */
        metrics_set_process_reader(m, fixed_process);
        buf_init(&b, 1 << 20);
        assert_int_equal(metrics_render(m, &b), 0);
        assert_string_equal(buf_str(&b), expected);
        /* a buffer too small fails the render, never cuts it silently */
        buf_free(&b);
        buf_init(&b, 100);
        assert_int_equal(metrics_render(m, &b), -1);
        buf_free(&b);
        metrics_destroy(m);
}

/* A hidden metric leaves the exposition (a process without a consumer has
 * no consumer_group_joined, so that the not-joined alert never sees it);
 * process metrics that cannot be read are left out, not shown as 0. */
static void test_hide_and_absent(void **state)
{
        struct metrics *m = metrics_new();
        struct buf b;

        (void)state;
        metrics_set_process_reader(m, no_process);
        buf_init(&b, 1 << 20);
        assert_int_equal(metrics_render(m, &b), 0);
        assert_non_null(
            strstr(buf_str(&b), "\nchargeonce_consumer_group_joined 0\n"));
        assert_non_null(strstr(buf_str(&b),
                               "chargeonce_build_info{version=\"unknown\","
                               "commit=\"unknown\"} 1\n"));
        assert_null(strstr(buf_str(&b), "process_"));
        buf_free(&b);
        metrics_hide(m, METRIC_CONSUMER_JOINED);
        buf_init(&b, 1 << 20);
        assert_int_equal(metrics_render(m, &b), 0);
        assert_null(strstr(buf_str(&b), "consumer_group_joined"));
        assert_non_null(strstr(buf_str(&b), "chargeonce_consumer_lag"));
        buf_free(&b);
        metrics_destroy(m);
}

/* The real reading of this process, from /proc/self: plausible numbers
 * that move as they should. */
static void test_process_read(void **state)
{
        struct metrics_process p, q;
        struct timespec now;
        volatile double x = 0;
        int fds[8];

        (void)state;
        assert_true(metrics_process_read(&p));
        clock_gettime(CLOCK_REALTIME, &now);
        assert_true(p.cpu_seconds >= 0);
        assert_true(p.resident_bytes > 100 * 1024);
        assert_true(p.virtual_bytes >= p.resident_bytes);
        assert_true(p.open_fds >= 3);
        assert_true(p.max_fds >= p.open_fds);
        /* started within the last hour, not in the future */
        assert_true(p.start_time_seconds <= (double)now.tv_sec + 1);
        assert_true(p.start_time_seconds > (double)now.tv_sec - 3600);
        for (size_t i = 0; i < 8; i++)
                assert_true((fds[i] = dup(1)) >= 0);
        for (long i = 0; i < 60000000; i++)
                x += (double)i * 0.5; /* some CPU */
        assert_true(metrics_process_read(&q));
        assert_true(q.open_fds == p.open_fds + 8);
        assert_true(q.cpu_seconds > p.cpu_seconds);
        assert_true(q.start_time_seconds > p.start_time_seconds - 0.05 &&
                    q.start_time_seconds < p.start_time_seconds + 0.05);
        for (size_t i = 0; i < 8; i++)
                close(fds[i]);
}

/* A NULL registry takes every call and does nothing. */
static void test_null(void **state)
{
        struct buf b;
        int64_t age     = 99;
        const char *who = "x";

        (void)state;
        metrics_inc(NULL, METRIC_INTENTS, 99);
        metrics_set(NULL, METRIC_IN_FLIGHT, 1);
        metrics_gauge_add(NULL, METRIC_IN_FLIGHT, 1);
        metrics_observe(NULL, METRIC_GATEWAY_DURATION, 1);
        metrics_lag_set(NULL, NULL, NULL, 0);
        assert_int_equal(metrics_counter(NULL, METRIC_INTENTS, 0), 0);
        assert_true(metrics_gauge(NULL, METRIC_IN_FLIGHT) == 0);
        assert_int_equal(metrics_loop_register(NULL, "x"), -1);
        metrics_loop_beat(NULL, 0);
        metrics_loop_unregister(NULL, 0);
        assert_true(metrics_alive(NULL, 0, &age, &who));
        assert_int_equal(age, 0);
        assert_null(who);
        buf_init(&b, 1024);
        assert_int_equal(metrics_render(NULL, &b), 0);
        assert_int_equal(b.len, 0);
        buf_free(&b);
        metrics_destroy(NULL);
}

enum bad_call { BAD_LABEL, BAD_LABEL_NOLABEL, BAD_TYPE, BAD_GAUGE };

/* Runs the bad call in a child: true when the child aborted. */
static bool aborts(enum bad_call c)
{
        pid_t pid = fork();
        int st    = 0;

        assert_true(pid >= 0);
        if (pid == 0) {
                struct metrics *m = metrics_new();

                if (!freopen("/dev/null", "w", stderr))
                        _exit(3);
                switch (c) {
                case BAD_LABEL:
                        metrics_inc(m, METRIC_INTENTS, MI_DEAD_LETTERED + 1);
                        break;
                case BAD_LABEL_NOLABEL:
                        metrics_inc(m, METRIC_LEASE_TAKEOVERS, 1);
                        break;
                case BAD_TYPE:
                        metrics_inc(m, METRIC_IN_FLIGHT, 0);
                        break;
                case BAD_GAUGE:
                        metrics_set(m, METRIC_CONSUMER_LAG, 1);
                        break;
                }
                _exit(0);
        }
        assert_int_equal(waitpid(pid, &st, 0), pid);
        return WIFSIGNALED(st) && WTERMSIG(st) == SIGABRT;
}

static void test_bad_calls_abort(void **state)
{
        (void)state;
        assert_true(aborts(BAD_LABEL));
        assert_true(aborts(BAD_LABEL_NOLABEL));
        assert_true(aborts(BAD_TYPE));
        assert_true(aborts(BAD_GAUGE));
        /* the last valid index is fine */
        {
                struct metrics *m = metrics_new();
                metrics_inc(m, METRIC_INTENTS, MI_DEAD_LETTERED);
                metrics_inc(m, METRIC_WEBHOOKS, MW_UNKNOWN_REFERENCE);
                metrics_inc(m, METRIC_GATEWAY_REQUESTS, MG_TRANSPORT_ERROR);
                assert_int_equal(
                    metrics_counter(m, METRIC_WEBHOOKS, MW_UNKNOWN_REFERENCE),
                    1);
                metrics_destroy(m);
        }
}

static size_t count_lines(const char *s, const char *prefix)
{
        size_t n = 0;

        for (const char *p = s; (p = strstr(p, prefix)); p++)
                n++;
        return n;
}

/* The lag table is replaced whole; an empty one shows no partition;
 * past METRICS_LAG_MAX the rest is summed as "other". */
static void test_lag_table(void **state)
{
        struct metrics *m = metrics_new();
        static int32_t parts[METRICS_LAG_MAX + 3];
        static int64_t lags[METRICS_LAG_MAX + 3];
        const int32_t p1[] = { 5 };
        const int64_t l1[] = { 40 };
        struct buf b;

        (void)state;
        buf_init(&b, 1 << 22);
        metrics_lag_set(m, p1, l1, 1);
        assert_int_equal(metrics_render(m, &b), 0);
        assert_non_null(strstr(buf_str(&b),
                               "\nchargeonce_consumer_lag{partition=\"5\"} "
                               "40\n"));
        assert_int_equal(count_lines(buf_str(&b), "chargeonce_consumer_lag{"),
                         1);
        buf_reset(&b);
        metrics_lag_set(m, NULL, NULL, 0);
        assert_int_equal(metrics_render(m, &b), 0);
        assert_int_equal(count_lines(buf_str(&b), "chargeonce_consumer_lag{"),
                         0);
        assert_non_null(strstr(buf_str(&b),
                               "# TYPE chargeonce_consumer_lag gauge\n# HELP "
                               "chargeonce_consumer_group_joined"));
        buf_reset(&b);
        for (int i = 0; i < METRICS_LAG_MAX + 3; i++) {
                parts[i] = METRICS_LAG_MAX + 2 - i; /* reversed */
                lags[i]  = 1;
        }
        metrics_lag_set(m, parts, lags, METRICS_LAG_MAX + 3);
        assert_int_equal(metrics_render(m, &b), 0);
        assert_int_equal(count_lines(buf_str(&b), "chargeonce_consumer_lag{"),
                         METRICS_LAG_MAX + 1);
        assert_non_null(strstr(buf_str(&b),
                               "{partition=\"0\"} 1\nchargeonce_consumer_lag"
                               "{partition=\"1\"} 1\n"));
        assert_non_null(strstr(buf_str(&b), "{partition=\"other\"} 3\n# HELP"));
        buf_free(&b);
        metrics_destroy(m);
}

/* Loops beat; a silent one makes the process not alive; unregistered
 * loops do not count; at most 16. */
static void test_liveness(void **state)
{
        struct metrics *m = metrics_new();
        int64_t age;
        const char *who;
        int a, b, extra[16], n = 0;

        (void)state;
        assert_true(metrics_alive(m, 0, &age, &who)); /* none registered */
        a = metrics_loop_register(m, "pipeline");
        b = metrics_loop_register(m, "relay");
        assert_true(a >= 0 && b >= 0 && a != b);
        assert_true(metrics_alive(m, 1000, &age, &who));
        /* ages far apart: "pipeline" beats just before it is checked
         * against 300 ms; with 40 ms, the test preempted that long
         * between the beat and the check would fail */
        usleep(600 * 1000);
        metrics_loop_beat(m, a);
        assert_false(metrics_alive(m, 300, &age, &who));
        assert_string_equal(who, "relay");
        assert_true(age >= 600);
        metrics_loop_unregister(m, b);
        assert_true(metrics_alive(m, 300, &age, &who));
        assert_string_equal(who, "pipeline");
        /* the freed slot is taken again; past 16 loops: -1 */
        while (n < 16 && (extra[n] = metrics_loop_register(m, "x")) >= 0)
                n++;
        assert_int_equal(n, 15);
        metrics_loop_unregister(m, a);
        for (int i = 0; i < n; i++)
                metrics_loop_unregister(m, extra[i]);
        metrics_loop_beat(m, -1); /* a failed register's -1 is harmless */
        assert_true(metrics_alive(m, 0, &age, &who));
        metrics_destroy(m);
}

int main(void)
{
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_threads_exact),
                cmocka_unit_test(test_render_fixed),
                cmocka_unit_test(test_hide_and_absent),
                cmocka_unit_test(test_process_read),
                cmocka_unit_test(test_null),
                cmocka_unit_test(test_bad_calls_abort),
                cmocka_unit_test(test_lag_table),
                cmocka_unit_test(test_liveness),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
