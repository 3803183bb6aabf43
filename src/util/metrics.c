/* SPDX-License-Identifier: Apache-2.0 */
/*
 * metrics: the registry of metrics.def and its text exposition (see
 * metrics.h). Counters and gauges are C11 atomics, so the engines' threads
 * never wait on each other or on a scrape.
 *
 * Histograms are lock-free too: a writer bumps `begun`, adds to its bucket
 * and to the sum, then bumps `ended` (a seqlock for many writers). The
 * reader (metrics_render) reads `ended`, the buckets and the sum, then
 * `begun`: equal means no observation was half done or started meanwhile,
 * so _sum matches the buckets. It retries a few times; if observations
 * never pause it takes the last read as it is. Either way _count is the
 * sum of the buckets it printed, so _count always equals the +Inf bucket.
 *
 * The consumer_lag table sits under a mutex (it is replaced whole, about
 * once a second). Loop heartbeats use the monotonic clock.
 *
 * Must never: block a counting thread on a scrape; print a number
 * Prometheus cannot parse; drop a label value of metrics.def from the
 * output (each is shown from the start, at 0).
 */
#include "util/metrics.h"
#include "util/timeutil.h"
#include "util/xalloc.h"

#include <dirent.h>
#include <fcntl.h>
#include <inttypes.h>
#include <math.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

enum metric_type { COUNTER, GAUGE, HISTOGRAM };

struct metric_desc {
        const char *name, *help, *label, *values;
        enum metric_type type;
};

static const struct metric_desc descs[METRIC__COUNT] = {
#define CO_METRIC(id, name, type, help, label, values)                         \
        [METRIC_##id] = { name, help, label, values, type },
#include "util/metrics.def"
#undef CO_METRIC
};

static const double bucket_bounds[] = { METRICS_BUCKETS };
#define N_BOUNDS      (sizeof(bucket_bounds) / sizeof(*bucket_bounds))
#define N_LOOPS       16
#define LOOP_NAME_MAX 32
/* Reads of a histogram before its render takes what it read. */
#define HIST_READ_TRIES 64

struct hist {
        atomic_uint_fast64_t begun, ended;
        atomic_uint_fast64_t buckets[N_BOUNDS + 1]; /* last: +Inf, not
                                                       cumulative here */
        _Atomic double sum;
};

struct loop_slot {
        atomic_bool used;
        atomic_int_fast64_t beat_ms;
        char name[LOOP_NAME_MAX];
};

struct metrics {
        /* per metric: where its values start in counters[] (counters),
         * how many label values it has (1 without a label) */
        size_t first[METRIC__COUNT];
        unsigned n_values[METRIC__COUNT];
        char **value_names[METRIC__COUNT]; /* NULL without a label */
        atomic_uint_fast64_t *counters;
        _Atomic double gauges[METRIC__COUNT];
        struct hist hists[METRIC__COUNT];

        pthread_mutex_t lag_mu; /* guards the lag table */
        int32_t *lag_parts;
        int64_t *lag_values;
        size_t lag_n;

        pthread_mutex_t loop_mu; /* register / unregister */
        struct loop_slot loops[N_LOOPS];

        bool hidden[METRIC__COUNT]; /* metrics_hide */
        char *version, *commit;     /* chargeonce_build_info */
        bool (*process)(struct metrics_process *out);
};

/* The label values "a|b|c" of metric id as a NULL-terminated array. */
static char **split_values(const char *values, unsigned *n)
{
        char **v;
        const char *p = values;
        unsigned k    = 1;

        for (const char *q = values; *q; q++)
                k += *q == '|';
        v = xcalloc(k + 1, sizeof(*v));
        for (unsigned i = 0; i < k; i++) {
                const char *end = strchr(p, '|');
                size_t len      = end ? (size_t)(end - p) : strlen(p);

                v[i] = xstrndup(p, len);
                p += len + 1;
        }
        *n = k;
        return v;
}

struct metrics *metrics_new(void)
{
        struct metrics *m = xcalloc(1, sizeof(*m));
        size_t total      = 0;

        for (int id = 0; id < METRIC__COUNT; id++) {
                const struct metric_desc *d = &descs[id];

                m->n_values[id] = 1;
                if (d->label && d->values)
                        m->value_names[id] =
                            split_values(d->values, &m->n_values[id]);
                m->first[id] = total;
                if (d->type == COUNTER)
                        total += m->n_values[id];
                atomic_init(&m->gauges[id], 0.0);
                atomic_init(&m->hists[id].sum, 0.0);
        }
        m->counters = xcalloc(total ? total : 1, sizeof(*m->counters));
        pthread_mutex_init(&m->lag_mu, NULL);
        pthread_mutex_init(&m->loop_mu, NULL);
        m->version = xstrdup("unknown");
        m->commit  = xstrdup("unknown");
        m->process = metrics_process_read;
        return m;
}

void metrics_hide(struct metrics *m, enum metric_id id)
{
        if (m && (int)id >= 0 && id < METRIC__COUNT)
                m->hidden[id] = true;
}

void metrics_set_build(struct metrics *m, const char *version,
                       const char *commit)
{
        if (!m)
                return;
        free(m->version);
        free(m->commit);
        m->version = xstrdup(version && *version ? version : "unknown");
        m->commit  = xstrdup(commit && *commit ? commit : "unknown");
}

void metrics_set_process_reader(struct metrics *m,
                                bool (*read)(struct metrics_process *out))
{
        if (m)
                m->process = read;
}

/*
 * /proc/self/stat after the command's ")" (the name may hold spaces and
 * parentheses): field 3 is the state; utime 14, stime 15, starttime 22
 * (clock ticks after boot), vsize 23 (bytes), rss 24 (pages).
 */
bool metrics_process_read(struct metrics_process *out)
{
        char buf[1024], *p, *end;
        unsigned long long f[25] = { 0 };
        long tck = sysconf(_SC_CLK_TCK), page = sysconf(_SC_PAGESIZE);
        struct timespec boot, wall;
        struct rlimit rl;
        ssize_t n;
        int fd, field = 3;
        DIR *d;

        memset(out, 0, sizeof(*out));
        if (tck <= 0 || page <= 0)
                return false;
        if ((fd = open("/proc/self/stat", O_RDONLY | O_CLOEXEC)) < 0)
                return false;
        n = read(fd, buf, sizeof(buf) - 1);
        close(fd);
        if (n <= 0)
                return false;
        buf[n] = '\0';
        if (!(p = strrchr(buf, ')')))
                return false;
        for (p++; field <= 24 && *p; field++) {
                while (*p == ' ')
                        p++;
                f[field] = strtoull(p, &end, 10);
                if (end == p && field != 3)
                        return false;
                p = end;
                while (*p && *p != ' ')
                        p++; /* the state (field 3) is a letter */
        }
        if (field <= 24)
                return false;
        out->cpu_seconds    = (double)(f[14] + f[15]) / (double)tck;
        out->virtual_bytes  = (double)f[23];
        out->resident_bytes = (double)f[24] * (double)page;
        /* the start in wall time: now less the time since then (boot
         * clock), so /proc/stat (hidden by ProcSubset=pid) is not needed */
        if (clock_gettime(CLOCK_BOOTTIME, &boot) != 0 ||
            clock_gettime(CLOCK_REALTIME, &wall) != 0)
                return false;
        out->start_time_seconds =
            (double)wall.tv_sec + (double)wall.tv_nsec / 1e9 -
            ((double)boot.tv_sec + (double)boot.tv_nsec / 1e9 -
             (double)f[22] / (double)tck);
        if (getrlimit(RLIMIT_NOFILE, &rl) == 0)
                out->max_fds =
                    rl.rlim_cur == RLIM_INFINITY ? 0 : (double)rl.rlim_cur;
        if ((d = opendir("/proc/self/fd"))) {
                struct dirent *e;
                double k = 0;

                while ((e = readdir(d)))
                        k += e->d_name[0] != '.';
                closedir(d);
                out->open_fds = k - 1; /* less the one opendir holds */
        }
        return true;
}

void metrics_destroy(struct metrics *m)
{
        if (!m)
                return;
        for (int id = 0; id < METRIC__COUNT; id++) {
                char **v = m->value_names[id];

                for (size_t i = 0; v && v[i]; i++)
                        free(v[i]);
                free(v);
        }
        free(m->counters);
        free(m->lag_parts);
        free(m->lag_values);
        free(m->version);
        free(m->commit);
        pthread_mutex_destroy(&m->lag_mu);
        pthread_mutex_destroy(&m->loop_mu);
        free(m);
}

/* A call that names a metric of another type, or a label value out of
 * range, is a bug of the caller: stop before counting wrong. */
static void check(const struct metrics *m, enum metric_id id,
                  enum metric_type type, unsigned label)
{
        if ((unsigned)id >= METRIC__COUNT || descs[id].type != type ||
            label >= m->n_values[id]) {
                fprintf(stderr, "metrics: bad call for metric %d label %u\n",
                        (int)id, label);
                abort();
        }
}

void metrics_add(struct metrics *m, enum metric_id id, unsigned label,
                 uint64_t n)
{
        if (!m)
                return;
        check(m, id, COUNTER, label);
        atomic_fetch_add_explicit(&m->counters[m->first[id] + label], n,
                                  memory_order_relaxed);
}

uint64_t metrics_counter(const struct metrics *m, enum metric_id id,
                         unsigned label)
{
        if (!m)
                return 0;
        check(m, id, COUNTER, label);
        return atomic_load_explicit(&m->counters[m->first[id] + label],
                                    memory_order_relaxed);
}

/* Adds d to an atomic double (a compare-and-swap loop). */
static void double_add(_Atomic double *a, double d)
{
        double old = atomic_load_explicit(a, memory_order_relaxed);

        while (!atomic_compare_exchange_weak_explicit(
            a, &old, old + d, memory_order_relaxed, memory_order_relaxed))
                ;
}

/* Gauges with a dynamic label are set through their own call. */
static void check_gauge(const struct metrics *m, enum metric_id id)
{
        check(m, id, GAUGE, 0);
        if (descs[id].label) {
                fprintf(stderr, "metrics: gauge %s has a label\n",
                        descs[id].name);
                abort();
        }
}

void metrics_set(struct metrics *m, enum metric_id id, double v)
{
        if (!m)
                return;
        check_gauge(m, id);
        atomic_store_explicit(&m->gauges[id], v, memory_order_relaxed);
}

void metrics_gauge_add(struct metrics *m, enum metric_id id, double d)
{
        if (!m)
                return;
        check_gauge(m, id);
        double_add(&m->gauges[id], d);
}

double metrics_gauge(const struct metrics *m, enum metric_id id)
{
        if (!m)
                return 0;
        check_gauge(m, id);
        return atomic_load_explicit(&m->gauges[id], memory_order_relaxed);
}

void metrics_observe(struct metrics *m, enum metric_id id, double seconds)
{
        struct hist *h;
        size_t b = 0;

        if (!m)
                return;
        check(m, id, HISTOGRAM, 0);
        if (isnan(seconds))
                return; /* no bucket holds it; a clock bug, not a value */
        h = &m->hists[id];
        while (b < N_BOUNDS && seconds > bucket_bounds[b])
                b++;
        atomic_fetch_add_explicit(&h->begun, 1, memory_order_relaxed);
        atomic_thread_fence(memory_order_release);
        atomic_fetch_add_explicit(&h->buckets[b], 1, memory_order_relaxed);
        double_add(&h->sum, seconds);
        atomic_fetch_add_explicit(&h->ended, 1, memory_order_release);
}

/* A snapshot of h: per-bucket counts (not cumulative) and the sum. */
static void hist_read(const struct hist *h, uint64_t *counts, double *sum)
{
        struct hist *w = (struct hist *)h; /* atomics: loads only */

        for (int tries = 0; tries < HIST_READ_TRIES; tries++) {
                uint64_t e =
                    atomic_load_explicit(&w->ended, memory_order_acquire);

                for (size_t b = 0; b <= N_BOUNDS; b++)
                        counts[b] = atomic_load_explicit(&w->buckets[b],
                                                         memory_order_relaxed);
                *sum = atomic_load_explicit(&w->sum, memory_order_relaxed);
                atomic_thread_fence(memory_order_acquire);
                if (atomic_load_explicit(&w->begun, memory_order_relaxed) == e)
                        return;
        }
}

/* ------------------------------------------------------------------ */
/* consumer lag                                                         */

void metrics_lag_set(struct metrics *m, const int32_t *partitions,
                     const int64_t *lags, size_t n)
{
        int32_t *p = NULL;
        int64_t *v = NULL;

        if (!m)
                return;
        if (n) {
                p = xmalloc(n * sizeof(*p));
                v = xmalloc(n * sizeof(*v));
                memcpy(p, partitions, n * sizeof(*p));
                memcpy(v, lags, n * sizeof(*v));
        }
        pthread_mutex_lock(&m->lag_mu);
        free(m->lag_parts);
        free(m->lag_values);
        m->lag_parts  = p;
        m->lag_values = v;
        m->lag_n      = n;
        pthread_mutex_unlock(&m->lag_mu);
}

/* ------------------------------------------------------------------ */
/* liveness                                                             */

int metrics_loop_register(struct metrics *m, const char *name)
{
        int slot = -1;

        if (!m)
                return -1;
        pthread_mutex_lock(&m->loop_mu);
        for (int i = 0; i < N_LOOPS && slot < 0; i++) {
                struct loop_slot *l = &m->loops[i];

                if (atomic_load(&l->used))
                        continue;
                snprintf(l->name, sizeof(l->name), "%s", name ? name : "?");
                atomic_store(&l->beat_ms, time_mono_ms());
                atomic_store(&l->used, true);
                slot = i;
        }
        pthread_mutex_unlock(&m->loop_mu);
        return slot;
}

void metrics_loop_beat(struct metrics *m, int loop)
{
        if (!m || loop < 0 || loop >= N_LOOPS)
                return;
        atomic_store_explicit(&m->loops[loop].beat_ms, time_mono_ms(),
                              memory_order_relaxed);
}

void metrics_loop_unregister(struct metrics *m, int loop)
{
        if (!m || loop < 0 || loop >= N_LOOPS)
                return;
        pthread_mutex_lock(&m->loop_mu);
        atomic_store(&m->loops[loop].used, false);
        pthread_mutex_unlock(&m->loop_mu);
}

bool metrics_alive(const struct metrics *m, int64_t max_age_ms,
                   int64_t *oldest_ms, const char **who)
{
        int64_t now = time_mono_ms(), worst = -1;
        const char *name = NULL;

        if (oldest_ms)
                *oldest_ms = 0;
        if (who)
                *who = NULL;
        if (!m)
                return true;
        for (int i = 0; i < N_LOOPS; i++) {
                const struct loop_slot *l = &m->loops[i];
                int64_t age;

                if (!atomic_load(&l->used))
                        continue;
                age = now -
                      atomic_load_explicit(&l->beat_ms, memory_order_relaxed);
                if (age > worst) {
                        worst = age;
                        name  = l->name;
                }
        }
        if (worst < 0)
                return true;
        if (oldest_ms)
                *oldest_ms = worst;
        if (who)
                *who = name;
        return worst <= max_age_ms;
}

/* ------------------------------------------------------------------ */
/* exposition                                                           */

/*
 * A number as Prometheus parses it: integers (up to 2^53) without an
 * exponent or a fraction, others in the shortest form that reads back
 * the same, +Inf, -Inf, NaN.
 */
static void fmt_double(double v, char *out, size_t outsz)
{
        if (isnan(v)) {
                snprintf(out, outsz, "NaN");
        } else if (isinf(v)) {
                snprintf(out, outsz, v > 0 ? "+Inf" : "-Inf");
        } else if (v == floor(v) && fabs(v) < 9007199254740992.0) {
                snprintf(out, outsz, "%.0f", v == 0 ? 0.0 : v);
        } else {
                snprintf(out, outsz, "%.15g", v);
                if (strtod(out, NULL) != v)
                        snprintf(out, outsz, "%.17g", v);
        }
}

/* Appends s escaped: always \\ and \n; \" too inside a label value. */
static void append_escaped(struct buf *out, const char *s, bool quote)
{
        for (; *s; s++) {
                if (*s == '\\')
                        buf_append_str(out, "\\\\");
                else if (*s == '\n')
                        buf_append_str(out, "\\n");
                else if (quote && *s == '"')
                        buf_append_str(out, "\\\"");
                else
                        buf_append_char(out, *s);
        }
}

static void render_head(struct buf *out, const struct metric_desc *d)
{
        static const char *types[] = { "counter", "gauge", "histogram" };

        buf_appendf(out, "# HELP %s ", d->name);
        append_escaped(out, d->help, false);
        buf_appendf(out, "\n# TYPE %s %s\n", d->name, types[d->type]);
}

/* One sample line: name[suffix]{label="value"} number. */
static void render_line(struct buf *out, const char *name, const char *suffix,
                        const char *label, const char *value, const char *num)
{
        buf_appendf(out, "%s%s", name, suffix);
        if (label) {
                buf_appendf(out, "{%s=\"", label);
                append_escaped(out, value, true);
                buf_append_str(out, "\"}");
        }
        buf_appendf(out, " %s\n", num);
}

static void render_sample(struct buf *out, const char *name, const char *suffix,
                          const char *label, const char *value, double v)
{
        char num[40];

        fmt_double(v, num, sizeof(num));
        render_line(out, name, suffix, label, value, num);
}

/* Counters print as exact integers, however large. */
static void render_counter(const struct metrics *m, struct buf *out, int id)
{
        const struct metric_desc *d = &descs[id];
        char **names                = m->value_names[id];
        char num[24];

        for (unsigned i = 0; i < m->n_values[id]; i++) {
                snprintf(
                    num, sizeof(num), "%" PRIu64,
                    (uint64_t)atomic_load_explicit(
                        &m->counters[m->first[id] + i], memory_order_relaxed));
                render_line(out, d->name, "", names ? d->label : NULL,
                            names ? names[i] : NULL, num);
        }
}

static void render_histogram(const struct metrics *m, struct buf *out, int id)
{
        const char *name = descs[id].name;
        uint64_t counts[N_BOUNDS + 1], cum = 0;
        double sum = 0;
        char le[40];

        hist_read(&m->hists[id], counts, &sum);
        for (size_t b = 0; b <= N_BOUNDS; b++) {
                cum += counts[b];
                fmt_double(b < N_BOUNDS ? bucket_bounds[b] : INFINITY, le,
                           sizeof(le));
                render_sample(out, name, "_bucket", "le", le, (double)cum);
        }
        render_sample(out, name, "_sum", NULL, NULL, sum);
        render_sample(out, name, "_count", NULL, NULL, (double)cum);
}

static int cmp_part(const void *a, const void *b)
{
        const int64_t *x = a, *y = b; /* {partition, lag} pairs */

        return (x[0] > y[0]) - (x[0] < y[0]);
}

/* consumer_lag: one line per partition, in partition order; past
 * METRICS_LAG_MAX the rest summed in partition="other". */
static void render_lag(const struct metrics *m, struct buf *out, int id)
{
        struct metrics *w  = (struct metrics *)m; /* the mutex only */
        int64_t(*pairs)[2] = NULL;
        int64_t other      = 0;
        size_t n;
        char part[16];

        pthread_mutex_lock(&w->lag_mu);
        n = m->lag_n;
        if (n) {
                pairs = xmalloc(n * sizeof(*pairs));
                for (size_t i = 0; i < n; i++) {
                        pairs[i][0] = m->lag_parts[i];
                        pairs[i][1] = m->lag_values[i];
                }
        }
        pthread_mutex_unlock(&w->lag_mu);
        if (n)
                qsort(pairs, n, sizeof(*pairs), cmp_part);
        for (size_t i = 0; i < n; i++) {
                if (i >= METRICS_LAG_MAX) {
                        other += pairs[i][1];
                        continue;
                }
                snprintf(part, sizeof(part), "%" PRId64, pairs[i][0]);
                render_sample(out, descs[id].name, "", descs[id].label, part,
                              (double)pairs[i][1]);
        }
        if (n > METRICS_LAG_MAX)
                render_sample(out, descs[id].name, "", descs[id].label, "other",
                              (double)other);
        free(pairs);
}

/* chargeonce_build_info{version="...",commit="..."} 1 */
static void render_build(const struct metrics *m, struct buf *out)
{
        static const struct metric_desc d = {
                "chargeonce_build_info",
                "The version and commit this process runs (always 1)", NULL,
                NULL, GAUGE
        };

        render_head(out, &d);
        buf_append_str(out, "chargeonce_build_info{version=\"");
        append_escaped(out, m->version, true);
        buf_append_str(out, "\",commit=\"");
        append_escaped(out, m->commit, true);
        buf_append_str(out, "\"} 1\n");
}

/* The process_* metrics, in the order render_process shows them. */
static const struct metric_desc process_descs[] = {
        { "process_cpu_seconds_total",
          "Total user and system CPU time spent in seconds", NULL, NULL,
          COUNTER },
        { "process_open_fds", "Number of open file descriptors", NULL, NULL,
          GAUGE },
        { "process_max_fds", "Maximum number of open file descriptors", NULL,
          NULL, GAUGE },
        { "process_virtual_memory_bytes", "Virtual memory size in bytes", NULL,
          NULL, GAUGE },
        { "process_resident_memory_bytes", "Resident memory size in bytes",
          NULL, NULL, GAUGE },
        { "process_start_time_seconds",
          "Start time of the process since unix epoch in seconds", NULL, NULL,
          GAUGE },
};

/* The process_* metrics, when they can be read. */
static void render_process(const struct metrics *m, struct buf *out)
{
        struct metrics_process p;
        double v[sizeof(process_descs) / sizeof(*process_descs)];

        if (!m->process || !m->process(&p))
                return;
        v[0] = p.cpu_seconds;
        v[1] = p.open_fds;
        v[2] = p.max_fds;
        v[3] = p.virtual_bytes;
        v[4] = p.resident_bytes;
        v[5] = p.start_time_seconds;
        for (size_t i = 0; i < sizeof(v) / sizeof(*v); i++) {
                render_head(out, &process_descs[i]);
                render_sample(out, process_descs[i].name, "", NULL, NULL, v[i]);
        }
}

int metrics_render(const struct metrics *m, struct buf *out)
{
        if (!m)
                return buf_failed(out) ? -1 : 0;
        for (int id = 0; id < METRIC__COUNT; id++) {
                const struct metric_desc *d = &descs[id];

                if (m->hidden[id])
                        continue;
                render_head(out, d);
                if (d->type == COUNTER)
                        render_counter(m, out, id);
                else if (d->type == HISTOGRAM)
                        render_histogram(m, out, id);
                else if (d->label) /* METRICS_DYNAMIC */
                        render_lag(m, out, id);
                else
                        render_sample(
                            out, d->name, "", NULL, NULL,
                            atomic_load_explicit(&m->gauges[id],
                                                 memory_order_relaxed));
        }
        render_build(m, out);
        render_process(m, out);
        return buf_failed(out) ? -1 : 0;
}
