/* SPDX-License-Identifier: Apache-2.0 */
/*
 * sim_config: the option table and its parsers. Pure (jansson only); any
 * thread, on a struct the caller owns. Never prints or returns the value of
 * a secret option, not even in an error message.
 */
#include "sim_config.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util/crypto.h"
#include "util/log.h"
#include "util/timeutil.h"

enum opt_type {
        OPT_BOOL,    /* bool; "--name" alone means true */
        OPT_PROB,    /* double in [0, 1] */
        OPT_INT,     /* int64 in [min, max] */
        OPT_U64,     /* uint64 */
        OPT_DUR,     /* int64 milliseconds, from a duration ("2s", "24h") */
        OPT_STR,     /* char array */
        OPT_LATENCY, /* "MIN:MAX" milliseconds -> two int64 */
        OPT_LEVEL,   /* log level name */
        OPT_WHSEC,   /* webhook secret "whsec_<base64>" or empty */
};

struct opt {
        const char *name; /* underscore form; the CLI uses dashes */
        enum opt_type type;
        size_t off;
        size_t size; /* OPT_STR: array size */
        int64_t min, max;
        bool runtime;
        bool secret;
        const char *help;
};

#define OFF(f) offsetof(struct sim_config, f)
#define SZ(f)  sizeof(((struct sim_config *)0)->f)
#define BIG    INT64_C(1000000000000)

static const struct opt opts[] = {
        { "port", OPT_INT, OFF(port), 0, 0, 65535, false, false,
          "TCP port to listen on; 0 picks a free one (required)" },
        { "bind", OPT_STR, OFF(bind), SZ(bind), 0, 0, false, false,
          "IPv4 address to bind (default 127.0.0.1)" },
        { "port_file", OPT_STR, OFF(port_file), SZ(port_file), 0, 0, false,
          false, "write the bound port here (atomically) once listening" },
        { "threads", OPT_INT, OFF(threads), 0, 1, 64, false, false,
          "HTTP worker threads (default 2)" },
        { "tls_cert", OPT_STR, OFF(tls_cert), SZ(tls_cert), 0, 0, false, false,
          "serve HTTPS with this PEM certificate (chain) file (needs "
          "--tls-key; default: plain HTTP)" },
        { "tls_key", OPT_STR, OFF(tls_key), SZ(tls_key), 0, 0, false, false,
          "the PEM private key file of --tls-cert" },
        { "log_level", OPT_LEVEL, OFF(log_level), SZ(log_level), 0, 0, true,
          false,
          "error|warn|info|debug (default info; no per-request lines below "
          "debug)" },
        { "seed", OPT_U64, OFF(seed), 0, 0, 0, true, false,
          "seed of the fault draws (default 1); setting it restarts the "
          "request sequence" },
        { "api_key", OPT_STR, OFF(api_key), SZ(api_key), 0, 0, true, true,
          "require Authorization: Bearer KEY (default: no check)" },
        { "ignore_idempotency", OPT_BOOL, OFF(ignore_idempotency), 0, 0, 0,
          true, false, "ignore Idempotency-Key: every POST charges" },
        { "key_retention", OPT_DUR, OFF(key_retention_ms), 0, 1, BIG, true,
          false, "forget keys and their answers after DUR (default 24h)" },
        { "store_500_after_charge", OPT_BOOL, OFF(store_500_after_charge), 0, 0,
          0, true, false,
          "store the 500 of --p-500-after-charge as the key's answer "
          "(Stripe-exact) instead of the charge" },
        { "latency_ms", OPT_LATENCY, OFF(latency_min_ms), 0, 0, BIG, true,
          false, "MIN:MAX uniform answer latency in ms (default 0:0)" },
        { "p_tail", OPT_PROB, OFF(p_tail), 0, 0, 0, true, false,
          "probability of adding --tail-ms to the latency" },
        { "tail_ms", OPT_INT, OFF(tail_ms), 0, 0, BIG, true, false,
          "tail latency in ms (default 0)" },
        { "p_slow", OPT_PROB, OFF(p_slow), 0, 0, 0, true, false,
          "probability of a slow answer (key in progress meanwhile)" },
        { "slow_ms", OPT_INT, OFF(slow_ms), 0, 0, BIG, true, false,
          "delay of a slow answer in ms (default 2000)" },
        { "p_drop_after_charge", OPT_PROB, OFF(p_drop_after_charge), 0, 0, 0,
          true, false, "charge, then close the connection without answer" },
        { "p_500_after_charge", OPT_PROB, OFF(p_500_after_charge), 0, 0, 0,
          true, false, "charge, then answer 500" },
        { "p_500_before_charge", OPT_PROB, OFF(p_500_before_charge), 0, 0, 0,
          true, false, "answer 500 without charging (key stays free)" },
        { "p_429", OPT_PROB, OFF(p_429), 0, 0, 0, true, false,
          "answer 429 without charging (key stays free)" },
        { "retry_after", OPT_INT, OFF(retry_after), 0, 0, 86400, true, false,
          "Retry-After seconds of a 429 (default 1)" },
        { "decline_prefix", OPT_STR, OFF(decline_prefix), SZ(decline_prefix), 0,
          0, true, false,
          "payment methods starting with this are declined (402, "
          "card_declined; default pm_decline)" },
        { "decline_message_bytes", OPT_INT, OFF(decline_message_bytes), 0, 0,
          65536, true, false,
          "error.message of a decline: N bytes of Vietnamese text with a "
          "multi-byte character across every usual cut point (default 0: "
          "\"Your card was declined.\")" },
        { "decline_message_pii", OPT_BOOL, OFF(decline_message_pii), 0, 0, 0,
          true, false,
          "a decline message begins with a card number and an e-mail "
          "address (a PSP echoing what it got)" },
        { "decline_message_invalid_utf8", OPT_BOOL,
          OFF(decline_message_invalid_utf8), 0, 0, 0, true, false,
          "put invalid UTF-8 at the start, middle and end of the decline "
          "message" },
        { "charge_id_bytes", OPT_INT, OFF(charge_id_bytes), 0, 0, 65536, true,
          false, "pad every charge id to N bytes (default 0: ch_ and 28 hex)" },
        { "webhook_url", OPT_STR, OFF(webhook_url), SZ(webhook_url), 0, 0, true,
          false, "send charge webhooks here (default: none)" },
        { "webhook_secret", OPT_WHSEC, OFF(webhook_secret), SZ(webhook_secret),
          0, 0, true, true, "whsec_<base64> signing secret of the webhooks" },
        { "p_webhook_dup", OPT_PROB, OFF(p_webhook_dup), 0, 0, 0, true, false,
          "probability of sending a webhook twice (same webhook-id)" },
        { "webhook_delay_ms", OPT_INT, OFF(webhook_delay_ms), 0, 0, BIG, true,
          false, "random delay 0..MAX ms per webhook send (reorders)" },
        { "webhook_attempts", OPT_INT, OFF(webhook_attempts), 0, 1, 20, true,
          false, "attempts per webhook before giving up (default 4)" },
};

#define N_OPTS (sizeof(opts) / sizeof(opts[0]))

void sim_config_defaults(struct sim_config *cfg)
{
        memset(cfg, 0, sizeof(*cfg));
        cfg->port = -1;
        snprintf(cfg->bind, sizeof(cfg->bind), "127.0.0.1");
        cfg->threads = 2;
        snprintf(cfg->log_level, sizeof(cfg->log_level), "info");
        cfg->seed             = 1;
        cfg->key_retention_ms = INT64_C(24) * 3600 * 1000;
        cfg->slow_ms          = 2000;
        cfg->retry_after      = 1;
        snprintf(cfg->decline_prefix, sizeof(cfg->decline_prefix),
                 "pm_decline");
        cfg->webhook_attempts = 4;
}

static const struct opt *opt_find(const char *name)
{
        char norm[64];
        size_t i;

        for (i = 0; name[i] && i < sizeof(norm) - 1; i++)
                norm[i] = name[i] == '-' ? '_' : name[i];
        if (name[i])
                return NULL;
        norm[i] = '\0';
        for (i = 0; i < N_OPTS; i++)
                if (!strcmp(opts[i].name, norm))
                        return &opts[i];
        return NULL;
}

static bool parse_i64(const char *s, int64_t *out)
{
        char *end;
        long long v;

        errno = 0;
        v     = strtoll(s, &end, 10);
        if (errno || end == s || *end)
                return false;
        *out = v;
        return true;
}

static int opt_set(struct sim_config *cfg, const struct opt *o,
                   const char *value, char *errstr, size_t errstr_size)
{
        char *p           = (char *)cfg + o->off;
        const char *shown = o->secret ? "(hidden)" : value;
        int64_t v, v2;
        double d;
        char *end;

        switch (o->type) {
        case OPT_BOOL:
                if (!strcmp(value, "true") || !strcmp(value, "1"))
                        *(bool *)p = true;
                else if (!strcmp(value, "false") || !strcmp(value, "0"))
                        *(bool *)p = false;
                else
                        goto bad;
                return 0;
        case OPT_PROB:
                errno = 0;
                d     = strtod(value, &end);
                if (errno || end == value || *end || !(d >= 0.0 && d <= 1.0))
                        goto bad;
                *(double *)p = d;
                return 0;
        case OPT_INT:
                if (!parse_i64(value, &v) || v < o->min || v > o->max)
                        goto bad;
                if (o->off == OFF(port) || o->off == OFF(threads))
                        *(int *)p = (int)v;
                else
                        *(int64_t *)p = v;
                return 0;
        case OPT_U64:
                errno = 0;
                if (value[0] == '-')
                        goto bad;
                *(uint64_t *)p = strtoull(value, &end, 10);
                if (errno || end == value || *end)
                        goto bad;
                return 0;
        case OPT_DUR:
                if (!duration_parse(value, &v) || v < o->min || v > o->max)
                        goto bad;
                *(int64_t *)p = v;
                return 0;
        case OPT_LATENCY: {
                const char *colon = strchr(value, ':');
                char lo[32];

                if (!colon) {
                        if (!parse_i64(value, &v))
                                goto bad;
                        v2 = v;
                } else {
                        if ((size_t)(colon - value) >= sizeof(lo))
                                goto bad;
                        memcpy(lo, value, (size_t)(colon - value));
                        lo[colon - value] = '\0';
                        if (!parse_i64(lo, &v) || !parse_i64(colon + 1, &v2))
                                goto bad;
                }
                if (v < 0 || v2 < v || v2 > o->max)
                        goto bad;
                cfg->latency_min_ms = v;
                cfg->latency_max_ms = v2;
                return 0;
        }
        case OPT_LEVEL: {
                enum log_level lvl;

                if (!log_level_parse(value, &lvl))
                        goto bad;
                break;
        }
        case OPT_WHSEC: {
                unsigned char key[256];

                if (value[0] &&
                    sim_config_webhook_key(value, key, sizeof(key)) <= 0)
                        goto bad;
                break;
        }
        case OPT_STR:
                break;
        }
        /* string-like */
        if (strlen(value) >= o->size)
                goto bad;
        memcpy(p, value, strlen(value) + 1);
        return 0;
bad:
        snprintf(errstr, errstr_size, "invalid value for %s: %s", o->name,
                 shown);
        return -1;
}

int sim_config_set(struct sim_config *cfg, const char *name, const char *value,
                   bool runtime_only, char *errstr, size_t errstr_size)
{
        const struct opt *o = opt_find(name);

        if (!o) {
                snprintf(errstr, errstr_size, "unknown option: %s", name);
                return -1;
        }
        if (runtime_only && !o->runtime) {
                snprintf(errstr, errstr_size,
                         "option cannot change at runtime: %s", o->name);
                return -1;
        }
        return opt_set(cfg, o, value, errstr, errstr_size);
}

int sim_config_parse_args(struct sim_config *cfg, int argc, char **argv,
                          char *errstr, size_t errstr_size)
{
        int i;

        for (i = 1; i < argc; i++) {
                const char *arg = argv[i];
                const char *eq;
                const struct opt *o;
                const char *value;
                char name[64];
                size_t nlen;

                if (!strcmp(arg, "--help") || !strcmp(arg, "-h")) {
                        sim_config_usage(stdout);
                        return 1;
                }
                if (strncmp(arg, "--", 2) != 0) {
                        snprintf(errstr, errstr_size, "unexpected argument: %s",
                                 arg);
                        return -1;
                }
                arg += 2;
                eq   = strchr(arg, '=');
                nlen = eq ? (size_t)(eq - arg) : strlen(arg);
                if (nlen >= sizeof(name)) {
                        snprintf(errstr, errstr_size, "unknown option: --%.*s",
                                 (int)nlen, arg);
                        return -1;
                }
                memcpy(name, arg, nlen);
                name[nlen] = '\0';
                o          = opt_find(name);
                if (!o || strchr(name, '_')) {
                        snprintf(errstr, errstr_size, "unknown option: --%s",
                                 name);
                        return -1;
                }
                if (eq)
                        value = eq + 1;
                else if (o->type == OPT_BOOL)
                        value = "true";
                else if (i + 1 < argc)
                        value = argv[++i];
                else {
                        snprintf(errstr, errstr_size,
                                 "option --%s needs a value", name);
                        return -1;
                }
                if (opt_set(cfg, o, value, errstr, errstr_size) < 0) {
                        /* name it as it was given */
                        snprintf(errstr, errstr_size,
                                 "invalid value for --%s: %s", name,
                                 o->secret ? "(hidden)" : value);
                        return -1;
                }
        }
        if (cfg->port < 0) {
                snprintf(errstr, errstr_size, "missing option: --port");
                return -1;
        }
        return 0;
}

int sim_config_apply_json(struct sim_config *cfg, const json_t *obj,
                          char *errstr, size_t errstr_size)
{
        struct sim_config next = *cfg;
        const char *name;
        json_t *val;

        if (!json_is_object(obj)) {
                snprintf(errstr, errstr_size, "config must be a JSON object");
                return -1;
        }
        json_object_foreach((json_t *)obj, name, val)
        {
                char text[SIM_STR_LARGE];

                if (!strcmp(name, "api_key_set") ||
                    !strcmp(name, "webhook_secret_set"))
                        continue;
                if (json_is_string(val))
                        snprintf(text, sizeof(text), "%s",
                                 json_string_value(val));
                else if (json_is_boolean(val))
                        snprintf(text, sizeof(text), "%s",
                                 json_is_true(val) ? "true" : "false");
                else if (json_is_integer(val))
                        snprintf(text, sizeof(text), "%" JSON_INTEGER_FORMAT,
                                 json_integer_value(val));
                else if (json_is_real(val))
                        snprintf(text, sizeof(text), "%.17g",
                                 json_real_value(val));
                else if (json_is_null(val))
                        text[0] = '\0';
                else {
                        snprintf(errstr, errstr_size,
                                 "invalid value for %s: not a scalar", name);
                        return -1;
                }
                if (strchr(name, '-') ||
                    sim_config_set(&next, name, text, true, errstr,
                                   errstr_size) < 0) {
                        if (strchr(name, '-'))
                                snprintf(errstr, errstr_size,
                                         "unknown option: %s", name);
                        return -1;
                }
        }
        *cfg = next;
        return 0;
}

json_t *sim_config_to_json(const struct sim_config *cfg)
{
        json_t *o = json_object();
        char buf[64];
        size_t i;

        for (i = 0; i < N_OPTS; i++) {
                const struct opt *op = &opts[i];
                const char *p        = (const char *)cfg + op->off;

                if (!op->runtime)
                        continue;
                if (op->secret) {
                        char setname[64];

                        snprintf(setname, sizeof(setname), "%s_set", op->name);
                        json_object_set_new(o, setname, json_boolean(*p));
                        continue;
                }
                switch (op->type) {
                case OPT_BOOL:
                        json_object_set_new(o, op->name,
                                            json_boolean(*(const bool *)p));
                        break;
                case OPT_PROB:
                        json_object_set_new(o, op->name,
                                            json_real(*(const double *)p));
                        break;
                case OPT_INT:
                        json_object_set_new(o, op->name,
                                            json_integer(*(const int64_t *)p));
                        break;
                case OPT_U64:
                        json_object_set_new(
                            o, op->name,
                            json_integer((json_int_t) * (const uint64_t *)p));
                        break;
                case OPT_DUR:
                        duration_format(*(const int64_t *)p, buf, sizeof(buf));
                        json_object_set_new(o, op->name, json_string(buf));
                        break;
                case OPT_LATENCY:
                        snprintf(buf, sizeof(buf), "%" PRId64 ":%" PRId64,
                                 cfg->latency_min_ms, cfg->latency_max_ms);
                        json_object_set_new(o, op->name, json_string(buf));
                        break;
                case OPT_STR:
                case OPT_LEVEL:
                case OPT_WHSEC:
                        json_object_set_new(o, op->name, json_string(p));
                        break;
                }
        }
        return o;
}

void sim_config_usage(FILE *out)
{
        size_t i;

        fprintf(out, "usage: chargeonce-gatewaysim --port PORT [--seed N] "
                     "[options]\n\n"
                     "A payment gateway simulator (docs/contract.md §4 and "
                     "§5) with fault injection.\n"
                     "Every option below can also be given as --name=value; "
                     "those marked * can\nchange at runtime through POST "
                     "/_sim/config {\"name_with_underscores\": value}.\n\n");
        for (i = 0; i < N_OPTS; i++) {
                char flag[64];
                size_t j;

                snprintf(flag, sizeof(flag), "--%s", opts[i].name);
                for (j = 0; flag[j]; j++)
                        if (flag[j] == '_')
                                flag[j] = '-';
                fprintf(out, "  %-26s %s %s\n", flag,
                        opts[i].runtime ? "*" : " ", opts[i].help);
        }
        fprintf(out, "  %-26s   this text\n", "--help");
}

long sim_config_webhook_key(const char *secret, unsigned char *out,
                            size_t outsz)
{
        static const char prefix[] = "whsec_";
        const char *b64;

        if (strncmp(secret, prefix, sizeof(prefix) - 1) != 0)
                return -1;
        b64 = secret + sizeof(prefix) - 1;
        if (!*b64)
                return -1;
        return crypto_base64_decode(b64, strlen(b64), out, outsz);
}
