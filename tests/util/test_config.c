/* SPDX-License-Identifier: Apache-2.0 */
/* Unit tests of config: the table, file, environment, -X, secrets, and
 * struct settings (config_keys.def) against the table. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "util/config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static char err[1024];

/*
 * config_keys.def expanded here on its own, apart from config.c: what
 * struct settings holds for each key (its name, offset, size and C type).
 */
enum ctype { CT_OTHER, CT_STR, CT_I64, CT_BOOL };
#define CTYPE_OF(x)                                                            \
        _Generic((x), const char *: CT_STR, int64_t: CT_I64, bool: CT_BOOL,    \
                 default: CT_OTHER)
#define FIELD(f) (((struct settings *)0)->f)

struct field_info {
        const char *key;
        const char *field;
        enum config_type type;
        size_t offset;
        size_t size;
        enum ctype ctype;
};

static const struct field_info fields[] = {
#define CO_KEY(k, f, t, ...)                                                   \
        { k,                                                                   \
          #f,                                                                  \
          CONFIG_##t,                                                          \
          offsetof(struct settings, f),                                        \
          sizeof(FIELD(f)),                                                    \
          CTYPE_OF(FIELD(f)) },
#include "util/config_keys.def"
#undef CO_KEY
};
#define N_FIELDS (sizeof(fields) / sizeof(*fields))

/* The field of key i of the table in s, by the table's offset. */
static const void *field_at(const struct settings *s, size_t i)
{
        size_t n;
        return (const char *)s + config_keys(&n)[i].offset;
}

static const char *field_str(const struct settings *s, size_t i)
{
        const char *v;
        memcpy(&v, field_at(s, i), sizeof(v));
        return v;
}

static int64_t field_i64(const struct settings *s, size_t i)
{
        int64_t v;
        memcpy(&v, field_at(s, i), sizeof(v));
        return v;
}

static bool field_bool(const struct settings *s, size_t i)
{
        bool v;
        memcpy(&v, field_at(s, i), sizeof(v));
        return v;
}

/* The typed field of key i agrees with the text config_str() reads. */
static void assert_field_matches_text(const struct config *c, size_t i)
{
        size_t n;
        const struct config_key *k = &config_keys(&n)[i];
        const struct settings *s   = config_settings(c);

        switch (k->type) {
        case CONFIG_STR:
        case CONFIG_ENUM:
                assert_ptr_equal(field_str(s, i), config_str(c, k->name));
                break;
        case CONFIG_INT:
                assert_int_equal(field_i64(s, i), config_int(c, k->name));
                break;
        case CONFIG_DURATION:
                assert_int_equal(field_i64(s, i), config_ms(c, k->name));
                break;
        case CONFIG_BOOL:
                assert_int_equal(field_bool(s, i), config_bool(c, k->name));
                break;
        }
}

static void test_defaults(void **state)
{
        struct config *c = config_new();
        (void)state;
        assert_string_equal(config_str(c, "group.id"), "chargeonce");
        assert_string_equal(config_str(c, "topic.intents"), "payments.intents");
        assert_string_equal(config_str(c, "topic.results"), "payments.results");
        assert_string_equal(config_str(c, "topic.dlq"), "payments.intents.dlq");
        assert_true(config_bool(c, "gateway.idempotency_keys"));
        assert_int_equal(config_ms(c, "gateway.key_retention"), 86400000);
        assert_int_equal(config_int(c, "consumer.max_in_flight"), 1000);
        config_destroy(c);
}

static void test_set_and_errors(void **state)
{
        struct config *c = config_new();
        (void)state;
        assert_int_equal(config_set_arg(c, "gateway.idempotency_keys=false",
                                        err, sizeof(err)),
                         0);
        assert_false(config_bool(c, "gateway.idempotency_keys"));
        assert_int_equal(config_set(c, "nope.key", "1", err, sizeof(err)), -1);
        assert_non_null(strstr(err, "nope.key"));
        assert_int_equal(
            config_set(c, "consumer.max_in_flight", "0", err, sizeof(err)), -1);
        assert_non_null(strstr(err, "consumer.max_in_flight"));
        assert_non_null(strstr(err, "out of range"));
        assert_int_equal(
            config_set(c, "gateway.timeout", "soon", err, sizeof(err)), -1);
        assert_non_null(strstr(err, "gateway.timeout"));
        assert_int_equal(config_set(c, "log.level", "loud", err, sizeof(err)),
                         -1);
        assert_int_equal(config_set_arg(c, "novalue", err, sizeof(err)), -1);
        assert_int_equal(config_set_arg(c, "=x", err, sizeof(err)), -1);
        assert_int_equal(config_set(c, "kafka.", "x", err, sizeof(err)), -1);
        /* kafka.* passes through, last value wins */
        assert_int_equal(
            config_set(c, "kafka.bootstrap.servers", "a:1", err, sizeof(err)),
            0);
        assert_int_equal(
            config_set(c, "kafka.bootstrap.servers", "b:2", err, sizeof(err)),
            0);
        assert_int_equal(config_kafka_count(c), 1);
        const char *n, *v;
        config_kafka_get(c, 0, &n, &v);
        assert_string_equal(n, "bootstrap.servers");
        assert_string_equal(v, "b:2");
        config_destroy(c);
}

static void test_secret_never_echoed(void **state)
{
        struct config *c = config_new();
        char *buf        = NULL;
        size_t len       = 0;
        FILE *f;
        (void)state;
        assert_int_equal(config_set(c, "gateway.api_key", "sk_live_SECRET", err,
                                    sizeof(err)),
                         0);
        assert_int_equal(
            config_set(c, "kafka.sasl.password", "PWSECRET", err, sizeof(err)),
            0);
        f = open_memstream(&buf, &len);
        config_dump(c, f);
        fclose(f);
        assert_null(strstr(buf, "SECRET"));
        assert_non_null(strstr(buf, "gateway.api_key = <hidden>"));
        assert_non_null(strstr(buf, "kafka.sasl.password = <hidden>"));
        free(buf);
        assert_true(config_key_is_secret("provider_key.secret"));
        assert_true(config_key_is_secret("db.conninfo"));
        assert_false(config_key_is_secret("gateway.url"));
        config_destroy(c);
}

static void test_file_and_secret_file(void **state)
{
        char path[] = "/tmp/co_cfg_XXXXXX", spath[] = "/tmp/co_sec_XXXXXX";
        int fd = mkstemp(path), sfd = mkstemp(spath);
        FILE *f;
        struct config *c = config_new();
        (void)state;
        assert_true(fd >= 0 && sfd >= 0);
        assert_int_equal(write(sfd, "s3cr3t\n", 7), 7);
        close(sfd);
        f = fdopen(fd, "w");
        fprintf(f,
                "# comment\n\n  group.id = g1  \n"
                "provider_key.secret_file = %s\n"
                "kafka.client.id=me\n",
                spath);
        fclose(f);
        assert_int_equal(config_load_file(c, path, err, sizeof(err)), 0);
        assert_string_equal(config_str(c, "group.id"), "g1");
        assert_string_equal(config_str(c, "provider_key.secret"), "s3cr3t");
        /* a bad line names file, line and key */
        f = fopen(path, "w");
        fprintf(f, "group.id = ok\ngateway.max_attempts = many\n");
        fclose(f);
        assert_int_equal(config_load_file(c, path, err, sizeof(err)), -1);
        assert_non_null(strstr(err, ":2: gateway.max_attempts"));
        f = fopen(path, "w");
        fprintf(f, "just words\n");
        fclose(f);
        assert_int_equal(config_load_file(c, path, err, sizeof(err)), -1);
        assert_non_null(strstr(err, ":1: expected key = value"));
        /* a _file of a key that is not a secret is unknown */
        assert_int_equal(
            config_set(c, "group.id_file", spath, err, sizeof(err)), -1);
        unlink(path);
        unlink(spath);
        config_destroy(c);
}

/* A Kafka secret property from <prop>_file (file and
 * environment forms, consumer./producer. too); the path is no secret; a
 * non-secret property has no _file form. */
static void test_kafka_secret_file(void **state)
{
        char spath[]     = "/tmp/co_ksec_XXXXXX", env_file[128];
        int sfd          = mkstemp(spath);
        struct config *c = config_new();
        const char *n, *v;
        char *envp[] = { env_file, (char *)"CHARGEONCE_ALLOW_CORE=1", NULL };
        (void)state;
        assert_true(sfd >= 0);
        assert_int_equal(write(sfd, "k4fk4-pw\r\n", 10), 10);
        close(sfd);
        char arg[64];
        snprintf(arg, sizeof(arg), "kafka.sasl.password_file=%s", spath);
        assert_int_equal(config_set_arg(c, arg, err, sizeof(err)), 0);
        assert_int_equal(config_kafka_count(c), 1);
        config_kafka_get(c, 0, &n, &v);
        assert_string_equal(n, "sasl.password");
        assert_string_equal(v, "k4fk4-pw");
        snprintf(env_file, sizeof(env_file),
                 "CHARGEONCE_KAFKA_PRODUCER_SSL_KEY_PASSWORD_FILE=%s", spath);
        assert_int_equal(config_load_env(c, envp, err, sizeof(err)), 0);
        config_kafka_get(c, 1, &n, &v);
        assert_string_equal(n, "producer.ssl.key.password");
        assert_string_equal(v, "k4fk4-pw");
        /* what is secret on a command line */
        assert_false(config_key_is_secret("kafka.sasl.password_file"));
        assert_true(config_arg_is_secret("kafka.consumer.sasl.password=x"));
        assert_true(
            config_arg_is_secret("kafka.sasl.oauthbearer.client.secret=x"));
        assert_true(config_arg_is_secret("log.mask_secret=x"));
        assert_false(config_arg_is_secret("log.mask_secret_file=/p"));
        assert_false(config_arg_is_secret("kafka.client.id=x"));
        assert_false(config_arg_is_secret("provider_key.secret"));
        /* a missing file names the key, not its content */
        assert_int_equal(config_set(c, "kafka.sasl.password_file",
                                    "/nonexistent", err, sizeof(err)),
                         -1);
        assert_non_null(strstr(err, "kafka.sasl.password_file: cannot open"));
        unlink(spath);
        config_destroy(c);
}

/* A kafka.* secret with a name longer than any buffer is still hidden. */
static void test_long_secret_name_hidden(void **state)
{
        struct config *c = config_new();
        char key[400], *buf = NULL;
        size_t len = 0;
        FILE *f;
        (void)state;
        snprintf(key, sizeof(key), "kafka.%0300d.sasl.password", 0);
        assert_int_equal(config_set(c, key, "PWSECRET", err, sizeof(err)), 0);
        f = open_memstream(&buf, &len);
        config_dump(c, f);
        fclose(f);
        assert_null(strstr(buf, "PWSECRET"));
        assert_non_null(strstr(buf, ".sasl.password = <hidden>"));
        free(buf);
        config_destroy(c);
}

/* The file parser on memory: the name in messages, a NUL byte and an
 * over-long line are errors, a last line without '\n' counts. */
static void test_load_buffer(void **state)
{
        static const char ok[]  = "# c\r\n group.id = g7 \r\nlog.level=warn";
        static const char nul[] = "group.id = a\n#\0\n";
        struct config *c        = config_new();
        char *line              = malloc(CONFIG_LINE_MAX + 2);
        (void)state;
        assert_int_equal(
            config_load_buffer(c, "mem", ok, sizeof(ok) - 1, err, sizeof(err)),
            0);
        assert_string_equal(config_str(c, "group.id"), "g7");
        assert_string_equal(config_str(c, "log.level"), "warn");
        assert_int_equal(config_load_buffer(c, "mem", nul, sizeof(nul) - 1, err,
                                            sizeof(err)),
                         -1);
        assert_string_equal(err, "mem:2: NUL byte");
        /* a line of exactly CONFIG_LINE_MAX bytes is read, one more is not */
        memset(line, ' ', CONFIG_LINE_MAX + 1);
        memcpy(line, "group.id=g8", 11);
        assert_int_equal(config_load_buffer(c, "mem", line, CONFIG_LINE_MAX,
                                            err, sizeof(err)),
                         0);
        assert_string_equal(config_str(c, "group.id"), "g8");
        assert_int_equal(config_load_buffer(c, "mem", line, CONFIG_LINE_MAX + 1,
                                            err, sizeof(err)),
                         -1);
        assert_non_null(strstr(err, "mem:1: line longer than 4094 bytes"));
        free(line);
        config_destroy(c);
}

static void test_env(void **state)
{
        struct config *c = config_new();
        char *env1[]     = { (char *)"PATH=/bin",
                             (char *)"CHARGEONCE_GATEWAY_API_KEY=k",
                             (char *)"CHARGEONCE_GROUP_ID=g2",
                             (char *)"CHARGEONCE_KAFKA_BOOTSTRAP_SERVERS=h:1",
                             (char *)"CHARGEONCE_TEST_PG=ignored",
                             (char *)"CHARGEONCE_FAILPOINTS=x=kill",
                             NULL };
        char *env2[]     = { (char *)"CHARGEONCE_NO_SUCH_THING=1", NULL };
        const struct config_env_note *notes;
        char *env3[] = { (char *)"CHARGEONCE_CONSUMER_BATCH_SIZE=-3", NULL };
        (void)state;
        assert_int_equal(config_load_env(c, env1, err, sizeof(err)), 0);
        assert_string_equal(config_str(c, "gateway.api_key"), "k");
        assert_string_equal(config_str(c, "group.id"), "g2");
        const char *n, *v;
        config_kafka_get(c, 0, &n, &v);
        assert_string_equal(n, "bootstrap.servers");
        assert_string_equal(v, "h:1");
        /* a variable that names no key never stops the process: noted */
        assert_int_equal(config_load_env(c, env2, err, sizeof(err)), 0);
        assert_int_equal(config_env_notes(c, &notes), 3);
        assert_string_equal(notes[0].name, "CHARGEONCE_TEST_PG");
        assert_int_equal(notes[0].kind, CONFIG_ENV_TOOL);
        assert_int_equal(notes[1].kind, CONFIG_ENV_TOOL);
        assert_string_equal(notes[2].name, "CHARGEONCE_NO_SUCH_THING");
        assert_int_equal(notes[2].kind, CONFIG_ENV_UNKNOWN);
        assert_null(notes[2].like_key);
        assert_int_equal(config_load_env(c, env3, err, sizeof(err)), -1);
        assert_non_null(strstr(err, "consumer.batch_size"));
        config_destroy(c);
}

/* The typed defaults are the table's, parsed. */
static void test_settings_defaults(void **state)
{
        struct config *c         = config_new();
        const struct settings *s = config_settings(c);
        size_t n;
        const struct config_key *keys = config_keys(&n);
        (void)state;
        assert_string_equal(s->db_conninfo, "");
        assert_int_equal(s->db_connections, 2);
        assert_string_equal(s->group_id, "chargeonce");
        assert_string_equal(s->topic_dlq, "payments.intents.dlq");
        assert_string_equal(s->gateway_url, "http://127.0.0.1:8089");
        assert_true(s->gateway_idempotency_keys);
        assert_int_equal(s->gateway_key_retention_ms, 86400000);
        assert_int_equal(s->gateway_timeout_ms, 10000);
        assert_int_equal(s->gateway_backoff_base_ms, 100);
        assert_int_equal(s->gateway_max_connections, 512);
        assert_int_equal(s->consumer_max_message_bytes, 262144);
        assert_int_equal(s->consumer_batch_linger_ms, 2);
        assert_int_equal(s->relay_retention_ms, 7 * 86400000LL);
        assert_int_equal(s->reconcile_backoff_max_ms, 5 * 60000);
        assert_true(s->reconcile_enabled);
        assert_string_equal(s->log_level, "info");
        for (size_t i = 0; i < n; i++) {
                assert_string_equal(config_str(c, keys[i].name), keys[i].def);
                assert_field_matches_text(c, i);
        }
        config_destroy(c);
}

/* Every key of the table has its field in struct settings, named by the
 * rule, of its type, where the table says; no two fields overlap. */
static void test_settings_cover_table(void **state)
{
        size_t n;
        const struct config_key *keys = config_keys(&n);
        (void)state;
        assert_int_equal(n, N_FIELDS);
        for (size_t i = 0; i < n; i++) {
                char want[128];
                size_t j = 0;

                assert_string_equal(keys[i].name, fields[i].key);
                assert_string_equal(keys[i].field, fields[i].field);
                assert_int_equal(keys[i].type, fields[i].type);
                assert_int_equal(keys[i].offset, fields[i].offset);
                /* key with '.' -> '_', "_ms" after a duration */
                for (const char *p = keys[i].name; *p; p++)
                        want[j++] = *p == '.' ? '_' : *p;
                want[j] = '\0';
                if (keys[i].type == CONFIG_DURATION)
                        strcat(want, "_ms");
                assert_string_equal(keys[i].field, want);
                switch (keys[i].type) {
                case CONFIG_STR:
                case CONFIG_ENUM:
                        assert_int_equal(fields[i].ctype, CT_STR);
                        break;
                case CONFIG_INT:
                case CONFIG_DURATION:
                        assert_int_equal(fields[i].ctype, CT_I64);
                        break;
                case CONFIG_BOOL:
                        assert_int_equal(fields[i].ctype, CT_BOOL);
                        break;
                }
                assert_true(fields[i].offset + fields[i].size <=
                            sizeof(struct settings));
                for (size_t k = 0; k < i; k++)
                        assert_true(fields[k].offset + fields[k].size <=
                                        fields[i].offset ||
                                    fields[i].offset + fields[i].size <=
                                        fields[k].offset);
                /* the type's own fields of the entry */
                assert_true((keys[i].type == CONFIG_ENUM) ==
                            (keys[i].choices != NULL));
                assert_non_null(keys[i].help);
        }
}

/* A value of key that its syntax accepts, unlike its default. */
static const char *valid_str(const char *key, size_t i)
{
        static char buf[64];

        if (!strcmp(key, "gateway.url"))
                return "https://gw.example.com:8443/v1";
        if (!strcmp(key, "http.listen"))
                return "[::1]:9200";
        snprintf(buf, sizeof(buf), "value-%zu", i);
        return buf;
}

/*
 * Kubernetes service links (a Service named chargeonce, chargeonce-kafka,
 * chargeonce-gateway), Docker's legacy links and the project's own
 * variables never stop the process, never set a key, and are noted as
 * such; a key's own variable still wins over any pattern.
 */
static void test_env_platform(void **state)
{
        static const char *const links[] = {
                "CHARGEONCE_SERVICE_HOST",
                "CHARGEONCE_SERVICE_PORT",
                "CHARGEONCE_SERVICE_PORT_METRICS",
                "CHARGEONCE_PORT",
                "CHARGEONCE_PORT_9108_TCP",
                "CHARGEONCE_PORT_9108_TCP_PROTO",
                "CHARGEONCE_PORT_9108_TCP_PORT",
                "CHARGEONCE_PORT_9108_TCP_ADDR",
                "CHARGEONCE_PORT_53_UDP",
                "CHARGEONCE_KAFKA_SERVICE_HOST",
                "CHARGEONCE_KAFKA_PORT",
                "CHARGEONCE_KAFKA_PORT_9092_TCP_ADDR",
                "CHARGEONCE_GATEWAY_SERVICE_PORT_HTTPS",
                "CHARGEONCE_DB_PORT",
                "CHARGEONCE_NAME",
                "CHARGEONCE_ENV_PATH",
        };
        static const char *const tools[] = {
                "CHARGEONCE_TEST_KAFKA",   "CHARGEONCE_FAILPOINTS",
                "CHARGEONCE_ALLOW_CORE",   "CHARGEONCE_FAILPOINTS_LOG",
                "CHARGEONCE_BIN",          "CHARGEONCE_SIM_BIN",
                "CHARGEONCE_SOURCE_DIR",   "CHARGEONCE_SVC_ADDR",
                "CHARGEONCE_SOAK_SECONDS", "CHARGEONCE_KEEP_SERVICES_DIR",
        };
        char *envp[2], var[128];
        (void)state;

        for (size_t i = 0; i < sizeof(links) / sizeof(*links); i++) {
                struct config *c = config_new();
                const struct config_env_note *n;

                snprintf(var, sizeof(var), "%s=tcp://10.0.0.7:9108", links[i]);
                envp[0] = var;
                envp[1] = NULL;
                if (config_load_env(c, envp, err, sizeof(err)) != 0)
                        fail_msg("%s stopped the process: %s", links[i], err);
                assert_int_equal(config_env_notes(c, &n), 1);
                assert_string_equal(n[0].name, links[i]);
                if (n[0].kind != CONFIG_ENV_PLATFORM)
                        fail_msg("%s: kind %d, not a platform's link", links[i],
                                 n[0].kind);
                assert_int_equal(config_kafka_count(c), 0);
                config_destroy(c);
        }
        for (size_t i = 0; i < sizeof(tools) / sizeof(*tools); i++) {
                struct config *c = config_new();
                const struct config_env_note *n;

                snprintf(var, sizeof(var), "%s=x", tools[i]);
                envp[0] = var;
                envp[1] = NULL;
                assert_int_equal(config_load_env(c, envp, err, sizeof(err)), 0);
                assert_int_equal(config_env_notes(c, &n), 1);
                assert_int_equal(n[0].kind, CONFIG_ENV_TOOL);
                config_destroy(c);
        }
        {
                /* the key's own variable: set, not noted */
                struct config *c = config_new();
                const struct config_env_note *n;

                envp[0] = (char *)"CHARGEONCE_HTTP_LISTEN=0.0.0.0:9108";
                envp[1] = NULL;
                assert_int_equal(config_load_env(c, envp, err, sizeof(err)), 0);
                assert_string_equal(config_settings(c)->http_listen,
                                    "0.0.0.0:9108");
                assert_int_equal(config_env_notes(c, &n), 0);
                config_destroy(c);
        }
}

/* A misspelt variable is noted with the key it resembles; an unrelated
 * one with none. */
static void test_env_misspelt(void **state)
{
        static const struct {
                const char *var, *like, *like_env;
        } cases[] = {
                { "CHARGEONCE_GATEWAY_URLL", "gateway.url",
                  "CHARGEONCE_GATEWAY_URL" },
                { "CHARGEONCE_GATEWAY_UR", "gateway.url",
                  "CHARGEONCE_GATEWAY_URL" },
                { "CHARGEONCE_GRUOP_ID", "group.id", "CHARGEONCE_GROUP_ID" },
                { "CHARGEONCE_HTTP_LISTENS", "http.listen",
                  "CHARGEONCE_HTTP_LISTEN" },
                { "CHARGEONCE_GATEWAY_API_KEY_FIEL", "gateway.api_key",
                  "CHARGEONCE_GATEWAY_API_KEY_FILE" },
                { "CHARGEONCE_LEASE_DURATON", "lease.duration",
                  "CHARGEONCE_LEASE_DURATION" },
                /* far from every key but in a key's section */
                { "CHARGEONCE_GATEWAY_SOMETHING_ELSE_ENTIRELY", NULL,
                  "CHARGEONCE_GATEWAY_" },
                { "CHARGEONCE_FROBNICATE", NULL, NULL },
        };
        char *envp[2], var[128];
        (void)state;

        for (size_t i = 0; i < sizeof(cases) / sizeof(*cases); i++) {
                struct config *c = config_new();
                const struct config_env_note *n;

                snprintf(var, sizeof(var), "%s=1", cases[i].var);
                envp[0] = var;
                envp[1] = NULL;
                assert_int_equal(config_load_env(c, envp, err, sizeof(err)), 0);
                assert_int_equal(config_env_notes(c, &n), 1);
                if (!cases[i].like_env) {
                        assert_int_equal(n[0].kind, CONFIG_ENV_UNKNOWN);
                        assert_null(n[0].like_key);
                } else {
                        if (n[0].kind != CONFIG_ENV_MISSPELT)
                                fail_msg("%s: not noted as misspelt",
                                         cases[i].var);
                        if (cases[i].like &&
                            strcmp(n[0].like_key, cases[i].like))
                                fail_msg("%s: like %s, want %s", cases[i].var,
                                         n[0].like_key, cases[i].like);
                        if (strncmp(n[0].like_env, cases[i].like_env,
                                    strlen(cases[i].like_env)))
                                fail_msg("%s: like %s, want %s", cases[i].var,
                                         n[0].like_env, cases[i].like_env);
                }
                config_destroy(c);
        }
}

/* Each key with a syntax of its own is a key of the table; its good
 * values are taken, its bad ones refused naming the key. */
static void test_syntax(void **state)
{
        static const struct {
                const char *key, *value;
                bool ok;
        } cases[] = {
                { "gateway.url", "https://gw.example.com", true },
                { "gateway.url", "http://127.0.0.1:8089", true },
                { "gateway.url", "HTTPS://gw:443/api/v1?x=1", true },
                { "gateway.url", "http://[::1]:8089/", true },
                { "gateway.url", "ftp://gw", false },
                { "gateway.url", "gw.example.com", false },
                { "gateway.url", "https://", false },
                { "gateway.url", "https:///path", false },
                { "gateway.url", "https://:443", false },
                { "gateway.url", "https://gw:", false },
                { "gateway.url", "https://gw:65536", false },
                { "gateway.url", "https://gw:x", false },
                { "gateway.url", "https://user:pw@gw", false },
                { "gateway.url", "https://g w", false },
                { "gateway.url", "", false },
                { "http.listen", "", true },
                { "http.listen", "127.0.0.1:9108", true },
                { "http.listen", "0.0.0.0:0", true },
                { "http.listen", "localhost:9108", true },
                { "http.listen", "[::]:9108", true },
                { "http.listen", "9108", false },
                { "http.listen", ":9108", false },
                { "http.listen", "host:", false },
                { "http.listen", "host:65536", false },
                { "http.listen", "::1:9108", false },
                { "http.listen", "a b:1", false },
                { "topic.intents", "payments.intents", true },
                { "topic.results", "a_b-c.d", true },
                { "topic.dlq", "", false },
                { "topic.dlq", "..", false },
                { "topic.dlq", "a/b", false },
                { "group.id", "g", true },
                { "group.id", "", false },
                { "worker.id", "", true },
                { "worker.id", "chargeonce-0", true },
                { "worker.id", "a\tb", false },
                { "gateway.api_key", "sk_test_1", true },
                { "gateway.api_key", "sk\r\nX-Evil: 1", false },
        };
        size_t n;
        const struct config_key *keys = config_keys(&n);
        (void)state;

        for (size_t i = 0; config_syntax_key(i); i++) {
                bool found = false;

                for (size_t k = 0; k < n; k++)
                        found = found ||
                                !strcmp(keys[k].name, config_syntax_key(i));
                if (!found)
                        fail_msg("%s has a syntax but is no key",
                                 config_syntax_key(i));
        }
        for (size_t i = 0; i < sizeof(cases) / sizeof(*cases); i++) {
                struct config *c = config_new();
                int rc = config_set(c, cases[i].key, cases[i].value, err,
                                    sizeof(err));

                if (cases[i].ok && rc != 0)
                        fail_msg("%s = \"%s\" refused: %s", cases[i].key,
                                 cases[i].value, err);
                if (!cases[i].ok && rc == 0)
                        fail_msg("%s = \"%s\" taken", cases[i].key,
                                 cases[i].value);
                if (!cases[i].ok &&
                    strncmp(err, cases[i].key, strlen(cases[i].key)))
                        fail_msg("%s: the error does not name it: %s",
                                 cases[i].key, err);
                /* a secret's value is never repeated */
                if (!cases[i].ok && !strcmp(cases[i].key, "gateway.api_key"))
                        assert_null(strstr(err, "Evil"));
                config_destroy(c);
        }
}

/* The rules between keys, judged once every source is loaded. */
static void test_check(void **state)
{
        static const struct {
                const char *set[2];
                const char *says; /* NULL: fine */
        } cases[] = {
                { { NULL, NULL }, NULL },
                { { "http.tls_cert_file=/c.pem", NULL },
                  "http.tls_cert_file is set without http.tls_key_file" },
                { { "http.tls_key_file=/k.pem", NULL },
                  "http.tls_key_file is set without http.tls_cert_file" },
                { { "http.tls_cert_file=/c.pem", "http.tls_key_file=/k.pem" },
                  NULL },
                { { "webhook.secret=whsec_x", "webhook.secret_file=/w" },
                  "webhook.secret and webhook.secret_file" },
                { { "gateway.backoff_max=10ms", NULL },
                  "gateway.backoff_max (10ms) is shorter than "
                  "gateway.backoff_base (100ms)" },
                { { "gateway.backoff_base=5s", NULL }, NULL },
                { { "reconcile.backoff_base=10m", NULL },
                  "reconcile.backoff_max (5m) is shorter than "
                  "reconcile.backoff_base (10m)" },
        };
        (void)state;

        for (size_t i = 0; i < sizeof(cases) / sizeof(*cases); i++) {
                struct config *c = config_new();
                int rc;

                for (size_t k = 0; k < 2 && cases[i].set[k]; k++)
                        assert_int_equal(config_set_arg(c, cases[i].set[k], err,
                                                        sizeof(err)),
                                         0);
                err[0] = '\0';
                rc     = config_check(c, err, sizeof(err));
                if (!cases[i].says && rc != 0)
                        fail_msg("case %zu refused: %s", i, err);
                if (cases[i].says && (rc == 0 || !strstr(err, cases[i].says)))
                        fail_msg("case %zu: \"%s\", want \"%s\"", i, err,
                                 cases[i].says);
                config_destroy(c);
        }
}

/* Each key, set at its edges, lands in its own field (by the table's
 * offset) and no other field changes. */
static void test_settings_every_key_set(void **state)
{
        size_t n;
        const struct config_key *keys = config_keys(&n);
        (void)state;
        for (size_t i = 0; i < n; i++) {
                struct config *c = config_new();
                struct settings before;
                const struct settings *s = config_settings(c);
                char v[64];

                switch (keys[i].type) {
                case CONFIG_STR:
                        snprintf(v, sizeof(v), "%s",
                                 valid_str(keys[i].name, i));
                        break;
                case CONFIG_ENUM: {
                        const char *bar = strrchr(keys[i].choices, '|');
                        snprintf(v, sizeof(v), "%s", bar + 1);
                        break;
                }
                case CONFIG_INT:
                        snprintf(v, sizeof(v), "%lld", (long long)keys[i].min);
                        break;
                case CONFIG_DURATION:
                        snprintf(v, sizeof(v), "%lldms",
                                 (long long)keys[i].min);
                        break;
                case CONFIG_BOOL:
                        snprintf(v, sizeof(v), "%s",
                                 field_bool(s, i) ? "off" : "on");
                        break;
                }
                memcpy(&before, s, sizeof(before));
                assert_int_equal(
                    config_set(c, keys[i].name, v, err, sizeof(err)), 0);
                assert_field_matches_text(c, i);
                switch (keys[i].type) {
                case CONFIG_STR:
                case CONFIG_ENUM:
                        assert_string_equal(field_str(s, i), v);
                        break;
                case CONFIG_INT:
                case CONFIG_DURATION:
                        assert_int_equal(field_i64(s, i), keys[i].min);
                        break;
                case CONFIG_BOOL:
                        assert_int_not_equal(field_bool(&before, i),
                                             field_bool(s, i));
                        break;
                }
                for (size_t k = 0; k < n; k++)
                        if (k != i)
                                assert_memory_equal(
                                    (const char *)s + fields[k].offset,
                                    (const char *)&before + fields[k].offset,
                                    fields[k].size);
                /* the top of a bounded range too */
                if ((keys[i].type == CONFIG_INT ||
                     keys[i].type == CONFIG_DURATION) &&
                    keys[i].max != INT64_MAX) {
                        snprintf(v, sizeof(v), "%lld%s", (long long)keys[i].max,
                                 keys[i].type == CONFIG_DURATION ? "ms" : "");
                        assert_int_equal(
                            config_set(c, keys[i].name, v, err, sizeof(err)),
                            0);
                        assert_int_equal(field_i64(s, i), keys[i].max);
                        assert_field_matches_text(c, i);
                }
                config_destroy(c);
        }
}

/* Typed values follow every source, later ones winning: file, then the
 * environment, then -X; a secret from a file too. */
static void test_settings_follow_sources(void **state)
{
        char path[] = "/tmp/co_cfg_XXXXXX", spath[] = "/tmp/co_sec_XXXXXX";
        int fd = mkstemp(path), sfd = mkstemp(spath);
        struct config *c         = config_new();
        const struct settings *s = config_settings(c);
        char *env[]              = { (char *)"CHARGEONCE_GATEWAY_TIMEOUT=3s",
                                     (char *)"CHARGEONCE_RELAY_ENABLED=false",
                                     (char *)"CHARGEONCE_DB_CONNECTIONS=9", NULL };
        FILE *f;
        (void)state;
        assert_true(fd >= 0 && sfd >= 0);
        assert_int_equal(write(sfd, "k3y\n", 4), 4);
        close(sfd);
        f = fdopen(fd, "w");
        fprintf(f,
                "group.id = g1\ngateway.timeout = 2s\n"
                "db.connections = 4\nlog.level = warn\n"
                "gateway.api_key_file = %s\n",
                spath);
        fclose(f);
        assert_int_equal(config_load_file(c, path, err, sizeof(err)), 0);
        assert_ptr_equal(config_settings(c), s);
        assert_string_equal(s->group_id, "g1");
        assert_int_equal(s->gateway_timeout_ms, 2000);
        assert_int_equal(s->db_connections, 4);
        assert_string_equal(s->log_level, "warn");
        assert_string_equal(s->gateway_api_key, "k3y");
        assert_int_equal(config_load_env(c, env, err, sizeof(err)), 0);
        assert_int_equal(s->gateway_timeout_ms, 3000);
        assert_false(s->relay_enabled);
        assert_int_equal(s->db_connections, 9);
        assert_string_equal(s->group_id, "g1");
        assert_int_equal(
            config_set_arg(c, "gateway.timeout=250ms", err, sizeof(err)), 0);
        assert_int_equal(config_set_arg(c, "group.id=g3", err, sizeof(err)), 0);
        assert_int_equal(
            config_set_arg(c, "relay.enabled=yes", err, sizeof(err)), 0);
        assert_int_equal(s->gateway_timeout_ms, 250);
        assert_string_equal(s->group_id, "g3");
        assert_true(s->relay_enabled);
        /* the string is the one config_str() reads */
        assert_ptr_equal(s->group_id, config_str(c, "group.id"));
        unlink(path);
        unlink(spath);
        config_destroy(c);
}

/* A duration is kept in milliseconds, whatever unit it was written in. */
static void test_settings_duration_ms(void **state)
{
        static const struct {
                const char *text;
                int64_t ms;
        } cases[]                = { { "250ms", 250 },    { "7", 7000 },
                                     { "10s", 10000 },    { "5m", 300000 },
                                     { "24h", 86400000 }, { "7d", 604800000 },
                                     { "0ms", 0 } };
        struct config *c         = config_new();
        const struct settings *s = config_settings(c);
        (void)state;
        for (size_t i = 0; i < sizeof(cases) / sizeof(*cases); i++) {
                assert_int_equal(config_set(c, "relay.retention", cases[i].text,
                                            err, sizeof(err)),
                                 0);
                assert_int_equal(s->relay_retention_ms, cases[i].ms);
                assert_int_equal(config_ms(c, "relay.retention"), cases[i].ms);
        }
        config_destroy(c);
}

/* A bad value names its key, wherever it came from, and leaves the typed
 * value (and the text) as they were. */
static void test_settings_bad_value_kept(void **state)
{
        struct config *c         = config_new();
        const struct settings *s = config_settings(c);
        char *env[] = { (char *)"CHARGEONCE_GATEWAY_DEADLINE=never", NULL };
        static const char file[] = "gateway.max_attempts = 3\n"
                                   "gateway.max_attempts = 101\n";
        static const struct {
                const char *key, *value, *says;
        } bad[] = {
                { "gateway.timeout", "soon", "is not a duration" },
                { "gateway.timeout", "0ms", "out of range" },
                { "db.connections", "65", "out of range" },
                { "db.connections", "2x", "is not an integer" },
                { "relay.enabled", "maybe", "is not a boolean" },
                { "log.level", "loud", "is not one of" },
        };
        (void)state;
        for (size_t i = 0; i < sizeof(bad) / sizeof(*bad); i++) {
                struct settings before;
                memcpy(&before, s, sizeof(before));
                assert_int_equal(
                    config_set(c, bad[i].key, bad[i].value, err, sizeof(err)),
                    -1);
                assert_non_null(strstr(err, bad[i].key));
                assert_non_null(strstr(err, bad[i].says));
                assert_memory_equal(&before, s, sizeof(before));
        }
        assert_int_equal(config_set_arg(c, "log.level=loud", err, sizeof(err)),
                         -1);
        assert_non_null(strstr(err, "log.level"));
        assert_string_equal(s->log_level, "info");
        assert_int_equal(config_load_env(c, env, err, sizeof(err)), -1);
        assert_non_null(strstr(err, "CHARGEONCE_GATEWAY_DEADLINE"));
        assert_non_null(strstr(err, "gateway.deadline"));
        assert_int_equal(s->gateway_deadline_ms, 30000);
        /* a file's lines before the bad one stay applied */
        assert_int_equal(config_load_buffer(c, "mem", file, sizeof(file) - 1,
                                            err, sizeof(err)),
                         -1);
        assert_non_null(strstr(err, "mem:2: gateway.max_attempts"));
        assert_int_equal(s->gateway_max_attempts, 3);
        config_destroy(c);
}

int main(void)
{
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_defaults),
                cmocka_unit_test(test_set_and_errors),
                cmocka_unit_test(test_secret_never_echoed),
                cmocka_unit_test(test_file_and_secret_file),
                cmocka_unit_test(test_kafka_secret_file),
                cmocka_unit_test(test_long_secret_name_hidden),
                cmocka_unit_test(test_load_buffer),
                cmocka_unit_test(test_env),
                cmocka_unit_test(test_env_platform),
                cmocka_unit_test(test_env_misspelt),
                cmocka_unit_test(test_syntax),
                cmocka_unit_test(test_check),
                cmocka_unit_test(test_settings_defaults),
                cmocka_unit_test(test_settings_cover_table),
                cmocka_unit_test(test_settings_every_key_set),
                cmocka_unit_test(test_settings_follow_sources),
                cmocka_unit_test(test_settings_duration_ms),
                cmocka_unit_test(test_settings_bad_value_kept),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
