/*
 * config: the one declarative table of chargeonce's settings (expanded
 * from config_keys.def, as struct settings is), and the loaders (file,
 * environment, -X). A value is checked and parsed once, when it is set,
 * into its text and its typed field together. An unknown key or a bad
 * value is an error that names the key; a secret's value is never repeated
 * in a message, a log line or a dump.
 */
#include "util/config.h"
#include "util/crypto.h"
#include "util/file.h"
#include "util/timeutil.h"
#include "util/xalloc.h"

#include <ctype.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

/* visibility in config_keys.def */
#define CFG_VIS_PUBLIC false
#define CFG_VIS_SECRET true

/* The table: config_keys.def, one entry per key. */
static const struct config_key cfg_defs[] = {
#define CO_KEY(k, f, t, d, v, lo, hi, ch, h)                                   \
        { .name    = k,                                                        \
          .type    = CONFIG_##t,                                               \
          .def     = d,                                                        \
          .secret  = CFG_VIS_##v,                                              \
          .min     = lo,                                                       \
          .max     = hi,                                                       \
          .choices = ch,                                                       \
          .help    = h,                                                        \
          .field   = #f,                                                       \
          .offset  = offsetof(struct settings, f) },
#include "util/config_keys.def"
#undef CO_KEY
};
#define CFG_N (sizeof(cfg_defs) / sizeof(*cfg_defs))

struct kv {
        char *name;
        char *value;
};

struct config {
        char *values[CFG_N];      /* as set, for config_str() and the dump */
        struct settings settings; /* the same, parsed */
        struct kv *kafka;
        size_t kafka_n, kafka_cap;
};

static const struct config_key *cfg_find(const char *key, size_t *idx)
{
        for (size_t i = 0; i < CFG_N; i++) {
                if (strcmp(cfg_defs[i].name, key) == 0) {
                        if (idx)
                                *idx = i;
                        return &cfg_defs[i];
                }
        }
        return NULL;
}

/* Frees a string that may hold a secret, wiped first (every value is:
 * the cost is nil and no caller has to know which key it held). */
static void free_wiped(char *s)
{
        if (!s)
                return;
        crypto_wipe(s, strlen(s));
        free(s);
}

void config_destroy(struct config *cfg)
{
        if (!cfg)
                return;
        for (size_t i = 0; i < CFG_N; i++)
                free_wiped(cfg->values[i]);
        for (size_t i = 0; i < cfg->kafka_n; i++) {
                free(cfg->kafka[i].name);
                free_wiped(cfg->kafka[i].value);
        }
        free(cfg->kafka);
        crypto_wipe(cfg, sizeof(*cfg));
        free(cfg);
}

/* True when s ends with "_file" (a <secret>_file key). */
static bool ends_with_file(const char *s)
{
        size_t n = strlen(s);
        return n > 5 && strcmp(s + n - 5, "_file") == 0;
}

/* A librdkafka property (without "kafka.", with or without "consumer." /
 * "producer.") that holds a secret: sasl.password, ssl.key.password,
 * ssl.keystore.password, ssl.key.pem, sasl.oauthbearer.client.secret,
 * ... (any name with "password" or "secret"). Its <prop>_file is a path,
 * not a secret. */
static bool kafka_prop_is_secret(const char *prop)
{
        if (ends_with_file(prop))
                return false;
        return strstr(prop, "password") || strstr(prop, "secret") ||
               strstr(prop, "ssl.key.pem") || strstr(prop, "ssl_key");
}

bool config_key_is_secret(const char *key)
{
        const struct config_key *d = cfg_find(key, NULL);
        if (d)
                return d->secret;
        return strncmp(key, "kafka.", 6) == 0 && kafka_prop_is_secret(key + 6);
}

bool config_arg_is_secret(const char *arg)
{
        const char *eq = strchr(arg, '=');
        char key[256];
        size_t n;

        if (!eq)
                return false;
        n = (size_t)(eq - arg);
        if (n >= sizeof(key))
                return false;
        memcpy(key, arg, n);
        key[n] = '\0';
        return config_key_is_secret(key);
}

static bool parse_bool(const char *v, bool *out)
{
        if (!strcmp(v, "true") || !strcmp(v, "1") || !strcmp(v, "yes") ||
            !strcmp(v, "on")) {
                *out = true;
                return true;
        }
        if (!strcmp(v, "false") || !strcmp(v, "0") || !strcmp(v, "no") ||
            !strcmp(v, "off")) {
                *out = false;
                return true;
        }
        return false;
}

static bool parse_int(const char *v, int64_t *out)
{
        char *end;
        long long n;

        if (!*v)
                return false;
        errno = 0;
        n     = strtoll(v, &end, 10);
        if (errno || *end)
                return false;
        *out = n;
        return true;
}

static bool enum_has(const char *choices, const char *v)
{
        size_t n      = strlen(v);
        const char *p = choices;

        while (*p) {
                const char *bar = strchr(p, '|');
                size_t len      = bar ? (size_t)(bar - p) : strlen(p);
                if (len == n && strncmp(p, v, n) == 0)
                        return true;
                if (!bar)
                        break;
                p = bar + 1;
        }
        return false;
}

/* A value parsed by cfg_check(). */
struct cfg_val {
        int64_t n; /* CONFIG_INT, CONFIG_DURATION (ms) */
        bool b;    /* CONFIG_BOOL */
};

/* Checks v against d and parses it into *out; on error writes a message
 * that shows the value only for non-secret keys. */
static int cfg_check(const struct config_key *d, const char *v,
                     struct cfg_val *out, char *errstr, size_t errstr_size)
{
        const char *shown = d->secret ? "<hidden>" : v;
        int64_t n         = 0;

        out->n = 0;
        out->b = false;
        switch (d->type) {
        case CONFIG_STR:
                return 0;
        case CONFIG_BOOL:
                if (parse_bool(v, &out->b))
                        return 0;
                snprintf(errstr, errstr_size,
                         "%s: \"%s\" is not a boolean (true or false)", d->name,
                         shown);
                return -1;
        case CONFIG_INT:
                if (!parse_int(v, &n)) {
                        snprintf(errstr, errstr_size,
                                 "%s: \"%s\" is not an integer", d->name,
                                 shown);
                        return -1;
                }
                break;
        case CONFIG_DURATION:
                if (!duration_parse(v, &n)) {
                        snprintf(errstr, errstr_size,
                                 "%s: \"%s\" is not a duration (e.g. 250ms, "
                                 "10s, 5m, 24h, 7d)",
                                 d->name, shown);
                        return -1;
                }
                break;
        case CONFIG_ENUM:
                if (enum_has(d->choices, v))
                        return 0;
                snprintf(errstr, errstr_size, "%s: \"%s\" is not one of %s",
                         d->name, shown, d->choices);
                return -1;
        }
        if (n < d->min || n > d->max) {
                char lo[32], hi[32];
                if (d->type == CONFIG_DURATION) {
                        duration_format(d->min, lo, sizeof(lo));
                        duration_format(d->max, hi, sizeof(hi));
                } else {
                        snprintf(lo, sizeof(lo), "%lld", (long long)d->min);
                        snprintf(hi, sizeof(hi), "%lld", (long long)d->max);
                }
                if (d->max == INT64_MAX)
                        snprintf(errstr, errstr_size,
                                 "%s: \"%s\" is out of range (at least %s)",
                                 d->name, shown, lo);
                else
                        snprintf(errstr, errstr_size,
                                 "%s: \"%s\" is out of range (%s to %s)",
                                 d->name, shown, lo, hi);
                return -1;
        }
        out->n = n;
        return 0;
}

/* Key idx takes value (owned from now on), checked into *pv: the text and
 * the field of struct settings change together. */
static void cfg_assign(struct config *cfg, size_t idx, char *value,
                       const struct cfg_val *pv)
{
        const struct config_key *d = &cfg_defs[idx];
        char *field                = (char *)&cfg->settings + d->offset;
        const char *s              = value;

        switch (d->type) {
        case CONFIG_STR:
        case CONFIG_ENUM:
                memcpy(field, &s, sizeof(s));
                break;
        case CONFIG_INT:
        case CONFIG_DURATION:
                memcpy(field, &pv->n, sizeof(pv->n));
                break;
        case CONFIG_BOOL:
                memcpy(field, &pv->b, sizeof(pv->b));
                break;
        }
        free_wiped(cfg->values[idx]);
        cfg->values[idx] = value;
}

struct config *config_new(void)
{
        struct config *cfg = xcalloc(1, sizeof(*cfg));
        char err[256];

        for (size_t i = 0; i < CFG_N; i++) {
                struct cfg_val v;
                if (cfg_check(&cfg_defs[i], cfg_defs[i].def, &v, err,
                              sizeof(err)) < 0) {
                        /* config_keys.def is wrong: a bug */
                        fprintf(stderr, "config: bad default: %s\n", err);
                        abort();
                }
                cfg_assign(cfg, i, xstrdup(cfg_defs[i].def), &v);
        }
        return cfg;
}

const struct settings *config_settings(const struct config *cfg)
{
        return &cfg->settings;
}

const struct config_key *config_keys(size_t *n)
{
        *n = CFG_N;
        return cfg_defs;
}

static void kafka_set(struct config *cfg, const char *prop, const char *value)
{
        for (size_t i = 0; i < cfg->kafka_n; i++) {
                if (strcmp(cfg->kafka[i].name, prop) == 0) {
                        free_wiped(cfg->kafka[i].value);
                        cfg->kafka[i].value = xstrdup(value);
                        return;
                }
        }
        if (cfg->kafka_n == cfg->kafka_cap) {
                size_t cap     = cfg->kafka_cap ? cfg->kafka_cap * 2 : 8;
                struct kv *kv  = xrealloc(cfg->kafka, cap * sizeof(*kv));
                cfg->kafka     = kv;
                cfg->kafka_cap = cap;
        }
        cfg->kafka[cfg->kafka_n].name  = xstrdup(prop);
        cfg->kafka[cfg->kafka_n].value = xstrdup(value);
        cfg->kafka_n++;
}

/* Reads a secret from a file: the whole content less trailing new lines. */
static int read_secret_file(const char *key, const char *path, char **out,
                            char *errstr, size_t errstr_size)
{
        char why[512];
        size_t n;
        /* read(2) into its own buffer: no stdio buffer keeps a copy */
        char *buf = file_read_secret(path, 8191, &n, why, sizeof(why));

        if (!buf) {
                snprintf(errstr, errstr_size, "%s_file: %s", key, why);
                return -1;
        }
        *out = buf;
        return 0;
}

int config_set(struct config *cfg, const char *key, const char *value,
               char *errstr, size_t errstr_size)
{
        const struct config_key *d;
        struct cfg_val pv;
        size_t idx, klen = strlen(key);

        if (strncmp(key, "kafka.", 6) == 0) {
                if (klen == 6) {
                        snprintf(errstr, errstr_size,
                                 "kafka.: a librdkafka property name must "
                                 "follow the prefix");
                        return -1;
                }
                /* kafka.<secret property>_file = /path */
                if (ends_with_file(key) && klen - 5 < 256) {
                        char prop[256];
                        char *secret = NULL;
                        memcpy(prop, key, klen - 5);
                        prop[klen - 5] = '\0';
                        if (kafka_prop_is_secret(prop + 6)) {
                                if (read_secret_file(prop, value, &secret,
                                                     errstr, errstr_size) < 0)
                                        return -1;
                                kafka_set(cfg, prop + 6, secret);
                                free_wiped(secret);
                                return 0;
                        }
                }
                kafka_set(cfg, key + 6, value);
                return 0;
        }
        if ((d = cfg_find(key, &idx))) {
                if (cfg_check(d, value, &pv, errstr, errstr_size) < 0)
                        return -1;
                cfg_assign(cfg, idx, xstrdup(value), &pv);
                return 0;
        }
        /* <secret key>_file = /path */
        if (klen > 5 && strcmp(key + klen - 5, "_file") == 0) {
                char base[128];
                char *secret = NULL;
                if (klen - 5 < sizeof(base)) {
                        memcpy(base, key, klen - 5);
                        base[klen - 5] = '\0';
                        if ((d = cfg_find(base, &idx)) && d->secret) {
                                if (read_secret_file(base, value, &secret,
                                                     errstr, errstr_size) < 0)
                                        return -1;
                                if (cfg_check(d, secret, &pv, errstr,
                                              errstr_size) < 0) {
                                        free_wiped(secret);
                                        return -1;
                                }
                                cfg_assign(cfg, idx, secret, &pv);
                                return 0;
                        }
                }
        }
        snprintf(errstr, errstr_size, "%s: unknown configuration key", key);
        return -1;
}

static char *trim(char *s)
{
        char *e;
        while (isspace((unsigned char)*s))
                s++;
        e = s + strlen(s);
        while (e > s && isspace((unsigned char)e[-1]))
                *--e = '\0';
        return s;
}

int config_load_buffer(struct config *cfg, const char *name, const char *data,
                       size_t len, char *errstr, size_t errstr_size)
{
        char line[CONFIG_LINE_MAX + 1];
        size_t pos = 0;
        int lineno = 0;

        while (pos < len) {
                const char *nl = memchr(data + pos, '\n', len - pos);
                size_t n       = nl ? (size_t)(nl - (data + pos)) : len - pos;
                char *p, *eq, *key, *val, sub[512];

                lineno++;
                if (n > CONFIG_LINE_MAX) {
                        snprintf(errstr, errstr_size,
                                 "%s:%d: line longer than %d bytes", name,
                                 lineno, CONFIG_LINE_MAX);
                        return -1;
                }
                /* a C string cannot hold it: the file is not text */
                if (memchr(data + pos, '\0', n)) {
                        snprintf(errstr, errstr_size, "%s:%d: NUL byte", name,
                                 lineno);
                        return -1;
                }
                memcpy(line, data + pos, n);
                line[n] = '\0';
                pos += n + (nl ? 1 : 0);
                p = trim(line);
                if (*p == '\0' || *p == '#')
                        continue;
                if (!(eq = strchr(p, '='))) {
                        snprintf(errstr, errstr_size,
                                 "%s:%d: expected key = value", name, lineno);
                        return -1;
                }
                *eq = '\0';
                key = trim(p);
                val = trim(eq + 1);
                if (config_set(cfg, key, val, sub, sizeof(sub)) < 0) {
                        snprintf(errstr, errstr_size, "%s:%d: %s", name, lineno,
                                 sub);
                        crypto_wipe(line, sizeof(line));
                        return -1;
                }
        }
        /* the line may have held a secret */
        crypto_wipe(line, sizeof(line));
        return 0;
}

int config_load_file(struct config *cfg, const char *path, char *errstr,
                     size_t errstr_size)
{
        FILE *f    = fopen(path, "r");
        char *buf  = NULL;
        size_t len = 0, n;
        int r      = -1;

        if (!f) {
                snprintf(errstr, errstr_size, "%s: %s", path, strerror(errno));
                return -1;
        }
        /* one byte more than allowed, to tell "too large" from "just fits" */
        buf = xmalloc(CONFIG_FILE_MAX + 1);
        setvbuf(f, NULL, _IONBF, 0); /* no copy of secrets in stdio's */
        while ((n = fread(buf + len, 1, CONFIG_FILE_MAX + 1 - len, f)) > 0)
                len += n;
        if (ferror(f)) {
                snprintf(errstr, errstr_size, "%s: %s", path, strerror(errno));
                goto done;
        }
        if (len > CONFIG_FILE_MAX) {
                snprintf(errstr, errstr_size, "%s: larger than %d bytes", path,
                         CONFIG_FILE_MAX);
                goto done;
        }
        r = config_load_buffer(cfg, path, buf, len, errstr, errstr_size);
done:
        /* the file may hold secrets */
        crypto_wipe(buf, len < CONFIG_FILE_MAX + 1 ? len : CONFIG_FILE_MAX + 1);
        free(buf);
        fclose(f);
        return r;
}

/* CHARGEONCE_GATEWAY_API_KEY -> gateway.api_key: the table's names are
 * matched first (they may hold '_'); kafka.* properties have none. */
static int env_to_key(const char *env, char *out, size_t outsz)
{
        for (size_t i = 0; i < CFG_N; i++) {
                const char *n = cfg_defs[i].name;
                const char *e = env;
                for (; *n && *e; n++, e++) {
                        char c = *n == '.' ? '_' : (char)toupper(*n);
                        if (c != *e)
                                break;
                }
                if (*n == '\0' && (*e == '\0' || strcmp(e, "_FILE") == 0)) {
                        snprintf(out, outsz, "%s%s", cfg_defs[i].name,
                                 *e ? "_file" : "");
                        return 0;
                }
        }
        if (strncmp(env, "KAFKA_", 6) == 0 && env[6]) {
                /* KAFKA_SASL_PASSWORD_FILE -> kafka.sasl.password_file */
                size_t n = strlen(env), o = 0;
                bool file = n > 11 && strcmp(env + n - 5, "_FILE") == 0;
                if (file)
                        n -= 5;
                for (size_t i = 0; i < n && o + 1 < outsz; i++)
                        out[o++] = env[i] == '_' ? '.' : (char)tolower(env[i]);
                out[o] = '\0';
                if (file && o + 6 < outsz)
                        memcpy(out + o, "_file", 6);
                return 0;
        }
        return -1;
}

int config_load_env(struct config *cfg, char *const *envp, char *errstr,
                    size_t errstr_size)
{
        static const char prefix[] = "CHARGEONCE_";
        for (; envp && *envp; envp++) {
                const char *e = *envp, *eq;
                char name[256], key[256], sub[512];
                size_t nlen;

                if (strncmp(e, prefix, sizeof(prefix) - 1) != 0)
                        continue;
                if (!(eq = strchr(e, '=')))
                        continue;
                nlen = (size_t)(eq - e);
                if (nlen >= sizeof(name))
                        nlen = sizeof(name) - 1;
                memcpy(name, e, nlen);
                name[nlen] = '\0';
                /* not configuration: the test harness and failpoints */
                if (!strncmp(name, "CHARGEONCE_TEST_", 16) ||
                    !strcmp(name, "CHARGEONCE_FAILPOINTS") ||
                    !strcmp(name, "CHARGEONCE_ALLOW_CORE") ||
                    !strcmp(name, "CHARGEONCE_BIN") ||
                    !strcmp(name, "CHARGEONCE_SIM_BIN") ||
                    !strcmp(name, "CHARGEONCE_SOURCE_DIR"))
                        continue;
                if (env_to_key(name + sizeof(prefix) - 1, key, sizeof(key)) <
                    0) {
                        snprintf(errstr, errstr_size,
                                 "%s: environment variable names no "
                                 "configuration key",
                                 name);
                        return -1;
                }
                if (config_set(cfg, key, eq + 1, sub, sizeof(sub)) < 0) {
                        snprintf(errstr, errstr_size, "%s: %s", name, sub);
                        return -1;
                }
        }
        return 0;
}

int config_set_arg(struct config *cfg, const char *arg, char *errstr,
                   size_t errstr_size)
{
        const char *eq = strchr(arg, '=');
        char key[256];
        size_t n;

        if (!eq || eq == arg) {
                snprintf(errstr, errstr_size,
                         "-X %s: expected key=value (e.g. "
                         "kafka.bootstrap.servers=127.0.0.1:9092)",
                         arg);
                return -1;
        }
        n = (size_t)(eq - arg);
        if (n >= sizeof(key)) {
                snprintf(errstr, errstr_size, "-X: key too long");
                return -1;
        }
        memcpy(key, arg, n);
        key[n] = '\0';
        return config_set(cfg, key, eq + 1, errstr, errstr_size);
}

static const char *cfg_value(const struct config *cfg, const char *key,
                             const struct config_key **d)
{
        size_t idx;
        if (!(*d = cfg_find(key, &idx))) {
                fprintf(stderr, "config: no key %s in the table\n", key);
                abort();
        }
        return cfg->values[idx];
}

const char *config_str(const struct config *cfg, const char *key)
{
        const struct config_key *d;
        return cfg_value(cfg, key, &d);
}

int64_t config_int(const struct config *cfg, const char *key)
{
        const struct config_key *d;
        const char *v = cfg_value(cfg, key, &d);
        int64_t n     = 0;
        if (!parse_int(v, &n))
                abort(); /* checked when set */
        return n;
}

bool config_bool(const struct config *cfg, const char *key)
{
        const struct config_key *d;
        const char *v = cfg_value(cfg, key, &d);
        bool b        = false;
        if (!parse_bool(v, &b))
                abort();
        return b;
}

int64_t config_ms(const struct config *cfg, const char *key)
{
        const struct config_key *d;
        const char *v = cfg_value(cfg, key, &d);
        int64_t ms    = 0;
        if (!duration_parse(v, &ms))
                abort();
        return ms;
}

size_t config_kafka_count(const struct config *cfg)
{
        return cfg->kafka_n;
}

void config_kafka_get(const struct config *cfg, size_t i, const char **name,
                      const char **value)
{
        *name  = cfg->kafka[i].name;
        *value = cfg->kafka[i].value;
}

void config_dump(const struct config *cfg, FILE *out)
{
        for (size_t i = 0; i < CFG_N; i++) {
                const char *v = cfg->values[i];
                if (cfg_defs[i].secret && *v)
                        v = "<hidden>";
                fprintf(out, "%s = %s\n", cfg_defs[i].name, v);
        }
        /* on the whole name: a copy cut to a buffer could lose the
         * "password" of a long name and show its value */
        for (size_t i = 0; i < cfg->kafka_n; i++)
                fprintf(out, "kafka.%s = %s\n", cfg->kafka[i].name,
                        kafka_prop_is_secret(cfg->kafka[i].name)
                            ? "<hidden>"
                            : cfg->kafka[i].value);
}

void config_describe(FILE *out)
{
        for (size_t i = 0; i < CFG_N; i++)
                fprintf(out, "  %-26s %-22s %s%s\n", cfg_defs[i].name,
                        *cfg_defs[i].def ? cfg_defs[i].def : "\"\"",
                        cfg_defs[i].help,
                        cfg_defs[i].secret ? " (secret)" : "");
        fprintf(out, "  %-26s %-22s %s\n", "kafka.<property>", "",
                "any librdkafka property, for every client");
        fprintf(out, "  %-26s %-22s %s\n", "kafka.consumer.<property>", "",
                "for the consumer only");
        fprintf(out, "  %-26s %-22s %s\n", "kafka.producer.<property>", "",
                "for the producers only (DLQ, relay)");
}
