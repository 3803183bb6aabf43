/* SPDX-License-Identifier: Apache-2.0 */
/*
 * log: JSON lines on stderr, one line per event, written with one write(2)
 * so lines of concurrent threads never interleave.
 *
 * A line is built in a fixed buffer of LOG_LINE_MAX bytes and never
 * written past it, whatever the fields hold: it is always one valid JSON
 * object, valid UTF-8, at most LOG_LINE_MAX bytes, ending in "\n". Each
 * context field keeps at most LOG_FIELD_MAX escaped bytes and the message
 * the room left (the formatted message itself at most LOG_MSG_MAX - 1
 * bytes); a field that does not fit is cut before the first escape or
 * UTF-8 character that does not fit whole and ends in "…" (U+2026), and
 * the line then ends with "truncated":true. Invalid UTF-8 in any field
 * becomes \ufffd; control bytes are escaped.
 *
 * Never pass card data, secrets or a full idempotency key to a log call:
 * use log_mask_key() for keys. Any thread may call these functions.
 */
#ifndef CO_LOG_H
#define CO_LOG_H

#include "util/compiler.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define LOG_LINE_MAX  4096 /* bytes of a line, "\n" included */
#define LOG_FIELD_MAX 256  /* escaped bytes of one context field's value */
#define LOG_MSG_MAX   2048 /* bytes of the formatted message, NUL included */

enum log_level {
        LOG_LVL_ERROR = 0,
        LOG_LVL_WARN  = 1,
        LOG_LVL_INFO  = 2,
        LOG_LVL_DEBUG = 3,
};

/* Optional context of a log line; unset fields (NULL / -1) are left out. */
struct log_ctx {
        const char *component; /* "consume", "relay", "gateway", ... */
        const char *topic;
        int32_t partition; /* -1: none */
        int64_t offset;    /* -1: none */
        const char *payment_id;
        const char *tenant_id;
        const char *key_masked; /* from log_mask_key(), never the key */
};

#define LOG_CTX_INIT                                                           \
        {                                                                      \
                NULL, NULL, -1, -1, NULL, NULL, NULL                           \
        }

extern enum log_level log_current_level;

void log_set_level(enum log_level level);
/* Parses "error", "warn", "info", "debug". Returns false on anything else. */
bool log_level_parse(const char *s, enum log_level *out) CO_MUST_CHECK;
/* Sets the default component of lines that give none (e.g. "consume"). */
void log_set_component(const char *component);

void log_emit(enum log_level level, const struct log_ctx *ctx, const char *fmt,
              ...) CO_PRINTF(3, 4);

/* The level is checked before any argument is formatted. */
#define co_log(lvl, ctx, ...)                                                  \
        do {                                                                   \
                if ((lvl) <= log_current_level)                                \
                        log_emit((lvl), (ctx), __VA_ARGS__);                   \
        } while (0)
#define log_error(ctx, ...) co_log(LOG_LVL_ERROR, ctx, __VA_ARGS__)
#define log_warn(ctx, ...)  co_log(LOG_LVL_WARN, ctx, __VA_ARGS__)
#define log_info(ctx, ...)  co_log(LOG_LVL_INFO, ctx, __VA_ARGS__)
#define log_debug(ctx, ...) co_log(LOG_LVL_DEBUG, ctx, __VA_ARGS__)

/*
 * Writes a masked form of an idempotency key into out: the first 3
 * characters, "***", and the first 8 hex digits of its HMAC-SHA256 under
 * the mask key (log_set_mask_key), e.g. "ord***3f9a1c2b". Lines of every
 * process that shares the mask key can be correlated; without that key the
 * 8 hex digits cannot be brute-forced back to a key. Keys shorter than 8
 * characters show no prefix (3 characters would be too much of them).
 * Returns out.
 */
#define LOG_MASKED_KEY_SIZE 24
char *log_mask_key(const char *key, size_t key_len, char *out, size_t outsz);

/*
 * Sets the HMAC key of log_mask_key() (copied; len at most
 * LOG_MASK_KEY_MAX, longer keys are hashed to 32 bytes first). Main
 * thread, once at start, before any other thread masks. Without it the key
 * is random, drawn once per process: masks then differ between processes.
 */
#define LOG_MASK_KEY_MAX 64
void log_set_mask_key(const void *key, size_t len);
/* Wipes the mask key (at exit). */
void log_clear_mask_key(void);

#endif
