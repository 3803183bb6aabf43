/*
 * client_config: the gateway client's options from chargeonce's
 * configuration, the one place that maps gateway.* keys to them (the
 * consumer and the reconciler each make a client). Must never invent a
 * value that has a configuration key: the table holds the defaults.
 *
 * Wiring that belongs in cmd/ (issue 12); it stays here while the
 * pipeline and reconciler libraries, linked into tests without cmd/, call
 * it themselves.
 */
#include "gateway/client.h"
#include "util/config.h"

#include <string.h>

/* Ignore-keys mode: wait after a POST without a final answer before the
 * query (docs/gateway.md). No configuration key sets it. */
#define QUERY_SETTLE_MS 2000

void gateway_opts_from_config(struct gateway_opts *go, const struct config *cfg)
{
        const char *ca = config_str(cfg, "gateway.ca_file");

        memset(go, 0, sizeof(*go));
        go->base_url           = config_str(cfg, "gateway.url");
        go->api_key            = config_str(cfg, "gateway.api_key");
        go->ca_file            = *ca ? ca : NULL;
        go->tls_verify         = config_bool(cfg, "gateway.tls_verify");
        go->idempotency_keys   = config_bool(cfg, "gateway.idempotency_keys");
        go->connect_timeout_ms = config_ms(cfg, "gateway.connect_timeout");
        go->timeout_ms         = config_ms(cfg, "gateway.timeout");
        go->max_connections = (int)config_int(cfg, "gateway.max_connections");
        go->query_settle_ms = QUERY_SETTLE_MS;
        go->retry.base_ms   = config_ms(cfg, "gateway.backoff_base");
        go->retry.cap_ms    = config_ms(cfg, "gateway.backoff_max");
        go->retry.max_attempts = (int)config_int(cfg, "gateway.max_attempts");
        go->retry.deadline_ms  = config_ms(cfg, "gateway.deadline");
        /* a margin is only useful below the lease: owners renew every
         * third of it, so never ask for more than a quarter */
        go->lease_margin_ms = config_ms(cfg, "gateway.lease_margin");
        if (go->lease_margin_ms > config_ms(cfg, "lease.duration") / 4)
                go->lease_margin_ms = config_ms(cfg, "lease.duration") / 4;
}
