/* SPDX-License-Identifier: Apache-2.0 */
/*
 * log: JSON-lines logger. A line is built in a local buffer and written with
 * one write(2) to stderr; stderr is never buffered by stdio here.
 * Must never write past the line buffer or emit anything but one valid
 * JSON object in valid UTF-8 per line, whatever the fields hold (see
 * log.h). Must never log card data, secrets or full idempotency keys:
 * callers mask.
 */
#include "util/log.h"
#include "util/crypto.h"
#include "util/jsonesc.h"

#include <pthread.h>
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

/* A cut field ends with U+2026; a cut line ends with TAIL_CUT. */
static const char log_ellipsis[] = "\xE2\x80\xA6";
#define TAIL     "}\n"
#define TAIL_CUT ",\"truncated\":true}\n"

/*
 * A line being built. Every write goes through line_room(), which keeps
 * the room for TAIL_CUT and a NUL, so the line can always be closed and
 * nothing is ever written past buf.
 */
struct line {
        char buf[LOG_LINE_MAX];
        size_t len;
        bool cut; /* something was cut or left out */
};

static size_t line_room(const struct line *l)
{
        size_t reserve = sizeof(TAIL_CUT); /* with the NUL of json_escape */

        return l->len + reserve <= sizeof(l->buf)
                   ? sizeof(l->buf) - reserve - l->len
                   : 0;
}

/* Appends n trusted bytes only when they fit whole. */
static bool line_raw(struct line *l, const char *s, size_t n)
{
        if (n > line_room(l)) {
                l->cut = true;
                return false;
        }
        memcpy(l->buf + l->len, s, n);
        l->len += n;
        return true;
}

/*
 * Appends ,"key":"val" with val escaped (see json_escape_n()) in at most
 * cap bytes and the room left. A value that does not fit whole, or that
 * was cut before (`was_cut`), ends in "…"; a field with no room for even
 * that is left out. Either way the line is marked cut. key is trusted.
 */
static void line_str_n(struct line *l, const char *key, const char *val,
                       size_t vlen, size_t cap, bool was_cut)
{
        size_t klen = strlen(key), over = klen + 6; /* ,"key":"" */
        size_t room       = line_room(l), budget, used, w;
        const size_t mark = sizeof(log_ellipsis) - 1;

        if (room < over + mark) {
                l->cut = true;
                return;
        }
        budget = room - over;
        if (budget > cap)
                budget = cap;
        (void)line_raw(l, ",\"", 2);
        (void)line_raw(l, key, klen);
        (void)line_raw(l, "\":\"", 3);
        w = json_escape_n(val, vlen, l->buf + l->len, budget + 1, &used);
        if (used < vlen || was_cut) {
                /* again, leaving room for the mark after the last whole
                 * escape or character */
                if (w + mark > budget)
                        w = json_escape_n(val, vlen, l->buf + l->len,
                                          budget - mark + 1, &used);
                l->len += w;
                (void)line_raw(l, log_ellipsis, mark);
                l->cut = true;
        } else {
                l->len += w;
        }
        (void)line_raw(l, "\"", 1);
}

static void line_str(struct line *l, const char *key, const char *val)
{
        line_str_n(l, key, val, strlen(val), LOG_FIELD_MAX, false);
}

static void line_int(struct line *l, const char *key, long long v)
{
        char tmp[64];
        int n = snprintf(tmp, sizeof(tmp), ",\"%s\":%lld", key, v);

        if (n > 0 && (size_t)n < sizeof(tmp))
                (void)line_raw(l, tmp, (size_t)n);
        else
                l->cut = true;
}

/*
 * The length of s[0..len) without a last UTF-8 character that vsnprintf
 * cut in half (only the end is checked: the rest is json_escape_n's).
 */
static size_t msg_drop_partial_char(const char *s, size_t len)
{
        size_t i = len, need;
        unsigned char c;

        while (i > 0 && len - i < 3 && ((unsigned char)s[i - 1] & 0xC0) == 0x80)
                i--;
        if (i == 0)
                return len;
        c    = (unsigned char)s[i - 1];
        need = c >= 0xF0 ? 4 : c >= 0xE0 ? 3 : c >= 0xC0 ? 2 : 1;
        return len - (i - 1) < need ? i - 1 : len;
}

void log_emit(enum log_level level, const struct log_ctx *ctx, const char *fmt,
              ...)
{
        struct line l = { .len = 0, .cut = false };
        char msg[LOG_MSG_MAX];
        char ts[64];
        struct timespec now;
        struct tm tm;
        va_list ap;
        int r;
        size_t mlen;
        bool msg_cut = false;

        if ((unsigned)level > LOG_LVL_DEBUG)
                level = LOG_LVL_DEBUG;
        clock_gettime(CLOCK_REALTIME, &now);
        gmtime_r(&now.tv_sec, &tm);
        snprintf(ts, sizeof(ts), "%04d-%02d-%02dT%02d:%02d:%02d.%03dZ",
                 (tm.tm_year + 1900) % 10000, (tm.tm_mon + 1) % 100,
                 tm.tm_mday % 100, tm.tm_hour % 100, tm.tm_min % 100,
                 tm.tm_sec % 100, (int)(now.tv_nsec / 1000000) % 1000);

        va_start(ap, fmt);
        r = vsnprintf(msg, sizeof(msg), fmt, ap);
        va_end(ap);
        if (r < 0) {
                mlen    = 0;
                msg_cut = true;
        } else if ((size_t)r >= sizeof(msg)) {
                mlen    = msg_drop_partial_char(msg, sizeof(msg) - 1);
                msg_cut = true;
        } else {
                mlen = (size_t)r;
        }

        (void)line_raw(&l, "{\"ts\":\"", 7);
        (void)line_raw(&l, ts, strlen(ts));
        (void)line_raw(&l, "\",\"level\":\"", 11);
        (void)line_raw(&l, log_level_names[level],
                       strlen(log_level_names[level]));
        (void)line_raw(&l, "\"", 1);
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
        line_str_n(&l, "msg", msg, mlen, sizeof(l.buf), msg_cut);
        /* line_room() kept this room */
        if (l.cut) {
                memcpy(l.buf + l.len, TAIL_CUT, sizeof(TAIL_CUT) - 1);
                l.len += sizeof(TAIL_CUT) - 1;
        } else {
                memcpy(l.buf + l.len, TAIL, sizeof(TAIL) - 1);
                l.len += sizeof(TAIL) - 1;
        }
        /* one write: lines of concurrent threads never interleave */
        ssize_t w = write(STDERR_FILENO, l.buf, l.len);
        (void)w;
}

/* The HMAC key of log_mask_key(): set once by log_set_mask_key() before
 * threads start, else random, drawn once (pthread_once). */
static unsigned char log_mask_k[LOG_MASK_KEY_MAX];
static size_t log_mask_k_len;
static pthread_once_t log_mask_once = PTHREAD_ONCE_INIT;

static void log_mask_random(void)
{
        if (log_mask_k_len)
                return; /* set before the first mask */
        if (!crypto_random(log_mask_k, CRYPTO_SHA256_LEN)) {
                /* no randomness: masks still hide the key behind SHA-256 of
                 * the time, but say so */
                struct timespec t;
                clock_gettime(CLOCK_REALTIME, &t);
                crypto_sha256(&t, sizeof(t), log_mask_k);
        }
        log_mask_k_len = CRYPTO_SHA256_LEN;
}

void log_set_mask_key(const void *key, size_t len)
{
        if (len > LOG_MASK_KEY_MAX) {
                crypto_sha256(key, len, log_mask_k);
                len = CRYPTO_SHA256_LEN;
        } else if (len > 0) {
                memcpy(log_mask_k, key, len);
        }
        log_mask_k_len = len;
}

void log_clear_mask_key(void)
{
        crypto_wipe(log_mask_k, sizeof(log_mask_k));
        log_mask_k_len = 0;
}

char *log_mask_key(const char *key, size_t key_len, char *out, size_t outsz)
{
        unsigned char d[CRYPTO_SHA256_LEN];
        char hex[65];
        char prefix[4] = { 0 };

        (void)pthread_once(&log_mask_once, log_mask_random);
        crypto_hmac_sha256(log_mask_k, log_mask_k_len, key, key_len, d);
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
