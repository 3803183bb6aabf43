/* SPDX-License-Identifier: Apache-2.0 */
/*
 * metrics: chargeonce's Prometheus metrics, one fixed set (metrics.def),
 * rendered in the text exposition format 0.0.4. Pure (libc and C11
 * atomics); every call is thread-safe and lock-free but metrics_render and
 * the lag table (a mutex).
 *
 * A struct metrics belongs to one process run (cmd/ makes it and hands it
 * to every engine through its options). Every call accepts m == NULL and
 * then does nothing, so a library test needs no registry.
 *
 * Counters are exact: incremented once per event at the place the event
 * becomes true (e.g. payments_finished after the settle committed), never
 * estimated. Gauges hold the last value set.
 */
#ifndef CO_UTIL_METRICS_H
#define CO_UTIL_METRICS_H

#include "util/buf.h"
#include "util/compiler.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* The label values of a metric with labels not known in advance. */
#define METRICS_DYNAMIC NULL

enum metric_id {
#define CO_METRIC(id, name, type, help, label, values) METRIC_##id,
#include "util/metrics.def"
#undef CO_METRIC
        METRIC__COUNT
};

/* Label value indexes, in the order of metrics.def. */
enum metric_intent_outcome {
        MI_NEW = 0,
        MI_DUPLICATE_EVENT,
        MI_IN_PROGRESS,
        MI_REPLAYED,
        MI_CONFLICT,
        MI_REJECTED,
        MI_DEAD_LETTERED,
};
enum metric_finished_status { MF_SUCCEEDED = 0, MF_FAILED, MF_REVIEW };
enum metric_gateway_result {
        MG_SUCCEEDED = 0,
        MG_FAILED,
        MG_IN_PROGRESS,
        MG_RATE_LIMITED,
        MG_UNKNOWN, /* an HTTP answer that is no evidence (5xx, garbage) */
        MG_DEFECT,
        MG_NOT_FOUND,
        MG_TIMEOUT,
        MG_TRANSPORT_ERROR,
};
enum metric_webhook_result {
        MW_APPLIED = 0,
        MW_DUPLICATE,
        MW_IGNORED,
        MW_REJECTED,
        MW_CONTRADICTION,
        MW_UNKNOWN_REFERENCE,
};
enum metric_db_refused { MR_CLAIM = 0, MR_SETTLE, MR_RESULT, MR_PROBE };

/* Histogram bucket upper bounds in seconds (+Inf is implicit). */
#define METRICS_BUCKETS                                                        \
        0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10
/* Most partitions the lag gauge keeps (more are summed in partition="other").
 */
#define METRICS_LAG_MAX 1024

struct metrics;

/* A new registry, every counter and gauge 0. Free with metrics_destroy. */
struct metrics *metrics_new(void);
void metrics_destroy(struct metrics *m);

/*
 * Adds n to counter id at label value index `label` (0 for a metric
 * without labels). An index out of range is a bug: it aborts.
 */
void metrics_add(struct metrics *m, enum metric_id id, unsigned label,
                 uint64_t n);
static inline void metrics_inc(struct metrics *m, enum metric_id id,
                               unsigned label)
{
        metrics_add(m, id, label, 1);
}
/* The current value of a counter (tests, the exactness check). */
uint64_t metrics_counter(const struct metrics *m, enum metric_id id,
                         unsigned label);

/* Sets / adds to / reads a gauge without labels. */
void metrics_set(struct metrics *m, enum metric_id id, double v);
void metrics_gauge_add(struct metrics *m, enum metric_id id, double d);
double metrics_gauge(const struct metrics *m, enum metric_id id);

/* Records one observation (seconds) in histogram id. */
void metrics_observe(struct metrics *m, enum metric_id id, double seconds);

/*
 * Replaces the whole consumer_lag table: n partitions with their lag (an
 * empty table after a revoke). Partitions not in it are no longer shown.
 */
void metrics_lag_set(struct metrics *m, const int32_t *partitions,
                     const int64_t *lags, size_t n);

/*
 * Liveness: each long-running loop registers once (a name such as
 * "pipeline") and beats on every turn; metrics_alive says whether every
 * registered loop has beaten within max_age_ms (the slowest one's age in
 * *oldest_ms and its name in *who, may be NULL). A loop that ends on
 * purpose unregisters. Up to 16 loops.
 */
int metrics_loop_register(struct metrics *m, const char *name);
void metrics_loop_beat(struct metrics *m, int loop);
void metrics_loop_unregister(struct metrics *m, int loop);
bool metrics_alive(const struct metrics *m, int64_t max_age_ms,
                   int64_t *oldest_ms, const char **who);

/*
 * Leaves metric id out of the exposition: for a metric this process has
 * nothing to say about (chargeonce_consumer_group_joined in a process
 * that runs no consumer, so that an alert on it only sees consumers).
 * Main thread, before the first render.
 */
void metrics_hide(struct metrics *m, enum metric_id id);

/*
 * chargeonce_build_info{version,commit} 1: what this process runs
 * (default "unknown" for both). Copies the strings. Main thread, before
 * the first render.
 */
void metrics_set_build(struct metrics *m, const char *version,
                       const char *commit);

/*
 * The standard process metrics (as Prometheus' client libraries name
 * them): process_cpu_seconds_total, process_resident_memory_bytes,
 * process_virtual_memory_bytes, process_open_fds, process_max_fds,
 * process_start_time_seconds (Unix seconds).
 */
struct metrics_process {
        double cpu_seconds, resident_bytes, virtual_bytes;
        double open_fds, max_fds, start_time_seconds;
};

/* Reads them for this process (Linux: /proc/self/stat, /proc/self/fd,
 * getrlimit, the boot-time clock; nothing outside /proc/self). False when
 * they cannot be read (then they are not shown). Any thread. */
bool metrics_process_read(struct metrics_process *out);

/* Where a render takes them from (default metrics_process_read; a test
 * gives a fixed reader). */
void metrics_set_process_reader(struct metrics *m,
                                bool (*read)(struct metrics_process *out));

/*
 * Appends the exposition (format 0.0.4: # HELP, # TYPE, one line per
 * label value, histograms with _bucket{le}, _sum, _count) to out: every
 * metric of metrics.def (but the hidden ones), then
 * chargeonce_build_info and the process_* metrics. 0, or -1 when out
 * failed (buf.h).
 */
int metrics_render(const struct metrics *m, struct buf *out) CO_MUST_CHECK;

#endif
