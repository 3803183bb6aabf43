/* SPDX-License-Identifier: Apache-2.0 */
/* cmd/opts: configuration -> typed options (see opts.h). */
#include "cmd/opts.h"
#include "cmd/cmd.h"
#include "cmd/version.h"
#include "gateway/webhook.h"
#include "ops/security.h"
#include "store/store.h"
#include "util/config.h"
#include "util/crypto.h"
#include "util/file.h"
#include "util/metrics.h"
#include "util/xalloc.h"

#include <errno.h>

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

/* The kafka.* properties and the group member's static identity
 * (kconf_instance_id); -1 only when the identity is wrongly configured. */
static int fill_kafka(struct cmd_opts *o, const struct config *cfg,
                      char *errstr, size_t errstr_size)
{
        const struct settings *st = config_settings(cfg);
        size_t n                  = config_kafka_count(cfg);
        int rc;

        o->kprops = xcalloc(n ? n : 1, sizeof(*o->kprops));
        for (size_t i = 0; i < n; i++)
                config_kafka_get(cfg, i, &o->kprops[i].name,
                                 &o->kprops[i].value);
        o->kafka.props   = o->kprops;
        o->kafka.n_props = n;
        rc = kconf_instance_id(&o->kafka, st->group_instance_id, st->worker_id,
                               o->instance_id, sizeof(o->instance_id), errstr,
                               errstr_size);
        if (rc == 1)
                snprintf(o->instance_note, sizeof(o->instance_note), "%s",
                         errstr);
        o->kafka.instance_id   = o->instance_id;
        o->kafka.instance_note = rc == 1 ? o->instance_note : NULL;
        return rc < 0 ? -1 : 0;
}

static void fill_owner(struct cmd_opts *o, const struct settings *st)
{
        char host[64];
        unsigned char nonce[STORE_LEASE_NONCE_BYTES];
        struct timespec ts;

        if (*st->worker_id) {
                snprintf(o->owner_name, sizeof(o->owner_name), "%s",
                         st->worker_id);
        } else {
                if (gethostname(host, sizeof(host)) != 0)
                        snprintf(host, sizeof(host), "host");
                host[sizeof(host) - 1] = '\0';
                snprintf(o->owner_name, sizeof(o->owner_name), "%s:%d", host,
                         (int)getpid());
        }
        snprintf(o->rec_owner_name, sizeof(o->rec_owner_name), "%s/reconcile",
                 o->owner_name);
        /* unique, not secret: the clock and the pid if OpenSSL fails */
        if (!crypto_random(nonce, sizeof(nonce))) {
                uint64_t x;

                clock_gettime(CLOCK_REALTIME, &ts);
                x = (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
                x ^= (uint64_t)getpid() << 40;
                for (size_t i = 0; i < sizeof(nonce); i++)
                        nonce[i] = (unsigned char)(x >> (8 * i));
        }
        store_lease_owner_instance(o->owner_name, nonce, o->owner,
                                   sizeof(o->owner));
        store_lease_owner_instance(o->rec_owner_name, nonce, o->rec_owner,
                                   sizeof(o->rec_owner));
}

static void fill_gateway(struct gateway_opts *go, const struct settings *st)
{
        memset(go, 0, sizeof(*go));
        go->base_url   = st->gateway_url;
        go->api_key    = st->gateway_api_key;
        go->ca_file    = *st->gateway_ca_file ? st->gateway_ca_file : NULL;
        go->tls_verify = st->gateway_tls_verify;
        go->idempotency_keys    = st->gateway_idempotency_keys;
        go->connect_timeout_ms  = st->gateway_connect_timeout_ms;
        go->timeout_ms          = st->gateway_timeout_ms;
        go->tcp_user_timeout_ms = st->gateway_tcp_user_timeout_ms;
        go->max_connections     = (int)st->gateway_max_connections;
        go->query_settle_ms     = GATEWAY_QUERY_SETTLE_MS;
        go->retry.base_ms       = st->gateway_backoff_base_ms;
        go->retry.cap_ms        = st->gateway_backoff_max_ms;
        go->retry.max_attempts  = (int)st->gateway_max_attempts;
        go->retry.deadline_ms   = st->gateway_deadline_ms;
        /* a margin is only useful below the lease: owners renew every
         * third of it, so never ask for more than a quarter */
        go->lease_margin_ms = st->gateway_lease_margin_ms;
        if (go->lease_margin_ms > st->lease_duration_ms / 4)
                go->lease_margin_ms = st->lease_duration_ms / 4;
}

static void fill_pipeline(struct cmd_opts *o, const struct settings *st)
{
        struct pipeline_opts *p = &o->pipeline;
        const char *secret      = st->provider_key_secret;

        p->conninfo          = st->db_conninfo;
        p->db_connections    = (int)st->db_connections;
        p->owner             = o->owner;
        p->owner_name        = o->owner_name;
        p->topic             = st->topic_intents;
        p->topic_dlq         = st->topic_dlq;
        p->group             = st->group_id;
        p->kafka             = &o->kafka;
        p->gateway           = &o->gateway;
        p->pk_secret         = (const unsigned char *)secret;
        p->pk_secret_len     = strlen(secret);
        p->max_in_flight     = (size_t)st->consumer_max_in_flight;
        p->batch_size        = (size_t)st->consumer_batch_size;
        p->max_per_key       = (size_t)st->consumer_max_per_key;
        p->max_message_bytes = (size_t)st->consumer_max_message_bytes;
        p->decode_threads    = (int)st->consumer_decode_threads;
        p->linger_us         = st->consumer_batch_linger_ms * 1000;
        p->lease_ms          = st->lease_duration_ms;
        p->deadline_ms       = st->gateway_deadline_ms;
        p->key_retention_ms  = st->idempotency_retention_ms;
}

static void fill_relay(struct cmd_opts *o, const struct settings *st)
{
        struct relay_opts *r = &o->relay;

        r->conninfo      = st->db_conninfo;
        r->topic         = st->topic_results;
        r->kafka         = &o->kafka;
        r->shards        = (int)st->relay_shards;
        r->batch_size    = (size_t)st->relay_batch_size;
        r->poll_ms       = st->relay_poll_interval_ms;
        r->rebalance_ms  = st->relay_rebalance_interval_ms;
        r->drain_ms      = st->relay_drain_timeout_ms;
        r->cleanup_ms    = st->relay_cleanup_interval_ms;
        r->retention_ms  = st->relay_retention_ms;
        r->stats_ms      = st->relay_stats_interval_ms;
        r->cleanup_batch = (int)st->relay_cleanup_batch;
        r->wait_standbys = (int)st->relay_wait_for_standbys;
        o->relay_enabled = st->relay_enabled;
}

static void fill_http(struct cmd_opts *o, const struct settings *st)
{
        struct http_opts *h = &o->http;

        h->listen           = st->http_listen;
        h->tls_cert_file    = st->http_tls_cert_file;
        h->tls_key_file     = st->http_tls_key_file;
        h->conninfo         = st->db_conninfo;
        h->secret           = st->webhook_secret;
        h->secret_file      = st->webhook_secret_file;
        h->webhooks         = HTTP_WEBHOOKS_OFF;
        h->db_connections   = (int)st->webhook_db_connections;
        h->tolerance_ms     = st->webhook_tolerance_ms;
        h->alive_timeout_ms = st->http_alive_timeout_ms;
        h->refresh_ms       = st->metrics_refresh_interval_ms;
        h->audit_ms         = st->metrics_audit_interval_ms;
        h->audit_timeout_ms = st->metrics_audit_timeout_ms;
        h->actor            = o->owner_name;
        h->production       = !strcmp(st->security_mode, "production");
        o->http_enabled     = *st->http_listen != '\0';
}

static void fill_reconcile(struct cmd_opts *o, const struct settings *st)
{
        struct reconcile_opts *r = &o->reconcile;

        r->conninfo          = st->db_conninfo;
        r->owner             = o->rec_owner;
        r->owner_name        = o->rec_owner_name;
        r->gateway           = &o->gateway;
        r->lease_ms          = st->lease_duration_ms;
        r->interval_ms       = st->reconcile_interval_ms;
        r->backoff_base_ms   = st->reconcile_backoff_base_ms;
        r->backoff_max_ms    = st->reconcile_backoff_max_ms;
        r->review_after_ms   = st->reconcile_review_after_ms;
        r->key_retention_ms  = st->gateway_key_retention_ms;
        r->deadline_ms       = st->gateway_deadline_ms;
        r->call_timeout_ms   = st->gateway_timeout_ms;
        r->batch_size        = (size_t)st->reconcile_batch_size;
        r->max_in_flight     = (size_t)st->reconcile_max_in_flight;
        o->reconcile_enabled = st->reconcile_enabled;
}

void cmd_opts_fill(struct cmd_opts *o, const struct config *cfg)
{
        const struct settings *st = config_settings(cfg);
        char err[512];

        memset(o, 0, sizeof(*o));
        o->metrics = metrics_new();
        metrics_set_build(o->metrics, cmd_version_string(),
                          cmd_version_commit());
        /* main checked the identity (cmd_opts_check): no error */
        CO_IGNORE(fill_kafka(o, cfg, err, sizeof(err)));
        fill_owner(o, st);
        fill_gateway(&o->gateway, st);
        fill_pipeline(o, st);
        fill_relay(o, st);
        fill_reconcile(o, st);
        /* one registry for every engine and adapter of this process */
        o->gateway.metrics   = o->metrics;
        o->pipeline.metrics  = o->metrics;
        o->relay.metrics     = o->metrics;
        o->reconcile.metrics = o->metrics;
        fill_http(o, st);
        o->http.metrics = o->metrics;
}

void cmd_opts_free(struct cmd_opts *o)
{
        free(o->kprops);
        o->kprops = NULL;
        metrics_destroy(o->metrics);
        o->metrics = NULL;
}

/* The webhook secrets (webhook.secret, else the file of
 * webhook.secret_file) parse as whsec_<base64>, space-separated: 0, or -1
 * naming the key (never a secret's bytes). */
static int check_webhook(const struct settings *st, char *errstr,
                         size_t errstr_size)
{
        const char *key =
            *st->webhook_secret_file ? "webhook.secret_file" : "webhook.secret";
        struct gateway_webhook_secrets ws;
        char sub[256], *buf = NULL;
        const char *spec = st->webhook_secret;
        size_t n         = 0;
        int rc;

        if (!*st->webhook_secret && *st->webhook_secret_file) {
                if (!(buf = file_read_secret(st->webhook_secret_file, 8191, &n,
                                             sub, sizeof(sub)))) {
                        snprintf(errstr, errstr_size, "%s: %s", key, sub);
                        return -1;
                }
                spec = buf;
        }
        rc = *spec ? gateway_webhook_secrets_parse(spec, &ws, sub, sizeof(sub))
                   : 0;
        if (rc < 0)
                snprintf(errstr, errstr_size, "%s: %s", key, sub);
        else if (*spec)
                gateway_webhook_secrets_clear(&ws);
        if (buf) {
                crypto_wipe(buf, n);
                free(buf);
        }
        return rc < 0 ? -1 : 0;
}

int cmd_opts_check(const struct config *cfg, char *errstr, size_t errstr_size)
{
        const struct settings *st = config_settings(cfg);
        struct cmd_opts o;
        char sslmode[64];
        int rc;

        if (config_check(cfg, errstr, errstr_size) < 0)
                return -1;
        /* libpq's own parser: a conninfo that would fail at the first
         * connection fails here (its text may hold a password: not shown) */
        if (ops_security_conninfo_sslmode(st->db_conninfo, sslmode,
                                          sizeof(sslmode)) < 0) {
                snprintf(errstr, errstr_size,
                         "db.conninfo: does not parse as a libpq connection "
                         "string (key=value pairs or a postgresql:// URI)");
                return -1;
        }
        if (*st->gateway_ca_file && access(st->gateway_ca_file, R_OK) != 0) {
                snprintf(errstr, errstr_size, "gateway.ca_file: %s: %s",
                         st->gateway_ca_file, strerror(errno));
                return -1;
        }
        if (check_webhook(st, errstr, errstr_size) < 0)
                return -1;
        memset(&o, 0, sizeof(o));
        rc = fill_kafka(&o, cfg, errstr, errstr_size);
        if (rc == 0)
                rc = kconf_check(&o.kafka, errstr, errstr_size);
        cmd_opts_free(&o);
        return rc;
}

void cmd_apply_db_net(const struct config *cfg)
{
        const struct settings *st = config_settings(cfg);
        struct store_net n;

        memset(&n, 0, sizeof(n));
        n.connect_timeout_ms     = st->db_connect_timeout_ms;
        n.keepalives_idle_ms     = st->db_keepalives_idle_ms;
        n.keepalives_interval_ms = st->db_keepalives_interval_ms;
        n.keepalives_count       = (int)st->db_keepalives_count;
        n.tcp_user_timeout_ms    = st->db_tcp_user_timeout_ms;
        n.statement_timeout_ms   = st->db_statement_timeout_ms;
        n.lock_timeout_ms        = st->db_lock_timeout_ms;
        store_net_set(&n);
}

void cmd_print_version(FILE *out)
{
        fprintf(out, "chargeonce %s (commit %s; librdkafka %s)\n",
                cmd_version_string(), cmd_version_commit(),
                rd_kafka_version_str());
}
