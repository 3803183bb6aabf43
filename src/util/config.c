/* SPDX-License-Identifier: Apache-2.0 */
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
#include <regex.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

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

#define CFG_ENV_NOTES_MAX 64

struct config {
        char *values[CFG_N];      /* as set, for config_str() and the dump */
        struct settings settings; /* the same, parsed */
        struct kv *kafka;
        size_t kafka_n, kafka_cap;
        /* environment variables left alone (config_env_notes) */
        struct config_env_note notes[CFG_ENV_NOTES_MAX];
        size_t n_notes;
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
        for (size_t i = 0; i < cfg->n_notes; i++) {
                free(cfg->notes[i].name);
                free(cfg->notes[i].like_env);
        }
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

/* ---- the syntax of string values (checked when set, as any value) ---- */

/* Printable ASCII without spaces: the characters of a URL or an address. */
static bool url_chars(const char *v)
{
        for (; *v; v++)
                if ((unsigned char)*v <= 0x20 || (unsigned char)*v >= 0x7f)
                        return false;
        return true;
}

/* A decimal port in lo..65535, all of s (len bytes). */
static bool port_ok(const char *s, size_t len, long lo)
{
        long p = 0;

        if (len == 0 || len > 5)
                return false;
        for (size_t i = 0; i < len; i++) {
                if (s[i] < '0' || s[i] > '9')
                        return false;
                p = p * 10 + (s[i] - '0');
        }
        return p >= lo && p <= 65535;
}

/* A host of a URL or an address: a name or IPv4 ([A-Za-z0-9._~-], not
 * empty), or an IPv6 literal in brackets. */
static bool host_ok(const char *h, size_t len)
{
        if (len >= 2 && h[0] == '[' && h[len - 1] == ']') {
                if (len == 2)
                        return false;
                for (size_t i = 1; i + 1 < len; i++)
                        if (!isxdigit((unsigned char)h[i]) && h[i] != ':' &&
                            h[i] != '.' && h[i] != '%')
                                return false;
                return true;
        }
        if (len == 0)
                return false;
        for (size_t i = 0; i < len; i++)
                if (!isalnum((unsigned char)h[i]) && !strchr(".-_~", h[i]))
                        return false;
        return true;
}

/* gateway.url: http:// or https://, a host, an optional port, no user
 * information (a credential in a URL would be shown by --dump-config). */
static const char *check_url(const char *v)
{
        const char *auth, *end, *hend, *port = NULL;

        if (!strncasecmp(v, "https://", 8))
                auth = v + 8;
        else if (!strncasecmp(v, "http://", 7))
                auth = v + 7;
        else
                return "is not an http:// or https:// URL";
        if (!url_chars(v))
                return "holds a space or a control character";
        end = auth + strcspn(auth, "/?#");
        if (memchr(auth, '@', (size_t)(end - auth)))
                return "holds user information (user@): give the API key as "
                       "gateway.api_key";
        if (auth < end && auth[0] == '[') {
                const char *rb = memchr(auth, ']', (size_t)(end - auth));

                hend = rb ? rb + 1 : end;
        } else {
                hend = memchr(auth, ':', (size_t)(end - auth));
                if (!hend)
                        hend = end;
        }
        if (hend < end) {
                if (*hend != ':')
                        return "has no host (http://HOST[:PORT][/PATH])";
                port = hend + 1;
        }
        if (!host_ok(auth, (size_t)(hend - auth)))
                return "has no host (http://HOST[:PORT][/PATH])";
        if (port && !port_ok(port, (size_t)(end - port), 1))
                return "has a port that is not 1..65535";
        return NULL;
}

/* http.listen: empty (off), or HOST:PORT with a port 0..65535 (0: any);
 * an IPv6 host in brackets. The name is resolved at start. */
static const char *check_listen(const char *v)
{
        const char *colon = strrchr(v, ':');

        if (!*v)
                return NULL;
        if (!url_chars(v) || !colon || colon == v ||
            !port_ok(colon + 1, strlen(colon + 1), 0) ||
            !host_ok(v, (size_t)(colon - v)) ||
            (memchr(v, ':', (size_t)(colon - v)) && v[0] != '['))
                return "is not HOST:PORT (port 0..65535; empty: off)";
        return NULL;
}

/* topic.*: a Kafka topic name: 1..249 of [A-Za-z0-9._-], not . or .. */
static const char *check_topic(const char *v)
{
        size_t n = strlen(v);

        if (n == 0 || n > 249 || !strcmp(v, ".") || !strcmp(v, ".."))
                return "is not a Kafka topic name (1..249 characters)";
        for (size_t i = 0; i < n; i++)
                if (!isalnum((unsigned char)v[i]) && !strchr("._-", v[i]))
                        return "is not a Kafka topic name (letters, digits, "
                               "'.', '_', '-')";
        return NULL;
}

/* Printable text: no control character, at most max bytes; empty only if
 * empty_ok. */
static const char *check_text(const char *v, size_t max, bool empty_ok)
{
        size_t n = strlen(v);

        if (n == 0 && !empty_ok)
                return "is empty";
        if (n > max)
                return "is too long";
        for (size_t i = 0; i < n; i++)
                if ((unsigned char)v[i] < 0x20 || v[i] == 0x7f)
                        return "holds a control character";
        return NULL;
}

static const char *check_group(const char *v)
{
        return check_text(v, 255, false);
}

/* worker.id: the lease owner's name and the static member's identity. */
static const char *check_worker(const char *v)
{
        return check_text(v, 100, true);
}

/* A value that goes into an HTTP header (Authorization: Bearer ...). */
static const char *check_header(const char *v)
{
        return check_text(v, 4096, true);
}

/* The keys whose text has a syntax of its own (a unit test checks that
 * each names a key of the table). */
static const struct {
        const char *key;
        const char *(*check)(const char *v); /* why it is wrong, or NULL */
} cfg_syntax[] = {
        { "gateway.url", check_url },     { "gateway.api_key", check_header },
        { "http.listen", check_listen },  { "topic.intents", check_topic },
        { "topic.results", check_topic }, { "topic.dlq", check_topic },
        { "group.id", check_group },      { "worker.id", check_worker },
};

const char *config_syntax_key(size_t i)
{
        return i < sizeof(cfg_syntax) / sizeof(*cfg_syntax) ? cfg_syntax[i].key
                                                            : NULL;
}

/* Why v is wrong for d's syntax, or NULL. */
static const char *syntax_problem(const struct config_key *d, const char *v)
{
        for (size_t i = 0; i < sizeof(cfg_syntax) / sizeof(*cfg_syntax); i++)
                if (!strcmp(cfg_syntax[i].key, d->name))
                        return cfg_syntax[i].check(v);
        return NULL;
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
        case CONFIG_STR: {
                const char *why = syntax_problem(d, v);

                if (!why)
                        return 0;
                if (d->secret)
                        snprintf(errstr, errstr_size, "%s: the value %s",
                                 d->name, why);
                else
                        snprintf(errstr, errstr_size, "%s: \"%s\" %s", d->name,
                                 v, why);
                return -1;
        }
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

/* CHARGEONCE_GATEWAY_API_KEY -> gateway.api_key (and <KEY>_FILE ->
 * <key>_file): the table's names. */
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
        return -1;
}

/* CHARGEONCE_KAFKA_SASL_PASSWORD -> kafka.sasl.password (after a key of
 * the table, a tool's and a platform's variables). */
static int env_to_kafka(const char *env, char *out, size_t outsz)
{
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

/* ---- environment variables that name no key ---- */

/*
 * The project's own variables that are not configuration (after
 * CHARGEONCE_): the test harness (TEST_*), failpoints, the build's CMake
 * options, the scripts' knobs. Left alone, silently.
 */
static const char *const env_tools[] = {
        "ALLOW_CORE",      "BIN",        "CACHE",        "FAILPOINTS",
        "FAILPOINTS_LOG",  "FUZZ",       "FUZZ_SECONDS", "KEEP_SERVICES_DIR",
        "SANITIZE",        "SCALE_SEED", "SIM_BIN",      "SOAK",
        "SOAK_SECONDS",    "SOAK_SEED",  "SOURCE_DIR",   "SVC_ADDR",
        "SYSTEMD_UNITDIR", "VERSION",    "WERROR",
};

static bool env_is_tool(const char *rest)
{
        if (!strncmp(rest, "TEST_", 5))
                return true;
        for (size_t i = 0; i < sizeof(env_tools) / sizeof(*env_tools); i++)
                if (!strcmp(rest, env_tools[i]))
                        return true;
        return false;
}

/*
 * A service link a platform sets for a service whose name starts with
 * "chargeonce" (Kubernetes: a Service `chargeonce` or `chargeonce-x` gives
 * every pod of its namespace CHARGEONCE[_X]_SERVICE_HOST, _SERVICE_PORT,
 * _SERVICE_PORT_<NAME>, _PORT, _PORT_<N>_<PROTO>, ..._PROTO, _PORT, _ADDR;
 * Docker's legacy links: _PORT..., _NAME, _ENV_<VAR>). Not ours.
 */
static bool env_is_platform(const char *name)
{
        static const char re[] =
            "^CHARGEONCE(_[A-Z0-9_]+)?_(SERVICE_HOST|SERVICE_PORT(_[A-Z0-9_]+)?"
            "|PORT|PORT_[0-9]+_(TCP|UDP|SCTP)(_(PROTO|PORT|ADDR))?|NAME"
            "|ENV_[A-Za-z0-9_]+)$";
        regex_t rx;
        bool m;

        if (regcomp(&rx, re, REG_EXTENDED | REG_NOSUB) != 0)
                abort(); /* the pattern is a constant: a bug */
        m = regexec(&rx, name, 0, NULL, 0) == 0;
        regfree(&rx);
        return m;
}

/* The environment form of a key: gateway.api_key -> GATEWAY_API_KEY. */
static void key_env(const char *key, char *out, size_t outsz)
{
        size_t i = 0;

        for (; key[i] && i + 1 < outsz; i++)
                out[i] =
                    key[i] == '.' ? '_' : (char)toupper((unsigned char)key[i]);
        out[i] = '\0';
}

/* Optimal string alignment distance (edits: insert, delete, replace, swap
 * two neighbours), at most 64 bytes of each (else a large number). */
static size_t edit_distance(const char *a, const char *b)
{
        size_t la = strlen(a), lb = strlen(b), d[65][65];

        if (la > 64 || lb > 64)
                return 1000;
        for (size_t i = 0; i <= la; i++)
                d[i][0] = i;
        for (size_t j = 0; j <= lb; j++)
                d[0][j] = j;
        for (size_t i = 1; i <= la; i++) {
                for (size_t j = 1; j <= lb; j++) {
                        size_t cost = a[i - 1] == b[j - 1] ? 0 : 1, v;

                        v = d[i - 1][j] + 1;
                        if (d[i][j - 1] + 1 < v)
                                v = d[i][j - 1] + 1;
                        if (d[i - 1][j - 1] + cost < v)
                                v = d[i - 1][j - 1] + cost;
                        if (i > 1 && j > 1 && a[i - 1] == b[j - 2] &&
                            a[i - 2] == b[j - 1] && d[i - 2][j - 2] + 1 < v)
                                v = d[i - 2][j - 2] + 1;
                        d[i][j] = v;
                }
        }
        return d[la][lb];
}

/*
 * The key rest (CHARGEONCE_ less) most likely meant, or -1: a key whose
 * environment form (or <key>_FILE for a secret) is at most 2 edits away
 * (1 for names under 6 characters), or, for a name that starts with a
 * key's section (GATEWAY_, DB_, RELAY_, ...), the nearest key of that
 * section. *file: it resembles the _FILE form.
 */
static int env_resembles(const char *rest, bool *file)
{
        size_t best = (size_t)-1, best_d = 1000, sect_best = (size_t)-1,
               sect_d = 1000, n = strlen(rest);
        size_t limit = n < 6 ? 1 : 2;
        char env[160], sect[96];

        *file = false;
        for (size_t i = 0; i < CFG_N; i++) {
                const char *dot = strchr(cfg_defs[i].name, '.');
                size_t d;

                key_env(cfg_defs[i].name, env, sizeof(env));
                d = edit_distance(rest, env);
                if (d < best_d) {
                        best_d = d;
                        best   = i;
                        *file  = false;
                }
                if (cfg_defs[i].secret) {
                        char f[170];
                        size_t df;

                        snprintf(f, sizeof(f), "%s_FILE", env);
                        df = edit_distance(rest, f);
                        if (df < best_d) {
                                best_d = df;
                                best   = i;
                                *file  = true;
                        }
                }
                /* the section: the key up to its first '.', and '_' */
                snprintf(sect, sizeof(sect), "%.*s_",
                         (int)(dot ? (size_t)(dot - cfg_defs[i].name)
                                   : strlen(cfg_defs[i].name)),
                         env);
                if (!strncmp(rest, sect, strlen(sect)) && d < sect_d) {
                        sect_d    = d;
                        sect_best = i;
                }
        }
        if (best_d <= limit)
                return (int)best;
        if (sect_best != (size_t)-1) {
                *file = false;
                return (int)sect_best;
        }
        return -1;
}

static void env_note(struct config *cfg, const char *name,
                     enum config_env_kind kind, int like, bool file)
{
        struct config_env_note *n;
        char env[200];

        if (cfg->n_notes == CFG_ENV_NOTES_MAX)
                return;
        n       = &cfg->notes[cfg->n_notes++];
        n->name = xstrdup(name);
        n->kind = kind;
        if (like >= 0) {
                n->like_key = cfg_defs[like].name;
                key_env(cfg_defs[like].name, env + 11, sizeof(env) - 16);
                memcpy(env, "CHARGEONCE_", 11);
                if (file)
                        strcat(env, "_FILE");
                n->like_env  = xstrdup(env);
                n->like_file = file;
        }
}

size_t config_env_notes(const struct config *cfg,
                        const struct config_env_note **notes)
{
        *notes = cfg->notes;
        return cfg->n_notes;
}

int config_load_env(struct config *cfg, char *const *envp, char *errstr,
                    size_t errstr_size)
{
        static const char prefix[] = "CHARGEONCE_";
        for (; envp && *envp; envp++) {
                const char *e = *envp, *eq, *rest;
                char name[256], key[256], sub[512];
                size_t nlen;
                bool file;
                int like;

                if (strncmp(e, prefix, sizeof(prefix) - 1) != 0)
                        continue;
                if (!(eq = strchr(e, '=')))
                        continue;
                nlen = (size_t)(eq - e);
                if (nlen >= sizeof(name))
                        nlen = sizeof(name) - 1;
                memcpy(name, e, nlen);
                name[nlen] = '\0';
                rest       = name + sizeof(prefix) - 1;
                /* a key of the table (or its _FILE) first: nothing of a
                 * platform or a tool may shadow one; then a tool's and a
                 * platform's variables, left alone (a service link named
                 * chargeonce-kafka is no Kafka property); then kafka.* */
                if (env_to_key(rest, key, sizeof(key)) != 0) {
                        if (env_is_tool(rest)) {
                                env_note(cfg, name, CONFIG_ENV_TOOL, -1, false);
                                continue;
                        }
                        if (env_is_platform(name)) {
                                env_note(cfg, name, CONFIG_ENV_PLATFORM, -1,
                                         false);
                                continue;
                        }
                        if (env_to_kafka(rest, key, sizeof(key)) != 0) {
                                like = env_resembles(rest, &file);
                                env_note(cfg, name,
                                         like >= 0 ? CONFIG_ENV_MISSPELT
                                                   : CONFIG_ENV_UNKNOWN,
                                         like, file);
                                continue;
                        }
                }
                if (config_set(cfg, key, eq + 1, sub, sizeof(sub)) < 0) {
                        snprintf(errstr, errstr_size, "%s: %s", name, sub);
                        return -1;
                }
        }
        return 0;
}

int config_check(const struct config *cfg, char *errstr, size_t errstr_size)
{
        const struct settings *st = &cfg->settings;
        char a[32], b[32];

        if (!*st->http_tls_cert_file != !*st->http_tls_key_file) {
                snprintf(errstr, errstr_size,
                         "%s is set without %s: give both (HTTPS) or neither",
                         *st->http_tls_cert_file ? "http.tls_cert_file"
                                                 : "http.tls_key_file",
                         *st->http_tls_cert_file ? "http.tls_key_file"
                                                 : "http.tls_cert_file");
                return -1;
        }
        if (*st->webhook_secret && *st->webhook_secret_file) {
                snprintf(errstr, errstr_size,
                         "webhook.secret and webhook.secret_file are both "
                         "set: give one");
                return -1;
        }
        if (st->gateway_backoff_max_ms < st->gateway_backoff_base_ms) {
                duration_format(st->gateway_backoff_max_ms, a, sizeof(a));
                duration_format(st->gateway_backoff_base_ms, b, sizeof(b));
                snprintf(errstr, errstr_size,
                         "gateway.backoff_max (%s) is shorter than "
                         "gateway.backoff_base (%s)",
                         a, b);
                return -1;
        }
        if (st->reconcile_backoff_max_ms < st->reconcile_backoff_base_ms) {
                duration_format(st->reconcile_backoff_max_ms, a, sizeof(a));
                duration_format(st->reconcile_backoff_base_ms, b, sizeof(b));
                snprintf(errstr, errstr_size,
                         "reconcile.backoff_max (%s) is shorter than "
                         "reconcile.backoff_base (%s)",
                         a, b);
                return -1;
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
