/* SPDX-License-Identifier: Apache-2.0 */
/*
 * scale_rebalance: how long each rebalance of test_scale took, measured
 * from the consumers' own log lines. chargeonce's rebalance callback
 * (src/kafka/consumer.c) logs "assigned N partition(s)" and "revoking N
 * partition(s)" with a millisecond wall-clock time stamp; summing them per
 * process (eager: a revoke gives back all, cooperative: only the moved
 * ones; a process that ends owns nothing from that moment) gives, at any
 * time, how many partitions the live processes own. For each event of the
 * run (a start, a kill, a SIGTERM, a join), until the next one:
 *
 *   first / last   the first and the last callback after the event: the
 *                  group's reaction (after a kill -9, the session timeout)
 *                  and the end of the rebalance
 *   rebalance      last - first: the rebalance itself
 *   short          how long fewer than all partitions were owned
 *   whole          when every partition was owned again, after the event
 *
 * A callback is logged when librdkafka hands the assignment over; fetching
 * starts right after it, so the figures are within a poll (100 ms) of when
 * consumption stops and resumes.
 */
#include "scale.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

struct cb {
        int64_t t;
        int life;
        int delta;  /* +assigned, -revoked */
        bool reset; /* the process ended: it owns nothing */
};

static int by_time(const void *a, const void *b)
{
        const struct cb *x = a, *y = b;
        return x->t < y->t ? -1 : x->t > y->t;
}

/* "2026-12-01T07:05:00.123Z" -> ms since the epoch, or -1 */
static int64_t parse_ts(const char *ts)
{
        struct tm tm;
        int ms;

        memset(&tm, 0, sizeof(tm));
        if (sscanf(ts, "%d-%d-%dT%d:%d:%d.%dZ", &tm.tm_year, &tm.tm_mon,
                   &tm.tm_mday, &tm.tm_hour, &tm.tm_min, &tm.tm_sec, &ms) != 7)
                return -1;
        tm.tm_year -= 1900;
        tm.tm_mon -= 1;
        return (int64_t)timegm(&tm) * 1000 + ms;
}

/* Appends the callbacks of one process's log. */
static void read_log(const struct scale_life *lf, int life, struct cb **cbs,
                     int *n, int *cap)
{
        FILE *f = fopen(lf->log, "r");
        char line[8192];

        if (!f)
                return;
        while (fgets(line, sizeof(line), f)) {
                json_t *j;
                const char *msg, *ts;
                int cnt;
                bool assigned;

                if (!strstr(line, "\"component\":\"kafka\"") ||
                    (!strstr(line, "assigned ") && !strstr(line, "revoking ")))
                        continue;
                j = json_loads(line, 0, NULL);
                if (!j)
                        continue;
                msg      = json_string_value(json_object_get(j, "msg"));
                ts       = json_string_value(json_object_get(j, "ts"));
                assigned = msg && !strncmp(msg, "assigned ", 9);
                if (msg && ts && sscanf(msg + 9, "%d partition", &cnt) == 1 &&
                    (assigned || !strncmp(msg, "revoking ", 9))) {
                        if (*n == *cap) {
                                *cap *= 2;
                                *cbs =
                                    realloc(*cbs, sizeof(**cbs) * (size_t)*cap);
                                SC_CHECK(*cbs, "oom");
                        }
                        (*cbs)[(*n)++] =
                            (struct cb){ parse_ts(ts), life,
                                         assigned ? cnt : -cnt, false };
                }
                json_decref(j);
        }
        fclose(f);
}

static double secs(int64_t ms)
{
        return (double)ms / 1000.0;
}

struct window {
        int calls, min;
        int64_t first, last, whole, short_ms; /* ms after the event; -1 */
};

/* Plays the callbacks from *c up to `to` (the next event) on owned and
 * *total; what the window [from, to) saw. */
static struct window play(const struct cb *cbs, int n, int *c, int64_t from,
                          int64_t to, int *owned, int *total, int partitions)
{
        struct window w = { 0, *total, -1, -1, -1, 0 };
        int64_t prev    = from;

        for (; *c < n && cbs[*c].t < to; (*c)++) {
                const struct cb *b = &cbs[*c];
                if (*total < partitions && b->t > prev)
                        w.short_ms += b->t - prev;
                if (b->t > prev)
                        prev = b->t;
                if (b->reset) {
                        *total -= owned[b->life];
                        owned[b->life] = 0;
                } else {
                        owned[b->life] += b->delta;
                        *total += b->delta;
                        w.calls++;
                        if (w.first < 0)
                                w.first = b->t - from;
                        w.last = b->t - from;
                }
                if (*total < w.min)
                        w.min = *total;
                if (*total == partitions && w.min < partitions)
                        w.whole = b->t - from;
        }
        if (*total < partitions && to != INT64_MAX)
                w.short_ms += to - prev;
        return w;
}

void scale_rebalance_report(const struct scale_life *lives, int n_lives,
                            const struct scale_event *ev, int n_ev,
                            int partitions)
{
        int cap = 64, n = 0, owned[SCALE_MAX_LIVES] = { 0 }, total = 0, c = 0;
        struct cb *cbs = malloc(sizeof(*cbs) * (size_t)cap);
        int64_t t0     = ev[0].at_ms;

        SC_CHECK(cbs, "oom");
        for (int i = 0; i < n_lives; i++) {
                read_log(&lives[i], i, &cbs, &n, &cap);
                if (lives[i].end_ms != INT64_MAX) {
                        if (n == cap) {
                                cap *= 2;
                                cbs = realloc(cbs, sizeof(*cbs) * (size_t)cap);
                                SC_CHECK(cbs, "oom");
                        }
                        cbs[n++] = (struct cb){ lives[i].end_ms, i, 0, true };
                }
        }
        qsort(cbs, (size_t)n, sizeof(*cbs), by_time);
        printf("rebalances (from the consumers' assigned/revoking log lines; "
               "s after each event):\n");
        printf("  %-20s %6s %4s %6s %6s %9s %6s %6s %6s\n", "event", "at",
               "cbs", "first", "last", "rebalance", "min", "short", "whole");
        for (int e = 0; e < n_ev; e++) {
                int64_t to      = e + 1 < n_ev ? ev[e + 1].at_ms : INT64_MAX;
                struct window w = play(cbs, n, &c, ev[e].at_ms, to, owned,
                                       &total, partitions);
                char whole[16], min[16];

                if (w.whole >= 0)
                        snprintf(whole, sizeof(whole), "%.2f", secs(w.whole));
                else
                        snprintf(whole, sizeof(whole), "%s",
                                 w.min < partitions ? "no" : "-");
                snprintf(min, sizeof(min), "%d/%d", w.min, partitions);
                printf("  %-20s %6.1f %4d %6.2f %6.2f %9.2f %6s %6.2f %6s\n",
                       ev[e].what, secs(ev[e].at_ms - t0), w.calls,
                       secs(w.first < 0 ? 0 : w.first),
                       secs(w.last < 0 ? 0 : w.last),
                       secs(w.first < 0 ? 0 : w.last - w.first), min,
                       secs(w.short_ms), whole);
        }
        free(cbs);
}
