/* SPDX-License-Identifier: Apache-2.0 */
/*
 * ops/security: the policy of security.mode (docs/security.md,
 * "Production mode"). In production a process refuses to start (exit 2,
 * naming the key) with a setting below production level; in development
 * it starts and says, in one warning line, which keys production would
 * refuse. Also the process's core-dump hardening and the log mask key.
 *
 * ops_security_judge() is the decision, pure (no I/O, no environment):
 * what the caller read (the settings, the kafka.* properties, the sslmode
 * of db.conninfo, PGSSLMODE, the webhook secrets' decoded lengths, which
 * -X key held a secret) in, every finding out, in a fixed order: the
 * first is the refusal. ops_security_apply() gathers those facts and
 * acts; cmd/security.c fills struct ops_security_opts from the
 * configuration.
 *
 * Must never: put a secret's value in a finding or a log line.
 */
#ifndef CO_OPS_SECURITY_H
#define CO_OPS_SECURITY_H

#include "kafka/kconf.h"
#include "util/compiler.h"

#include <stdbool.h>
#include <stddef.h>

/* What a subcommand talks to: only those transports are judged. Secrets
 * (their length, the command line, the log mask key) are judged always. */
enum security_scope {
        SECURITY_GATEWAY = 1 << 0,
        SECURITY_DB      = 1 << 1,
        SECURITY_KAFKA   = 1 << 2,
        /* serves HTTP (http.listen): webhooks and /metrics */
        SECURITY_HTTP = 1 << 3,
        SECURITY_ALL =
            SECURITY_GATEWAY | SECURITY_DB | SECURITY_KAFKA | SECURITY_HTTP,
};

/* Secrets shorter than this are refused in production (bytes; webhook
 * secrets: decoded bytes). */
#define SECURITY_SECRET_MIN 32

/* The settings the policy reads (cmd/security.c fills it from the
 * configuration; strings are "" when unset, never NULL). */
struct ops_security_opts {
        bool production; /* security.mode = production */
        const char *gateway_url;
        bool gateway_tls_verify;
        const char *db_conninfo;
        const char *http_listen, *http_tls_cert_file, *http_tls_key_file;
        const char *provider_key_secret, *log_mask_secret;
        const char *webhook_secret, *webhook_secret_file;
        const struct kafka_prop *kprops; /* the kafka.* properties, in order */
        size_t n_kprops;
};

struct security_facts {
        const struct ops_security_opts *o;
        unsigned scope;               /* enum security_scope bits */
        const char *conninfo_sslmode; /* sslmode in db.conninfo; NULL: none */
        bool conninfo_bad;            /* db.conninfo does not parse */
        const char *pgsslmode;        /* PGSSLMODE; NULL: unset */
        const char *argv_secret;      /* first -X key holding a secret; NULL */
        size_t webhook_n;       /* webhook secrets that parsed (0: none) */
        size_t webhook_short;   /* 1-based index of the shortest, if n */
        size_t webhook_min_len; /* its decoded length */
        bool allow_core;        /* CHARGEONCE_ALLOW_CORE=1 */
};

struct security_finding {
        char key[128]; /* the key (or environment variable) to change */
        char why[256]; /* never a secret's value */
};

#define SECURITY_FINDINGS_MAX 16

/* Every finding of f, at most max, into out, in this order: a secret on
 * the command line, CHARGEONCE_ALLOW_CORE, gateway.url, gateway.tls_verify,
 * the libpq sslmode, Kafka (security.protocol, certificate checks),
 * http.listen (plain HTTP on an address that is not loopback),
 * provider_key.secret, webhook.secret, log.mask_secret. Returns how many. */
size_t ops_security_judge(const struct security_facts *f,
                          struct security_finding *out, size_t max);

/* The scope of a subcommand by name (docs/configuration.md has the
 * table); NULL or an unknown name: SECURITY_ALL (--dump-config). */
unsigned ops_security_scope(const char *subcommand);

/*
 * Judges o for a process of that scope. Production: the first finding
 * into errstr ("security.mode = production refuses KEY: why"), -1 (exit
 * 2). Development: one warning line naming the keys, 0. On success, sets
 * the log mask key (log.mask_secret, else derived from provider_key.secret,
 * else random per process). argv_secret: the first -X key holding a
 * secret, or NULL. Main thread, before any other thread starts.
 */
int ops_security_apply(const struct ops_security_opts *o, unsigned scope,
                       const char *argv_secret, char *errstr,
                       size_t errstr_size) CO_MUST_CHECK;

/*
 * The sslmode of a libpq conninfo (key=value or URI form) into out (""
 * if none). -1 if it does not parse (nothing of it is repeated: it may
 * hold a password).
 */
int ops_security_conninfo_sslmode(const char *conninfo, char *out,
                                  size_t outsz) CO_MUST_CHECK;

/* Makes the process non-dumpable (PR_SET_DUMPABLE 0) and its core files
 * empty (RLIMIT_CORE 0), unless CHARGEONCE_ALLOW_CORE=1 (then false, and
 * ops_security_apply() refuses it in production). Start of main. */
bool ops_security_no_core(void);

#endif
