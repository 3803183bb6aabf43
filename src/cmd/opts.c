/* cmd/opts: configuration -> typed options (see opts.h). */
#include "cmd/opts.h"
#include "cmd/cmd.h"
#include "util/config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static int fill_kafka(struct cmd_opts *o, const struct config *cfg)
{
        size_t n = config_kafka_count(cfg);

        o->kprops = calloc(n ? n : 1, sizeof(*o->kprops));
        if (!o->kprops)
                return -1;
        for (size_t i = 0; i < n; i++)
                config_kafka_get(cfg, i, &o->kprops[i].name,
                                 &o->kprops[i].value);
        o->kafka.props   = o->kprops;
        o->kafka.n_props = n;
        return 0;
}

static void fill_owner(struct cmd_opts *o, const struct config *cfg)
{
        char host[64];

        if (*config_str(cfg, "worker.id")) {
                snprintf(o->owner, sizeof(o->owner), "%s",
                         config_str(cfg, "worker.id"));
        } else {
                if (gethostname(host, sizeof(host)) != 0)
                        snprintf(host, sizeof(host), "host");
                host[sizeof(host) - 1] = '\0';
                snprintf(o->owner, sizeof(o->owner), "%s:%d", host,
                         (int)getpid());
        }
        snprintf(o->rec_owner, sizeof(o->rec_owner), "%s/reconcile", o->owner);
}

static void fill_gateway(struct gateway_opts *go, const struct config *cfg)
{
        gateway_opts_from_config(go, cfg);
}

static void fill_pipeline(struct cmd_opts *o, const struct config *cfg)
{
        struct pipeline_opts *p = &o->pipeline;
        const char *secret      = config_str(cfg, "provider_key.secret");

        p->conninfo       = config_str(cfg, "db.conninfo");
        p->db_connections = (int)config_int(cfg, "db.connections");
        p->owner          = o->owner;
        p->topic          = config_str(cfg, "topic.intents");
        p->topic_dlq      = config_str(cfg, "topic.dlq");
        p->group          = config_str(cfg, "group.id");
        p->kafka          = &o->kafka;
        p->gateway        = &o->gateway;
        p->pk_secret      = (const unsigned char *)secret;
        p->pk_secret_len  = strlen(secret);
        p->max_in_flight  = (size_t)config_int(cfg, "consumer.max_in_flight");
        p->batch_size     = (size_t)config_int(cfg, "consumer.batch_size");
        p->max_per_key    = (size_t)config_int(cfg, "consumer.max_per_key");
        p->max_message_bytes =
            (size_t)config_int(cfg, "consumer.max_message_bytes");
        p->linger_us        = config_ms(cfg, "consumer.batch_linger") * 1000;
        p->lease_ms         = config_ms(cfg, "lease.duration");
        p->deadline_ms      = config_ms(cfg, "gateway.deadline");
        p->key_retention_ms = config_ms(cfg, "idempotency.retention");
}

static void fill_relay(struct cmd_opts *o, const struct config *cfg)
{
        struct relay_opts *r = &o->relay;

        r->conninfo      = config_str(cfg, "db.conninfo");
        r->topic         = config_str(cfg, "topic.results");
        r->kafka         = &o->kafka;
        r->shards        = (int)config_int(cfg, "relay.shards");
        r->batch_size    = (size_t)config_int(cfg, "relay.batch_size");
        r->poll_ms       = config_ms(cfg, "relay.poll_interval");
        r->rebalance_ms  = config_ms(cfg, "relay.rebalance_interval");
        r->drain_ms      = config_ms(cfg, "relay.drain_timeout");
        r->cleanup_ms    = config_ms(cfg, "relay.cleanup_interval");
        r->retention_ms  = config_ms(cfg, "relay.retention");
        r->stats_ms      = config_ms(cfg, "relay.stats_interval");
        r->cleanup_batch = (int)config_int(cfg, "relay.cleanup_batch");
        o->relay_enabled = config_bool(cfg, "relay.enabled");
}

static void fill_reconcile(struct cmd_opts *o, const struct config *cfg)
{
        struct reconcile_opts *r = &o->reconcile;

        r->conninfo         = config_str(cfg, "db.conninfo");
        r->owner            = o->rec_owner;
        r->gateway          = &o->gateway;
        r->lease_ms         = config_ms(cfg, "lease.duration");
        r->interval_ms      = config_ms(cfg, "reconcile.interval");
        r->backoff_base_ms  = config_ms(cfg, "reconcile.backoff_base");
        r->backoff_max_ms   = config_ms(cfg, "reconcile.backoff_max");
        r->review_after_ms  = config_ms(cfg, "reconcile.review_after");
        r->key_retention_ms = config_ms(cfg, "gateway.key_retention");
        r->deadline_ms      = config_ms(cfg, "gateway.deadline");
        r->call_timeout_ms  = config_ms(cfg, "gateway.timeout");
        r->batch_size       = (size_t)config_int(cfg, "reconcile.batch_size");
        r->max_in_flight = (size_t)config_int(cfg, "reconcile.max_in_flight");
        o->reconcile_enabled = config_bool(cfg, "reconcile.enabled");
}

int cmd_opts_fill(struct cmd_opts *o, const struct config *cfg, char *errstr,
                  size_t errstr_size)
{
        memset(o, 0, sizeof(*o));
        if (fill_kafka(o, cfg) < 0) {
                snprintf(errstr, errstr_size, "out of memory");
                return -1;
        }
        fill_owner(o, cfg);
        fill_gateway(&o->gateway, cfg);
        fill_pipeline(o, cfg);
        fill_relay(o, cfg);
        fill_reconcile(o, cfg);
        return 0;
}

void cmd_opts_free(struct cmd_opts *o)
{
        free(o->kprops);
        o->kprops = NULL;
}

int cmd_opts_check_kafka(const struct config *cfg, char *errstr,
                         size_t errstr_size)
{
        struct cmd_opts o;
        int rc;

        memset(&o, 0, sizeof(o));
        if (fill_kafka(&o, cfg) < 0) {
                snprintf(errstr, errstr_size, "out of memory");
                return -1;
        }
        rc = kconf_check(&o.kafka, errstr, errstr_size);
        cmd_opts_free(&o);
        return rc;
}
