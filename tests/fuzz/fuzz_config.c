/* SPDX-License-Identifier: Apache-2.0 */
/*
 * fuzz_config: the configuration file parser (config_load_buffer(), which
 * config_load_file() uses) on any bytes.
 *
 * Invariants, for every input:
 *   - the load returns 0, or -1 with a message that names the file and
 *     ends inside the message buffer;
 *   - afterwards the configuration is whole: every key of the dump can
 *     be read back, and the dump never shows the value of a secret key
 *     (table secrets and kafka.* passwords alike), however long its name;
 *   - every typed value of config_settings() is the text of its key,
 *     parsed (the same string for a string key).
 *
 * An input that names a `<secret>_file` key is skipped: loading it would
 * read whatever file the fuzzer spelled (or block on a FIFO).
 */
#include <stdbool.h>
#include <string.h>

#include "fuzz.h"
#include "util/config.h"

#define NAME "fuzz.conf"

/* The dump's line i (0-based) of dump[0..len), without its '\n'. */
static const char *dump_line(const char *dump, size_t len, size_t i, size_t *n)
{
        const char *p = dump, *end = dump + len;

        for (; i > 0 && p < end; i--) {
                const char *nl = memchr(p, '\n', (size_t)(end - p));
                FUZZ_CHECK(nl != NULL);
                p = nl + 1;
        }
        FUZZ_CHECK(p < end);
        *n = (size_t)((const char *)memchr(p, '\n', (size_t)(end - p)) - p);
        return p;
}

static bool ends_with(const char *s, size_t n, const char *suffix)
{
        size_t k = strlen(suffix);
        return n >= k && memcmp(s + n - k, suffix, k) == 0;
}

static void check_dump(const struct config *cfg)
{
        char *dump = NULL;
        size_t len = 0, lines = 0, kafka_n = config_kafka_count(cfg);
        FILE *f = open_memstream(&dump, &len);

        FUZZ_CHECK(f != NULL);
        config_dump(cfg, f);
        FUZZ_CHECK(fclose(f) == 0);
        for (size_t i = 0; i < len; i++)
                lines += dump[i] == '\n';
        FUZZ_CHECK(len > 0 && dump[len - 1] == '\n');
        FUZZ_CHECK(lines >= kafka_n);
        /* the table first: "key = value", a secret hidden (or empty) */
        for (size_t i = 0; i < lines - kafka_n; i++) {
                size_t n;
                const char *l  = dump_line(dump, len, i, &n);
                const char *eq = memmem(l, n, " = ", 3);
                char key[128];

                FUZZ_CHECK(eq != NULL && (size_t)(eq - l) < sizeof(key));
                memcpy(key, l, (size_t)(eq - l));
                key[eq - l] = '\0';
                (void)config_str(cfg, key); /* aborts on an unknown key */
                if (config_key_is_secret(key))
                        FUZZ_CHECK(ends_with(l, n, " = <hidden>") ||
                                   ends_with(l, n, " = "));
        }
        /* then kafka.*, in the order they were set */
        for (size_t i = 0; i < kafka_n; i++) {
                const char *name, *value;
                size_t n, klen;
                const char *l = dump_line(dump, len, lines - kafka_n + i, &n);
                char *key;

                config_kafka_get(cfg, i, &name, &value);
                klen = strlen(name) + 7;
                key  = malloc(klen);
                FUZZ_CHECK(key != NULL);
                snprintf(key, klen, "kafka.%s", name);
                if (config_key_is_secret(key))
                        FUZZ_CHECK(ends_with(l, n, " = <hidden>"));
                free(key);
        }
        free(dump);
}

/* Each field of struct settings agrees with the text of its key. */
static void check_settings(const struct config *cfg)
{
        const struct settings *s = config_settings(cfg);
        size_t n;
        const struct config_key *keys = config_keys(&n);

        for (size_t i = 0; i < n; i++) {
                const char *field = (const char *)s + keys[i].offset;
                const char *str;
                int64_t i64;
                bool b;

                switch (keys[i].type) {
                case CONFIG_STR:
                case CONFIG_ENUM:
                        memcpy(&str, field, sizeof(str));
                        FUZZ_CHECK(str == config_str(cfg, keys[i].name));
                        break;
                case CONFIG_INT:
                        memcpy(&i64, field, sizeof(i64));
                        FUZZ_CHECK(i64 == config_int(cfg, keys[i].name));
                        FUZZ_CHECK(i64 >= keys[i].min && i64 <= keys[i].max);
                        break;
                case CONFIG_DURATION:
                        memcpy(&i64, field, sizeof(i64));
                        FUZZ_CHECK(i64 == config_ms(cfg, keys[i].name));
                        FUZZ_CHECK(i64 >= keys[i].min && i64 <= keys[i].max);
                        break;
                case CONFIG_BOOL:
                        memcpy(&b, field, sizeof(b));
                        FUZZ_CHECK(b == config_bool(cfg, keys[i].name));
                        break;
                }
        }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
        struct config *cfg;
        char err[512];
        int r;

        if (memmem(data, size, "_file", 5))
                return -1;
        cfg = config_new();
        memset(err, 0xA5, sizeof(err));
        r = config_load_buffer(cfg, NAME, (const char *)data, size, err,
                               sizeof(err));
        FUZZ_CHECK(r == 0 || r == -1);
        if (r < 0) {
                FUZZ_CHECK(FUZZ_TERMINATED(err));
                FUZZ_CHECK(strncmp(err, NAME ":", strlen(NAME ":")) == 0);
        }
        check_dump(cfg);
        check_settings(cfg);
        config_destroy(cfg);
        return 0;
}
