/* Unit tests of config: the table, file, environment, -X, secrets. */
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
        char *env3[] = { (char *)"CHARGEONCE_CONSUMER_BATCH_SIZE=-3", NULL };
        (void)state;
        assert_int_equal(config_load_env(c, env1, err, sizeof(err)), 0);
        assert_string_equal(config_str(c, "gateway.api_key"), "k");
        assert_string_equal(config_str(c, "group.id"), "g2");
        const char *n, *v;
        config_kafka_get(c, 0, &n, &v);
        assert_string_equal(n, "bootstrap.servers");
        assert_string_equal(v, "h:1");
        assert_int_equal(config_load_env(c, env2, err, sizeof(err)), -1);
        assert_non_null(strstr(err, "CHARGEONCE_NO_SUCH_THING"));
        assert_int_equal(config_load_env(c, env3, err, sizeof(err)), -1);
        assert_non_null(strstr(err, "consumer.batch_size"));
        config_destroy(c);
}

int main(void)
{
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_defaults),
                cmocka_unit_test(test_set_and_errors),
                cmocka_unit_test(test_secret_never_echoed),
                cmocka_unit_test(test_file_and_secret_file),
                cmocka_unit_test(test_long_secret_name_hidden),
                cmocka_unit_test(test_load_buffer),
                cmocka_unit_test(test_env),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
