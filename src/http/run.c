/* SPDX-License-Identifier: Apache-2.0 */
/*
 * http/run: http_run(), the loop beside the server: beats (healthz sees
 * it), refreshes the database gauges every metrics.refresh_interval on a
 * connection of its own, and every metrics.audit_interval runs the
 * invariant audit on another, if this process is the database's auditor
 * (store/audit.h: the one that holds the audit lock), every read bounded
 * by a statement_timeout.
 *
 * Must never: hold up the server (it runs on its own threads), or stop
 * on a database error (the gauges keep their last value; logged once per
 * outage).
 */
#include "http/http_int.h"

#include "flow/flow.h"
#include "store/audit.h"
#include "store/gauges.h"
#include "store/store.h"
#include "util/log.h"
#include "util/metrics.h"
#include "util/timeutil.h"

#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <time.h>

#define HTTP_LOOP_MS 100
/* Violations an audit logs one by one at most. */
#define HTTP_AUDIT_LOG_MAX 5

struct gauge_loop {
        struct store *st;       /* the gauges' session */
        struct store *audit_st; /* the audit's: may hold the audit lock */
        bool failing;           /* the last read failed: logged already */
        bool audit_failing;     /* the last audit failed: logged already */
        int repl;               /* the replication mode logged last, or -1 */
        int leader;       /* the audit leadership logged last (0, 1), or -1 */
        bool behind;      /* the last audit had not caught up: logged */
        int64_t reported; /* violations logged last, or -1 */
};

static struct log_ctx run_ctx(void)
{
        struct log_ctx lc = LOG_CTX_INIT;

        lc.component = "http";
        return lc;
}

/* A connected store, or NULL (err set). */
static struct store *loop_store(struct http *h, struct gauge_loop *g, char *err,
                                size_t errsz)
{
        if (g->st && !store_ok(g->st)) {
                store_destroy(g->st);
                g->st = NULL;
        }
        if (!g->st)
                g->st = store_connect_timeout(h->o.conninfo, HTTP_DB_CONNECT_S,
                                              err, errsz);
        return g->st;
}

/* libpq's messages, on one line */
static void one_line(char *err)
{
        for (char *p = err; *p; p++)
                if (*p == '\n' || *p == '\t')
                        *p = ' ';
}

static void loop_result(struct gauge_loop *g, const char *what, int rc,
                        char *err)
{
        struct log_ctx lc = run_ctx();

        if (rc != STORE_OK) /* err is set only then */
                one_line(err);

        if (rc == STORE_OK && g->failing)
                log_info(&lc, "http: %s: the database answers again", what);
        else if (rc != STORE_OK && !g->failing)
                log_warn(&lc, "http: %s: %s (gauges keep their last value)",
                         what, err);
        g->failing = rc != STORE_OK;
}

static void replication(struct http *h, struct gauge_loop *g);

static void refresh(struct http *h, struct gauge_loop *g)
{
        struct metrics *m = h->o.metrics;
        struct store_gauges v;
        char err[512] = "";
        int rc        = STORE_ERR_CONN;

        if (loop_store(h, g, err, sizeof(err)))
                rc = store_gauges(g->st, HTTP_DB_STATEMENT_MS, &v, err,
                                  sizeof(err));
        if (rc == STORE_OK) {
                metrics_set(m, METRIC_PROCESSING_OLDEST, v.processing_oldest_s);
                metrics_set(m, METRIC_OUTBOX_UNPUBLISHED,
                            (double)v.outbox_unpublished);
                metrics_set(m, METRIC_OUTBOX_OLDEST, v.outbox_oldest_s);
                metrics_set(m, METRIC_OUTBOX_PARKED, (double)v.outbox_parked);
                metrics_set(m, METRIC_REVIEW_PAYMENTS, (double)v.review);
        }
        loop_result(g, "gauges", rc, err);
        if (rc == STORE_OK)
                replication(h, g);
}

/*
 * The replication the primary shows (store_replication), as gauges, and a
 * log line whenever the mode changes (the first read included): a warning
 * in production mode unless commits wait for a synchronous standby, since
 * a failover may then lose the last commits (docs/deployment.md).
 */
static void replication(struct http *h, struct gauge_loop *g)
{
        struct store_replication_info r;
        struct log_ctx lc = run_ctx();
        char err[512];
        bool safe;

        if (!g->st || store_replication(g->st, HTTP_DB_STATEMENT_MS, &r, err,
                                        sizeof(err)) != STORE_OK)
                return; /* the gauges' own read says what is wrong */
        metrics_set(h->o.metrics, METRIC_DB_STANDBYS, (double)r.standbys);
        metrics_set(h->o.metrics, METRIC_DB_SYNC_STANDBYS,
                    (double)r.sync_standbys);
        if ((int)r.mode == g->repl)
                return;
        g->repl = (int)r.mode;
        safe    = r.mode == STORE_REPL_SYNC;
        co_log(h->o.production && !safe ? LOG_LVL_WARN : LOG_LVL_INFO, &lc,
               "database replication: %s (%" PRId64 " standby(s) streaming, "
               "%" PRId64 " synchronous; synchronous_commit = %s)%s",
               store_replication_name(r.mode), r.standbys, r.sync_standbys,
               r.synchronous_commit,
               safe ? ""
               : r.mode == STORE_REPL_UNKNOWN
                   ? ": this role cannot see pg_stat_replication "
                     "(pg_read_all_stats)"
               : r.mode == STORE_REPL_NONE
                   ? ": no standby; a restore from backup loses the "
                     "commits after it (docs/deployment.md)"
               : r.mode == STORE_REPL_SYNC_WAITING
                   ? ": commits wait until a synchronous standby streams"
                   : ": a failover may lose the last commits; chargeonce "
                     "claims their intents again with the same payment "
                     "ids after the group is rewound (docs/deployment.md)");
}

/* The audit's statement_timeout: metrics.audit_timeout, at most half of
 * http.alive_timeout (the loop does not beat while the audit runs). */
static int64_t audit_timeout_ms(const struct http *h)
{
        int64_t t = h->o.audit_timeout_ms, half = h->o.alive_timeout_ms / 2;

        return half > 0 && t > half ? half : t;
}

/* The audit's session, connected, or NULL (err set). */
static struct store *audit_store(struct http *h, struct gauge_loop *g,
                                 char *err, size_t errsz)
{
        if (!g->audit_st)
                g->audit_st = store_connect_timeout(
                    h->o.conninfo, HTTP_DB_CONNECT_S, err, errsz);
        return g->audit_st;
}

/* This process audits the database, or stops doing so (lead < 0: not
 * known, the lock could not be asked for). Logged when it changes. */
static void audit_leader(struct http *h, struct gauge_loop *g, int lead)
{
        struct metrics *m = h->o.metrics;
        struct log_ctx lc = run_ctx();

        if (lead >= 0)
                metrics_set(m, METRIC_AUDIT_LEADER, (double)lead);
        if (lead == g->leader || lead < 0)
                return;
        if (lead)
                log_info(&lc,
                         "http: audit: this process audits the "
                         "database (advisory lock " STORE_AUDIT_LOCK_KEY ")");
        else
                log_info(
                    &lc,
                    "http: audit: another process audits the "
                    "database (it holds advisory lock " STORE_AUDIT_LOCK_KEY
                    "); this one tries again every "
                    "metrics.audit_interval");
        if (!lead && g->leader == 1) {
                /* what this process counted is no longer the database's
                 * news: the auditor's gauges say it */
                metrics_set(m, METRIC_INVARIANT_VIOLATIONS, NAN);
                metrics_set(m, METRIC_WEBHOOK_CONTRADICTIONS, NAN);
        }
        g->leader = lead;
}

static void audit_failed(struct http *h, struct gauge_loop *g, int64_t t0,
                         int64_t timeout_ms, char *err)
{
        struct log_ctx lc = run_ctx();

        one_line(err);
        metrics_inc(h->o.metrics, METRIC_AUDIT_FAILURES, 0);
        if (!g->audit_failing)
                log_warn(&lc,
                         "http: audit: %s (after %" PRId64
                         " ms, metrics.audit_timeout %" PRId64
                         " ms; the audit gauges keep the last complete "
                         "audit's values)",
                         err, time_mono_ms() - t0, timeout_ms);
        g->audit_failing = true;
}

/* Logs what a step found when it differs from what was logged last: the
 * kinds and payments (never a key; the detail holds none), at most a
 * few. */
static void audit_report(struct gauge_loop *g, const struct store_violation *v,
                         size_t n)
{
        struct log_ctx lc = run_ctx();

        if ((int64_t)n == g->reported)
                return;
        if (n == 0) {
                if (g->reported > 0)
                        log_info(
                            &lc,
                            "http: audit: no invariant violation any more");
                g->reported = 0;
                return;
        }
        g->reported = (int64_t)n;
        log_error(&lc,
                  "http: audit: %zu invariant violation(s); `chargeonce audit "
                  "--full` lists every one",
                  n);
        for (size_t i = 0; i < n && i < HTTP_AUDIT_LOG_MAX; i++)
                log_error(&lc, "http: audit: %s payment %s: %s", v[i].kind,
                          v[i].payment_id[0] ? v[i].payment_id : "-",
                          v[i].detail ? v[i].detail : "");
}

/*
 * One periodic audit, by the database's auditor only (store_audit_lead:
 * one process per database holds the lock; the others skip it,
 * chargeonce_audit_leader 0): steps of store_audit_step, each checking
 * what was written since the last one, until it has caught up (or half
 * of metrics.audit_timeout has gone: true, run it again at once), then
 * the open webhook contradictions. A step's violations set the gauge at
 * once. Only an audit that caught up is complete: the time it ended and
 * its duration; a failed or cancelled one counts in
 * chargeonce_audit_failures_total and leaves the gauges as they were, so
 * chargeonce_audit_last_success_timestamp_seconds ages (alert
 * ChargeonceAuditStale), as it does while the audit cannot catch up,
 * and the violations keep the last count (NaN before the first, never a
 * healthy-looking 0).
 */
static bool audit(struct http *h, struct gauge_loop *g)
{
        struct metrics *m           = h->o.metrics;
        struct store_violation *v   = NULL;
        int64_t timeout_ms          = audit_timeout_ms(h);
        int64_t t0                  = time_mono_ms();
        int64_t contradictions      = 0;
        struct log_ctx lc           = run_ctx();
        struct store_audit_info inf = { .rows = 0 };
        bool lead                   = false;
        size_t n                    = 0;
        char err[512];
        int rc;

        if (!audit_store(h, g, err, sizeof(err))) {
                audit_failed(h, g, t0, timeout_ms, err);
                return false;
        }
        rc = store_audit_lead(g->audit_st, timeout_ms, &lead, err, sizeof(err));
        audit_leader(h, g, rc == STORE_OK ? lead : -1);
        if (rc == STORE_OK && !lead)
                return false;
        while (rc == STORE_OK) {
                store_violations_free(v, n);
                rc = store_audit_step(g->audit_st, STORE_AUDIT_STEP_ROWS, &v,
                                      &n, &inf, err, sizeof(err));
                if (rc != STORE_OK)
                        break;
                if (inf.started) {
                        log_info(&lc, "http: audit: no audit cursor yet: it "
                                      "starts at the ends of the outbox, the "
                                      "ledger and the evidence now; what was "
                                      "written before is `chargeonce audit "
                                      "--full`'s");
                        continue; /* a step that checks, at once */
                }
                metrics_add(m, METRIC_AUDIT_ROWS, 0, (uint64_t)inf.rows);
                metrics_set(m, METRIC_INVARIANT_VIOLATIONS, (double)n);
                audit_report(g, v, n);
                if (!inf.behind || time_mono_ms() - t0 >= timeout_ms / 2)
                        break;
        }
        store_violations_free(v, n);
        if (rc == STORE_OK)
                rc = store_webhook_contradictions_count(
                    g->audit_st, timeout_ms, &contradictions, err, sizeof(err));
        if (rc != STORE_OK) {
                audit_failed(h, g, t0, timeout_ms, err);
                return false;
        }
        if (g->audit_failing)
                log_info(&lc, "http: audit: complete again");
        g->audit_failing = false;
        metrics_set(m, METRIC_WEBHOOK_CONTRADICTIONS, (double)contradictions);
        if (inf.behind) {
                if (!g->behind)
                        log_info(&lc, "http: audit: more written since the "
                                      "last audit than one step reads: "
                                      "catching up");
                g->behind = true;
                return true;
        }
        g->behind = false;
        metrics_set(m, METRIC_AUDIT_DURATION,
                    (double)(time_mono_ms() - t0) / 1000.0);
        metrics_set(m, METRIC_AUDIT_LAST_SUCCESS,
                    (double)time_wall_ms() / 1000.0);
        return false;
}

int http_run(struct http *h, const atomic_int *stop)
{
        struct gauge_loop g = { NULL, NULL, false, false, -1, -1, false, -1 };
        struct flow_tick gauges = { 0 }, audits = { 0 };
        int loop = metrics_loop_register(h->o.metrics, "http");
        int rc   = 0;

        gauges.every_ms = h->o.refresh_ms;
        audits.every_ms = h->o.audit_ms;
        for (;;) {
                int level = flow_stop_level(stop);
                int64_t now;
                struct timespec ts = { 0, HTTP_LOOP_MS * 1000000L };

                if (level == FLOW_EXIT) {
                        rc = FLOW_EXIT_NOW;
                        break;
                }
                if (level == FLOW_DRAIN)
                        break;
                metrics_loop_beat(h->o.metrics, loop);
                now = time_mono_ms();
                if (flow_tick_due(&gauges, now))
                        refresh(h, &g);
                if (flow_tick_due(&audits, now) && audit(h, &g))
                        audits.next_ms = 0; /* behind: on at once */
                nanosleep(&ts, NULL);
        }
        metrics_loop_unregister(h->o.metrics, loop);
        store_destroy(g.st);
        store_destroy(g.audit_st); /* the audit lock goes with it */
        return rc;
}
