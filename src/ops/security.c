/* SPDX-License-Identifier: Apache-2.0 */
/*
 * ops/security: security.mode, judged (ops_security_judge, pure) and
 * applied (ops_security_apply); the process's core-dump hardening; the
 * log mask key. libpq's header for PQconninfoParse only (no connection:
 * the sslmode a connection would use). Must never put a secret's value
 * in a finding or a log line.
 */
#include "ops/security.h"
#include "gateway/webhook.h"
#include "util/crypto.h"
#include "util/file.h"
#include "util/log.h"

#include <libpq-fe.h>

#include <arpa/inet.h>
#include <sys/socket.h>

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/prctl.h>
#include <sys/resource.h>

/* ---- the decision (pure) ---- */

struct judge {
        struct security_finding *out;
        size_t max, n;
};

static void CO_PRINTF(3, 4)
    found(struct judge *j, const char *key, const char *fmt, ...)
{
        va_list ap;

        if (j->n == j->max)
                return;
        snprintf(j->out[j->n].key, sizeof(j->out[j->n].key), "%s", key);
        va_start(ap, fmt);
        vsnprintf(j->out[j->n].why, sizeof(j->out[j->n].why), fmt, ap);
        va_end(ap);
        j->n++;
}

static bool already(const struct judge *j, const char *key)
{
        for (size_t i = 0; i < j->n; i++)
                if (!strcmp(j->out[i].key, key))
                        return true;
        return false;
}

static void judge_gateway(struct judge *j, const struct ops_security_opts *st)
{
        if (strncasecmp(st->gateway_url, "http://", 7) == 0)
                found(j, "gateway.url",
                      "plain http:// (the API key and card data would travel "
                      "unencrypted): use https://");
        if (!st->gateway_tls_verify)
                found(j, "gateway.tls_verify",
                      "false (the gateway's certificate is not checked)");
}

static void judge_db(struct judge *j, const struct security_facts *f)
{
        const char *mode = f->conninfo_sslmode, *key = "db.conninfo";

        if (f->conninfo_bad) {
                found(j, key, "does not parse as a libpq connection string");
                return;
        }
        if (!mode && f->pgsslmode && *f->pgsslmode) {
                mode = f->pgsslmode;
                key  = "PGSSLMODE";
        }
        if (!mode)
                found(j, key,
                      "no sslmode (nor PGSSLMODE): libpq's default prefer "
                      "checks no certificate: add sslmode=verify-full");
        else if (strcmp(mode, "verify-full") != 0)
                found(j, key, "sslmode=%.32s is below verify-full", mode);
}

/* The value of property name for role ("consumer." / "producer."), the
 * last one set winning as in kconf_new(); its full key into kbuf. */
static const char *kafka_effective(const struct security_facts *f,
                                   const char *role, const char *name,
                                   char *kbuf, size_t ksz)
{
        const char *v = NULL;
        size_t rl     = strlen(role);

        snprintf(kbuf, ksz, "kafka.%s", name);
        for (size_t i = 0; i < f->o->n_kprops; i++) {
                const char *nm = f->o->kprops[i].name;
                if (!strcmp(nm, name) ||
                    (!strncmp(nm, role, rl) && !strcmp(nm + rl, name))) {
                        v = f->o->kprops[i].value;
                        snprintf(kbuf, ksz, "kafka.%s", nm);
                }
        }
        return v;
}

static void judge_kafka(struct judge *j, const struct security_facts *f)
{
        static const char *const roles[] = { "consumer.", "producer." };
        char key[128];

        for (size_t r = 0; r < 2; r++) {
                const char *v = kafka_effective(
                    f, roles[r], "security.protocol", key, sizeof(key));
                if (already(j, key))
                        continue;
                if (!v)
                        found(j, key,
                              "unset (librdkafka's default plaintext): set "
                              "SSL or SASL_SSL");
                else if (strcasecmp(v, "ssl") && strcasecmp(v, "sasl_ssl"))
                        found(j, key, "%.32s is not SSL or SASL_SSL", v);
        }
        for (size_t r = 0; r < 2; r++) {
                const char *v = kafka_effective(
                    f, roles[r], "enable.ssl.certificate.verification", key,
                    sizeof(key));
                if (v && !already(j, key) &&
                    (!strcasecmp(v, "false") || !strcmp(v, "0")))
                        found(j, key,
                              "false (the broker's certificate is "
                              "not checked)");
                v = kafka_effective(f, roles[r],
                                    "ssl.endpoint.identification.algorithm",
                                    key, sizeof(key));
                if (v && !already(j, key) && strcasecmp(v, "https"))
                        found(j, key,
                              "%.32s (the broker's host name is not "
                              "checked): set https",
                              v);
        }
}

/* The host of "host:port" / "[v6]:port" is loopback: localhost,
 * 127.0.0.0/8, ::1 (or ::ffff:127.0.0.0/104). Literal only: a name other
 * than localhost is not resolved (the judge does no I/O), so not loopback. */
static bool listen_loopback(const char *listen)
{
        const char *colon = strrchr(listen, ':');
        unsigned char a[16];
        char host[64];
        size_t n;

        if (!colon)
                return false;
        n = (size_t)(colon - listen);
        if (n >= 2 && listen[0] == '[' && listen[n - 1] == ']') {
                listen++;
                n -= 2;
        }
        if (n == 0 || n >= sizeof(host))
                return false;
        memcpy(host, listen, n);
        host[n] = '\0';
        if (!strcasecmp(host, "localhost"))
                return true;
        if (inet_pton(AF_INET, host, a) == 1)
                return a[0] == 127;
        if (inet_pton(AF_INET6, host, a) != 1)
                return false;
        for (size_t i = 0; i < 10; i++)
                if (a[i])
                        return false;
        if (a[10] == 0 && a[11] == 0) { /* ::1 */
                for (size_t i = 12; i < 15; i++)
                        if (a[i])
                                return false;
                return a[15] == 1;
        }
        return a[10] == 0xff && a[11] == 0xff && a[12] == 127;
}

/* Webhooks and metrics in plain HTTP only on loopback (behind a local
 * TLS-terminating proxy); elsewhere TLS (http.tls_cert_file / _key_file:
 * one of them set counts, the engine refuses half a pair). */
static void judge_http(struct judge *j, const struct ops_security_opts *st)
{
        if (!*st->http_listen || *st->http_tls_cert_file ||
            *st->http_tls_key_file || listen_loopback(st->http_listen))
                return;
        found(j, "http.listen",
              "%.80s serves plain HTTP beyond loopback (webhooks and metrics "
              "unencrypted): set http.tls_cert_file and http.tls_key_file, "
              "or listen on 127.0.0.1 behind a TLS proxy",
              st->http_listen);
}

static void judge_secrets(struct judge *j, const struct security_facts *f)
{
        const struct ops_security_opts *st = f->o;
        size_t pk                          = strlen(st->provider_key_secret);
        size_t lm                          = strlen(st->log_mask_secret);

        if (pk && pk < SECURITY_SECRET_MIN)
                found(j, "provider_key.secret", "%zu bytes, fewer than %d", pk,
                      SECURITY_SECRET_MIN);
        if (f->webhook_n && f->webhook_min_len < SECURITY_SECRET_MIN)
                found(j,
                      *st->webhook_secret_file ? "webhook.secret_file"
                                               : "webhook.secret",
                      "secret %zu decodes to %zu bytes, fewer than %d",
                      f->webhook_short, f->webhook_min_len,
                      SECURITY_SECRET_MIN);
        if (lm && lm < SECURITY_SECRET_MIN)
                found(j, "log.mask_secret", "%zu bytes, fewer than %d", lm,
                      SECURITY_SECRET_MIN);
        else if (!lm && !pk)
                found(j, "log.mask_secret",
                      "unset and no provider_key.secret to derive it from: "
                      "masked keys would differ between processes");
}

size_t ops_security_judge(const struct security_facts *f,
                          struct security_finding *out, size_t max)
{
        struct judge j = { out, max, 0 };

        if (f->argv_secret)
                found(&j, f->argv_secret,
                      "a secret on the command line (any local user reads "
                      "it in ps): use a configuration file, "
                      "CHARGEONCE_<KEY> or <key>_file");
        if (f->allow_core)
                found(&j, "CHARGEONCE_ALLOW_CORE",
                      "core dumps (which hold every secret) are for "
                      "development only");
        if (f->scope & SECURITY_GATEWAY)
                judge_gateway(&j, f->o);
        if (f->scope & SECURITY_DB)
                judge_db(&j, f);
        if (f->scope & SECURITY_KAFKA)
                judge_kafka(&j, f);
        if (f->scope & SECURITY_HTTP)
                judge_http(&j, f->o);
        judge_secrets(&j, f);
        return j.n;
}

/* ---- gathering the facts ---- */

unsigned ops_security_scope(const char *subcommand)
{
        static const struct {
                const char *name;
                unsigned scope;
        } t[] = {
                { "migrate", SECURITY_DB },
                { "consume", SECURITY_ALL },
                { "relay", SECURITY_DB | SECURITY_KAFKA | SECURITY_HTTP },
                { "reconcile", SECURITY_DB | SECURITY_GATEWAY | SECURITY_HTTP },
                { "webhook", SECURITY_DB | SECURITY_HTTP },
                { "replay", SECURITY_DB | SECURITY_KAFKA },
                { "inspect", SECURITY_DB },
                { "audit", SECURITY_DB },
                { "review", SECURITY_DB | SECURITY_GATEWAY },
                { "gc", SECURITY_DB | SECURITY_KAFKA },
        };

        for (size_t i = 0; subcommand && i < sizeof(t) / sizeof(*t); i++)
                if (!strcmp(subcommand, t[i].name))
                        return t[i].scope;
        return SECURITY_ALL;
}

/* The sslmode of a conninfo (key=value or URI) into out ("" if none); -1
 * if it does not parse. The parsed options hold the password: wiped
 * before libpq frees them. */
int ops_security_conninfo_sslmode(const char *conninfo, char *out, size_t outsz)
{
        char *err              = NULL;
        PQconninfoOption *opts = PQconninfoParse(conninfo, &err);

        out[0] = '\0';
        if (!opts) {
                PQfreemem(err);
                return -1;
        }
        for (PQconninfoOption *o = opts; o->keyword; o++) {
                if (!o->val)
                        continue;
                if (!strcmp(o->keyword, "sslmode"))
                        snprintf(out, outsz, "%s", o->val);
                crypto_wipe(o->val, strlen(o->val));
        }
        PQconninfoFree(opts);
        return 0;
}

/* The webhook secrets as the http engine will read them (webhook.secret,
 * else webhook.secret_file): count, shortest. One that does not parse or
 * a file that cannot be read counts none (the engine names the error). */
static void webhook_lengths(const struct ops_security_opts *st,
                            struct security_facts *f)
{
        struct gateway_webhook_secrets ws;
        char spec[4096], err[256];
        const char *s = st->webhook_secret;
        size_t n      = 0;

        if (!*s && *st->webhook_secret_file) {
                char *buf =
                    file_read_secret(st->webhook_secret_file, sizeof(spec) - 1,
                                     &n, err, sizeof(err));
                if (!buf)
                        return;
                memcpy(spec, buf, n + 1);
                crypto_wipe(buf, n);
                free(buf);
                s = spec;
        }
        if (*s &&
            gateway_webhook_secrets_parse(s, &ws, err, sizeof(err)) == 0) {
                f->webhook_n = ws.n;
                for (size_t i = 0; i < ws.n; i++) {
                        if (i == 0 || ws.s[i].len < f->webhook_min_len) {
                                f->webhook_min_len = ws.s[i].len;
                                f->webhook_short   = i + 1;
                        }
                }
                gateway_webhook_secrets_clear(&ws);
        }
        crypto_wipe(spec, sizeof(spec));
}

/* log.mask_secret, else HMAC(provider_key.secret, "chargeonce log mask
 * v1"), else a random key per process. */
static void set_mask_key(const struct ops_security_opts *st)
{
        static const char label[] = "chargeonce log mask v1";
        unsigned char k[CRYPTO_SHA256_LEN];
        const char *pk = st->provider_key_secret;

        if (*st->log_mask_secret) {
                log_set_mask_key(st->log_mask_secret,
                                 strlen(st->log_mask_secret));
        } else if (*pk) {
                crypto_hmac_sha256(pk, strlen(pk), label, sizeof(label) - 1, k);
                log_set_mask_key(k, sizeof(k));
                crypto_wipe(k, sizeof(k));
        }
}

int ops_security_apply(const struct ops_security_opts *st, unsigned scope,
                       const char *argv_secret, char *errstr,
                       size_t errstr_size)
{
        struct security_finding fd[SECURITY_FINDINGS_MAX];
        struct security_facts f;
        char sslmode[64], keys[512];
        const char *core = getenv("CHARGEONCE_ALLOW_CORE");
        size_t n, o = 0;
        bool prod = st->production;

        memset(&f, 0, sizeof(f));
        f.o            = st;
        f.scope        = scope;
        f.conninfo_bad = ops_security_conninfo_sslmode(st->db_conninfo, sslmode,
                                                       sizeof(sslmode)) < 0;
        f.conninfo_sslmode = *sslmode ? sslmode : NULL;
        f.pgsslmode        = getenv("PGSSLMODE");
        f.argv_secret      = argv_secret;
        f.allow_core       = core && !strcmp(core, "1");
        webhook_lengths(st, &f);
        n = ops_security_judge(&f, fd, SECURITY_FINDINGS_MAX);
        if (n && prod) {
                snprintf(errstr, errstr_size,
                         "security.mode = production refuses %s: %s", fd[0].key,
                         fd[0].why);
                return -1;
        }
        set_mask_key(st);
        if (!n)
                return 0;
        keys[0] = '\0';
        for (size_t i = 0; i < n && o < sizeof(keys); i++) {
                bool seen = false;
                for (size_t k = 0; k < i; k++)
                        seen = seen || !strcmp(fd[k].key, fd[i].key);
                if (!seen)
                        o += (size_t)snprintf(keys + o, sizeof(keys) - o,
                                              "%s%s", o ? ", " : "", fd[i].key);
        }
        log_warn(NULL,
                 "security.mode = development: production would refuse "
                 "%s (see docs/configuration.md)",
                 keys);
        return 0;
}

bool ops_security_no_core(void)
{
        const char *core  = getenv("CHARGEONCE_ALLOW_CORE");
        struct rlimit off = { 0, 0 };

        if (core && !strcmp(core, "1"))
                return false;
        /* best effort: neither can fail for a process lowering itself */
        (void)prctl(PR_SET_DUMPABLE, 0, 0, 0, 0);
        (void)setrlimit(RLIMIT_CORE, &off);
        return true;
}
