/* SPDX-License-Identifier: Apache-2.0 */
/*
 * store/conn: how every database connection of the process is opened and
 * set up, so that each one notices a dead peer within a stated bound
 * (docs/configuration.md, "Dead links"):
 *
 *   - libpq keywords: connect_timeout (each host of a multi-host conninfo
 *     in turn), keepalives (an idle connection whose peer vanished breaks
 *     after idle + interval x count) and tcp_user_timeout (sent data left
 *     unacknowledged that long breaks it: a statement in flight into a
 *     blackhole), fallback_application_name;
 *   - the session: statement_timeout and lock_timeout for the daemons'
 *     statements (a batch takes milliseconds; the defaults are two orders
 *     of magnitude above the slowest measured), and the server's own
 *     keepalives and tcp_user_timeout, so that PostgreSQL also lets go of
 *     a session (its locks, a relay's shard locks) whose client vanished.
 *
 * The keywords go after the conninfo: the configuration keys win over
 * the same keywords written in db.conninfo (documented). Without these a
 * blackholed link is noticed only by the kernel's retransmission timeout,
 * about 15 minutes.
 *
 * Threads: store_net_set before any connection is made (main thread, at
 * start); everything else any thread.
 */
#include "store/store_int.h"

#include <inttypes.h>
#include <stdio.h>
#include <string.h>

static struct store_net net = {
        .connect_timeout_ms     = 3000,
        .keepalives_idle_ms     = 3000,
        .keepalives_interval_ms = 1000,
        .keepalives_count       = 3,
        .tcp_user_timeout_ms    = 5000,
        .statement_timeout_ms   = 30000,
        .lock_timeout_ms        = 5000,
};

void store_net_set(const struct store_net *n)
{
        net = *n;
}

void store_net_get(struct store_net *out)
{
        *out = net;
}

int64_t store_net_dead_peer_ms(const struct store_net *n)
{
        int64_t idle = (n->keepalives_idle_ms + 999) / 1000 * 1000 +
                       (n->keepalives_interval_ms + 999) / 1000 * 1000 *
                           n->keepalives_count;

        if (n->tcp_user_timeout_ms > 0 && n->tcp_user_timeout_ms > idle)
                return n->tcp_user_timeout_ms;
        return idle;
}

/* Whole seconds, rounded up, at least min_s. */
static void secs(char *out, size_t outsz, int64_t ms, int64_t min_s)
{
        int64_t s = (ms + 999) / 1000;

        snprintf(out, outsz, "%" PRId64, s < min_s ? min_s : s);
}

PGconn *store_pq_connect(const char *conninfo, int connect_timeout_s,
                         const char *app)
{
        char tmo[24], idle[24], intvl[24], cnt[24], uto[24];
        const char *keys[10], *vals[10];
        int k = 0;

        /* dbname first: it is expanded as a whole conninfo (either
         * syntax), and the keywords after it override its own */
        keys[k]   = "dbname";
        vals[k++] = conninfo ? conninfo : "";
        if (connect_timeout_s > 0)
                snprintf(tmo, sizeof(tmo), "%d", connect_timeout_s);
        else /* libpq ignores less than 2 s */
                secs(tmo, sizeof(tmo), net.connect_timeout_ms, 2);
        keys[k]   = "connect_timeout";
        vals[k++] = tmo;
        keys[k]   = "keepalives";
        vals[k++] = "1";
        secs(idle, sizeof(idle), net.keepalives_idle_ms, 1);
        keys[k]   = "keepalives_idle";
        vals[k++] = idle;
        secs(intvl, sizeof(intvl), net.keepalives_interval_ms, 1);
        keys[k]   = "keepalives_interval";
        vals[k++] = intvl;
        snprintf(cnt, sizeof(cnt), "%d", net.keepalives_count);
        keys[k]   = "keepalives_count";
        vals[k++] = cnt;
        snprintf(uto, sizeof(uto), "%" PRId64, net.tcp_user_timeout_ms);
        keys[k]   = "tcp_user_timeout";
        vals[k++] = uto;
        keys[k]   = "fallback_application_name";
        vals[k++] = app && *app ? app : "chargeonce";
        keys[k]   = NULL;
        vals[k]   = NULL;
        return PQconnectdbParams(keys, vals, 1);
}

int store_pq_session(PGconn *conn, enum store_session kind, char *errstr,
                     size_t errstr_size)
{
        char sql[768];
        size_t n = 0;
        PGresult *res;
        int rc = STORE_OK;

        /* the claim decides by INSERT ... ON CONFLICT under READ
         * COMMITTED (store.c); independent of the server's default */
        n += (size_t)snprintf(sql + n, sizeof(sql) - n,
                              "SET default_transaction_isolation = "
                              "'read committed';"
                              "SET lock_timeout = %" PRId64 ";",
                              net.lock_timeout_ms);
        n += (size_t)snprintf(
            sql + n, sizeof(sql) - n, "SET statement_timeout = %" PRId64 ";",
            kind == STORE_SESSION_DAEMON ? net.statement_timeout_ms
                                         : (int64_t)0);
        /* the server's side of the same bounds (seconds; 0: the OS's) */
        n += (size_t)snprintf(sql + n, sizeof(sql) - n,
                              "SET tcp_keepalives_idle = %" PRId64 ";"
                              "SET tcp_keepalives_interval = %" PRId64 ";"
                              "SET tcp_keepalives_count = %d;"
                              "SET tcp_user_timeout = %" PRId64 ";",
                              (net.keepalives_idle_ms + 999) / 1000,
                              (net.keepalives_interval_ms + 999) / 1000,
                              net.keepalives_count, net.tcp_user_timeout_ms);
        /* PostgreSQL 14: a long statement notices its client is gone */
        if (PQserverVersion(conn) >= 140000)
                snprintf(sql + n, sizeof(sql) - n,
                         "SET client_connection_check_interval = %" PRId64 ";",
                         (net.keepalives_interval_ms + 999) / 1000 * 1000);
        res = PQexec(conn, sql);
        if (PQresultStatus(res) != PGRES_COMMAND_OK) {
                store_format_error(res, conn, "database setup", errstr,
                                   errstr_size);
                rc = PQstatus(conn) == CONNECTION_OK ? STORE_ERR
                                                     : STORE_ERR_CONN;
        }
        PQclear(res);
        return rc;
}
