/* SPDX-License-Identifier: Apache-2.0 */
/* cmd/security: the configuration -> ops/security's policy (security.h). */
#include "cmd/security.h"
#include "util/config.h"
#include "util/xalloc.h"

#include <stdlib.h>
#include <string.h>

void cmd_security_opts(const struct config *cfg, struct ops_security_opts *o,
                       struct kafka_prop *kprops, size_t n)
{
        const struct settings *st = config_settings(cfg);

        memset(o, 0, sizeof(*o));
        o->production          = !strcmp(st->security_mode, "production");
        o->gateway_url         = st->gateway_url;
        o->gateway_tls_verify  = st->gateway_tls_verify;
        o->db_conninfo         = st->db_conninfo;
        o->http_listen         = st->http_listen;
        o->http_tls_cert_file  = st->http_tls_cert_file;
        o->http_tls_key_file   = st->http_tls_key_file;
        o->provider_key_secret = st->provider_key_secret;
        o->log_mask_secret     = st->log_mask_secret;
        o->webhook_secret      = st->webhook_secret;
        o->webhook_secret_file = st->webhook_secret_file;
        for (size_t i = 0; i < n; i++)
                config_kafka_get(cfg, i, &kprops[i].name, &kprops[i].value);
        o->kprops   = kprops;
        o->n_kprops = n;
}

int cmd_security_apply(const struct config *cfg, const char *subcommand,
                       const char *argv_secret, char *errstr,
                       size_t errstr_size)
{
        size_t n              = config_kafka_count(cfg);
        struct kafka_prop *kp = xcalloc(n ? n : 1, sizeof(*kp));
        struct ops_security_opts o;
        int rc;

        cmd_security_opts(cfg, &o, kp, n);
        rc = ops_security_apply(&o, ops_security_scope(subcommand), argv_secret,
                                errstr, errstr_size);
        free(kp);
        return rc;
}
