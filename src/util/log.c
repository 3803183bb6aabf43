/*
 * log: JSON-lines logger. A line is built in a local buffer and written with
 * one write(2) to stderr; stderr is never buffered by stdio here.
 * Must never log card data, secrets or full idempotency keys: callers mask.
 */
#include "util/log.h"
#include "util/crypto.h"
#include "util/jsonesc.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

enum log_level log_current_level = LOG_LVL_INFO;
static const char *log_default_component;

static const char *const log_level_names[] = { "error", "warn", "info",
                                               "debug" };

void log_set_level(enum log_level level)
{
        log_current_level = level;
}

void log_set_component(const char *component)
{
        log_default_component = component;
}

bool log_level_parse(const char *s, enum log_level *out)
{
        for (size_t i = 0;
             i < sizeof(log_level_names) / sizeof(*log_level_names); i++) {
                if (strcmp(s, log_level_names[i]) == 0) {
                        *out = (enum log_level)i;
                        return true;
                }
        }
        return false;
}

struct line {
        char buf[4096];
        size_t len;
};

static void line_raw(struct line *l, const char *s)
{
        size_t n = strlen(s);
        if (n > sizeof(l->buf) - 2 - l->len)
                n = sizeof(l->buf) - 2 - l->len;
        memcpy(l->buf + l->len, s, n);
        l->len += n;
}

static void line_str(struct line *l, const char *key, const char *val)
{
        line_raw(l, ",\"");
        line_raw(l, key);
        line_raw(l, "\":\"");
        l->len += json_escape(val, strlen(val), l->buf + l->len,
                              sizeof(l->buf) - 4 - l->len);
        line_raw(l, "\"");
}

static void line_int(struct line *l, const char *key, long long v)
{
        char tmp[32];
        line_raw(l, ",\"");
        line_raw(l, key);
        line_raw(l, "\":");
        snprintf(tmp, sizeof(tmp), "%lld", v);
        line_raw(l, tmp);
}

void log_emit(enum log_level level, const struct log_ctx *ctx, const char *fmt,
              ...)
{
        struct line l = { .len = 0 };
        char msg[2048];
        char ts[64];
        struct timespec now;
        struct tm tm;
        va_list ap;

        clock_gettime(CLOCK_REALTIME, &now);
        gmtime_r(&now.tv_sec, &tm);
        snprintf(ts, sizeof(ts), "%04d-%02d-%02dT%02d:%02d:%02d.%03dZ",
                 (tm.tm_year + 1900) % 10000, (tm.tm_mon + 1) % 100,
                 tm.tm_mday % 100, tm.tm_hour % 100, tm.tm_min % 100,
                 tm.tm_sec % 100, (int)(now.tv_nsec / 1000000) % 1000);

        va_start(ap, fmt);
        vsnprintf(msg, sizeof(msg), fmt, ap);
        va_end(ap);

        line_raw(&l, "{\"ts\":\"");
        line_raw(&l, ts);
        line_raw(&l, "\",\"level\":\"");
        line_raw(&l, log_level_names[level]);
        line_raw(&l, "\"");
        const char *component =
            ctx && ctx->component ? ctx->component : log_default_component;
        if (component)
                line_str(&l, "component", component);
        if (ctx) {
                if (ctx->topic)
                        line_str(&l, "topic", ctx->topic);
                if (ctx->partition >= 0)
                        line_int(&l, "partition", ctx->partition);
                if (ctx->offset >= 0)
                        line_int(&l, "offset", ctx->offset);
                if (ctx->payment_id)
                        line_str(&l, "payment_id", ctx->payment_id);
                if (ctx->tenant_id)
                        line_str(&l, "tenant_id", ctx->tenant_id);
                if (ctx->key_masked)
                        line_str(&l, "key", ctx->key_masked);
        }
        line_str(&l, "msg", msg);
        line_raw(&l, "}\n");
        /* one write: lines of concurrent threads never interleave */
        ssize_t r = write(STDERR_FILENO, l.buf, l.len);
        (void)r;
}

char *log_mask_key(const char *key, size_t key_len, char *out, size_t outsz)
{
        unsigned char d[32];
        char hex[65];
        char prefix[4] = { 0 };

        crypto_sha256(key, key_len, d);
        crypto_hex(d, 4, hex);
        if (key_len >= 8) {
                for (int i = 0; i < 3; i++) {
                        unsigned char c = (unsigned char)key[i];
                        prefix[i] =
                            (c >= 0x21 && c < 0x7f && c != '"' && c != '\\')
                                ? (char)c
                                : '?';
                }
        }
        snprintf(out, outsz, "%s***%s", prefix, hex);
        return out;
}
