/* SPDX-License-Identifier: Apache-2.0 */
/* tests/cli: ops_security_judge (ops/security.c), the decision of
 * security.mode, by a table: each case one setting below production level
 * (or none) and the key the first finding must name; the settings as
 * cmd/security.c reads them from a configuration. */
#include "cmd/security.h"
#include "util/config.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#define SECRET32 "0123456789abcdef0123456789abcdef"

/* The production-ready settings every case starts from. */
static const char *const good[] = {
        "gateway.url=https://gw.example",
        "provider_key.secret=" SECRET32,
        "db.conninfo=host=db sslmode=verify-full",
        "kafka.security.protocol=SSL",
};

struct tcase {
        const char *name;
        const char *set[4];    /* -X key=value over good[] */
        unsigned scope;        /* 0: SECURITY_ALL */
        const char *sslmode;   /* overrides db.conninfo's sslmode; "-": none */
        const char *pgsslmode; /* PGSSLMODE */
        const char *argv_secret;
        size_t webhook_min_len; /* 0: no webhook secret */
        bool allow_core;
        const char *want; /* the key of the first finding; NULL: none */
};

static const struct tcase cases[] = {
        { .name = "all good", .want = NULL },
        { .name = "http gateway",
          .set  = { "gateway.url=http://gw" },
          .want = "gateway.url" },
        { .name = "loopback http too",
          .set  = { "gateway.url=HTTP://127.0.0.1:8089" },
          .want = "gateway.url" },
        { .name = "no tls verify",
          .set  = { "gateway.tls_verify=false" },
          .want = "gateway.tls_verify" },
        { .name  = "gateway not in scope",
          .set   = { "gateway.url=http://gw", "gateway.tls_verify=false" },
          .scope = SECURITY_DB | SECURITY_KAFKA,
          .want  = NULL },
        { .name    = "sslmode require",
          .sslmode = "require",
          .want    = "db.conninfo" },
        { .name    = "sslmode verify-ca",
          .sslmode = "verify-ca",
          .want    = "db.conninfo" },
        { .name    = "no sslmode, no PGSSLMODE: prefer",
          .sslmode = "-",
          .want    = "db.conninfo" },
        { .name      = "PGSSLMODE verify-full",
          .sslmode   = "-",
          .pgsslmode = "verify-full",
          .want      = NULL },
        { .name      = "PGSSLMODE prefer",
          .sslmode   = "-",
          .pgsslmode = "prefer",
          .want      = "PGSSLMODE" },
        { .name      = "conninfo wins over PGSSLMODE",
          .sslmode   = "disable",
          .pgsslmode = "verify-full",
          .want      = "db.conninfo" },
        { .name    = "db not in scope",
          .sslmode = "disable",
          .scope   = SECURITY_GATEWAY | SECURITY_KAFKA,
          .want    = NULL },
        { .name = "kafka plaintext",
          .set  = { "kafka.security.protocol=plaintext" },
          .want = "kafka.security.protocol" },
        { .name = "kafka sasl_ssl any case",
          .set  = { "kafka.security.protocol=sasl_SSL" },
          .want = NULL },
        { .name = "kafka sasl_plaintext",
          .set  = { "kafka.security.protocol=SASL_PLAINTEXT" },
          .want = "kafka.security.protocol" },
        { .name = "producer override",
          .set  = { "kafka.producer.security.protocol=PLAINTEXT" },
          .want = "kafka.producer.security.protocol" },
        { .name = "consumer override after",
          .set  = { "kafka.consumer.security.protocol=PLAINTEXT" },
          .want = "kafka.consumer.security.protocol" },
        { .name = "no certificate check",
          .set  = { "kafka.enable.ssl.certificate.verification=false" },
          .want = "kafka.enable.ssl.certificate.verification" },
        { .name = "no host name check",
          .set  = { "kafka.ssl.endpoint.identification.algorithm=none" },
          .want = "kafka.ssl.endpoint.identification.algorithm" },
        { .name  = "kafka not in scope",
          .set   = { "kafka.security.protocol=plaintext" },
          .scope = SECURITY_DB,
          .want  = NULL },
        { .name = "http on every address",
          .set  = { "http.listen=0.0.0.0:9108" },
          .want = "http.listen" },
        { .name = "http on every v6 address",
          .set  = { "http.listen=[::]:9108" },
          .want = "http.listen" },
        { .name = "http on a private address",
          .set  = { "http.listen=10.1.2.3:9108" },
          .want = "http.listen" },
        { .name = "http on a host name (not resolved)",
          .set  = { "http.listen=metrics.internal:9108" },
          .want = "http.listen" },
        { .name = "http on localhost.<domain> is not loopback",
          .set  = { "http.listen=localhost.example:9108" },
          .want = "http.listen" },
        { .name = "http on 128.0.0.1",
          .set  = { "http.listen=128.0.0.1:9108" },
          .want = "http.listen" },
        { .name = "http on 127.0.0.2", .set = { "http.listen=127.0.0.2:0" } },
        { .name = "http on localhost",
          .set  = { "http.listen=LocalHost:9108" } },
        { .name = "http on ::1", .set = { "http.listen=[::1]:9108" } },
        { .name = "http on v4-mapped loopback",
          .set  = { "http.listen=[::ffff:127.0.0.1]:9108" } },
        { .name = "http on ::2",
          .set  = { "http.listen=[::2]:9108" },
          .want = "http.listen" },
        { .name = "http off", .set = { "http.listen=" } },
        { .name = "https on every address",
          .set  = { "http.listen=0.0.0.0:9108", "http.tls_cert_file=/c.pem",
                    "http.tls_key_file=/k.pem" } },
        { .name = "half a pair: the engine names both keys",
          .set  = { "http.listen=0.0.0.0:9108", "http.tls_key_file=/k.pem" } },
        { .name  = "http not in scope",
          .set   = { "http.listen=0.0.0.0:9108" },
          .scope = SECURITY_DB | SECURITY_GATEWAY | SECURITY_KAFKA },
        { .name = "short provider key",
          .set  = { "provider_key.secret=0123456789abcdef0123456789abcde" },
          .want = "provider_key.secret" },
        { .name            = "short webhook secret",
          .webhook_min_len = 31,
          .want            = "webhook.secret" },
        { .name = "webhook secret of 32", .webhook_min_len = 32, .want = NULL },
        { .name = "short mask secret",
          .set  = { "log.mask_secret=short" },
          .want = "log.mask_secret" },
        { .name = "no mask secret, no provider key",
          .set  = { "provider_key.secret=" },
          .want = "log.mask_secret" },
        { .name = "mask secret without provider key",
          .set  = { "provider_key.secret=", "log.mask_secret=" SECRET32 },
          .want = NULL },
        { .name        = "secret on the command line first",
          .set         = { "gateway.url=http://gw" },
          .argv_secret = "kafka.sasl.password",
          .want        = "kafka.sasl.password" },
        { .name       = "core dumps asked",
          .allow_core = true,
          .want       = "CHARGEONCE_ALLOW_CORE" },
};

static void judge_case(const struct tcase *c)
{
        struct config *cfg = config_new();
        struct security_finding fd[SECURITY_FINDINGS_MAX];
        struct security_facts f;
        struct ops_security_opts so;
        struct kafka_prop kp[8];
        char err[256];
        size_t n, nk;

        for (size_t i = 0; i < sizeof(good) / sizeof(*good); i++)
                assert_int_equal(config_set_arg(cfg, good[i], err, sizeof(err)),
                                 0);
        for (size_t i = 0; i < 4 && c->set[i]; i++)
                assert_int_equal(
                    config_set_arg(cfg, c->set[i], err, sizeof(err)), 0);
        nk = config_kafka_count(cfg);
        assert_true(nk <= 8);
        cmd_security_opts(cfg, &so, kp, nk);
        memset(&f, 0, sizeof(f));
        f.o                = &so;
        f.scope            = c->scope ? c->scope : SECURITY_ALL;
        f.conninfo_sslmode = !c->sslmode                ? "verify-full"
                             : !strcmp(c->sslmode, "-") ? NULL
                                                        : c->sslmode;
        f.pgsslmode        = c->pgsslmode;
        f.argv_secret      = c->argv_secret;
        f.allow_core       = c->allow_core;
        if (c->webhook_min_len) {
                f.webhook_n       = 2;
                f.webhook_short   = 2;
                f.webhook_min_len = c->webhook_min_len;
        }
        n = ops_security_judge(&f, fd, SECURITY_FINDINGS_MAX);
        if (!c->want) {
                if (n)
                        fail_msg("%s: unexpected finding %s: %s", c->name,
                                 fd[0].key, fd[0].why);
        } else {
                if (!n)
                        fail_msg("%s: no finding, want %s", c->name, c->want);
                if (strcmp(fd[0].key, c->want))
                        fail_msg("%s: first finding %s, want %s", c->name,
                                 fd[0].key, c->want);
                /* never a secret's value */
                assert_null(strstr(fd[0].why, SECRET32));
        }
        config_destroy(cfg);
}

static void test_table(void **state)
{
        (void)state;
        for (size_t i = 0; i < sizeof(cases) / sizeof(*cases); i++)
                judge_case(&cases[i]);
}

/* Development settings: every transport finding at once, in order. */
static void test_defaults_all(void **state)
{
        struct config *cfg = config_new();
        struct security_finding fd[SECURITY_FINDINGS_MAX];
        struct security_facts f;
        struct ops_security_opts so;
        size_t n;

        (void)state;
        cmd_security_opts(cfg, &so, NULL, 0);
        memset(&f, 0, sizeof(f));
        f.o     = &so;
        f.scope = SECURITY_ALL;
        n       = ops_security_judge(&f, fd, SECURITY_FINDINGS_MAX);
        assert_int_equal(n, 4);
        assert_string_equal(fd[0].key, "gateway.url");
        assert_string_equal(fd[1].key, "db.conninfo");
        assert_string_equal(fd[2].key, "kafka.security.protocol");
        assert_string_equal(fd[3].key, "log.mask_secret");
        /* room for one only: the first */
        assert_int_equal(ops_security_judge(&f, fd, 1), 1);
        assert_string_equal(fd[0].key, "gateway.url");
        config_destroy(cfg);
}

static void test_scope(void **state)
{
        (void)state;
        assert_int_equal(ops_security_scope("migrate"), SECURITY_DB);
        assert_int_equal(ops_security_scope("consume"), SECURITY_ALL);
        assert_int_equal(ops_security_scope(NULL), SECURITY_ALL);
        assert_int_equal(ops_security_scope("webhook") & SECURITY_GATEWAY, 0);
        assert_true(ops_security_scope("review") & SECURITY_GATEWAY);
        assert_true(ops_security_scope("relay") & SECURITY_KAFKA);
        /* the subcommands that serve HTTP, and only those */
        {
                static const char *const serve[]  = { "consume", "relay",
                                                      "reconcile", "webhook" };
                static const char *const others[] = { "migrate", "replay",
                                                      "inspect", "audit",
                                                      "review",  "gc" };
                for (size_t i = 0; i < 4; i++)
                        assert_true(ops_security_scope(serve[i]) &
                                    SECURITY_HTTP);
                for (size_t i = 0; i < 6; i++)
                        assert_int_equal(
                            ops_security_scope(others[i]) & SECURITY_HTTP, 0);
        }
}

int main(void)
{
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_table),
                cmocka_unit_test(test_defaults_all),
                cmocka_unit_test(test_scope),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
