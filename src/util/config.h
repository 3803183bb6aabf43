/*
 * config: chargeonce's configuration, one declarative table (config.c).
 *
 * Sources, later ones winning: built-in defaults, a `key = value` file
 * (`#` comments), CHARGEONCE_<KEY> environment variables (upper case,
 * `.` -> `_`), then -X key=value. `kafka.<property>` keys pass through to
 * librdkafka (checked by the kafka module). A secret may come from a file:
 * `<key>_file = /path`, also for a Kafka secret property
 * (`kafka.sasl.password_file`, CHARGEONCE_KAFKA_SASL_PASSWORD_FILE; the
 * consumer./producer. forms too). Secrets are never printed:
 * config_dump() hides them and no error message repeats a value of a
 * secret key. Every value is wiped (OPENSSL_cleanse) when it is replaced
 * or freed, and so is every buffer that held a file's content.
 *
 * The keys, their types, defaults, ranges and help are one list,
 * util/config_keys.def; struct settings below is generated from it, and
 * config_settings() reads every key typed, parsed once when it was set.
 *
 * Not thread-safe while loading; read-only afterwards, any thread.
 */
#ifndef CO_CONFIG_H
#define CO_CONFIG_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

struct config;

/* The C type of a key's field in struct settings, by its type in
 * config_keys.def. A DURATION is in milliseconds. */
#define CONFIG_CTYPE_STR      const char *
#define CONFIG_CTYPE_INT      int64_t
#define CONFIG_CTYPE_BOOL     bool
#define CONFIG_CTYPE_DURATION int64_t
#define CONFIG_CTYPE_ENUM     const char *

/*
 * Every key of the table, typed: "gateway.timeout" is gateway_timeout_ms,
 * "db.connections" is db_connections (config_keys.def says which is which).
 * A string (STR or ENUM) is never NULL; "" when unset.
 */
struct settings {
#define CO_KEY(key, field, type, ...) CONFIG_CTYPE_##type field;
#include "util/compiler.h"
#include "util/config_keys.def"
#undef CO_KEY
};

enum config_type {
        CONFIG_STR,
        CONFIG_INT,
        CONFIG_BOOL,
        CONFIG_DURATION,
        CONFIG_ENUM,
};

/* One entry of config_keys.def, as the table holds it. */
struct config_key {
        const char *name;
        enum config_type type;
        const char *def; /* the default, as text */
        bool secret;
        int64_t min, max;    /* CONFIG_INT / CONFIG_DURATION (ms) */
        const char *choices; /* CONFIG_ENUM: "a|b|c" */
        const char *help;
        const char *field; /* its member of struct settings */
        size_t offset;     /* offsetof(struct settings, field) */
};

/* The table, in the order of config_keys.def; *n is set to its length.
 * Static, never freed. */
const struct config_key *config_keys(size_t *n);

/* A new configuration holding the defaults. Owned by the caller. */
struct config *config_new(void);
void config_destroy(struct config *cfg);

/* A configuration file: at most CONFIG_FILE_MAX bytes, lines of at most
 * CONFIG_LINE_MAX bytes (without the new line), no NUL byte. */
#define CONFIG_FILE_MAX (1024 * 1024)
#define CONFIG_LINE_MAX 4094

/* Each returns 0, or -1 with a message naming the key (or file:line). */
int config_load_file(struct config *cfg, const char *path, char *errstr,
                     size_t errstr_size) CO_MUST_CHECK;
/*
 * The content of a configuration file, data[0..len) (not NUL-terminated),
 * read as config_load_file() reads a file; name stands for the file in
 * messages. Settings before a bad line stay applied, as with a file.
 */
int config_load_buffer(struct config *cfg, const char *name, const char *data,
                       size_t len, char *errstr,
                       size_t errstr_size) CO_MUST_CHECK;
/* envp: a NULL-terminated environment. Names that start CHARGEONCE_TEST_,
 * CHARGEONCE_FAILPOINTS and CHARGEONCE_ALLOW_CORE are not configuration and
 * are skipped. */
int config_load_env(struct config *cfg, char *const *envp, char *errstr,
                    size_t errstr_size) CO_MUST_CHECK;
/* "key=value", as given to -X. */
int config_set_arg(struct config *cfg, const char *arg, char *errstr,
                   size_t errstr_size) CO_MUST_CHECK;
int config_set(struct config *cfg, const char *key, const char *value,
               char *errstr, size_t errstr_size) CO_MUST_CHECK;

/*
 * Every key, typed and current: each successful config_new(),
 * config_set() (and the loaders, which call it) updates it. Owned by cfg;
 * a string stays valid until config_destroy() or the next set of its key.
 */
const struct settings *config_settings(const struct config *cfg);

/* Typed reads of a table key; a key not in the table aborts (a bug). */
const char *config_str(const struct config *cfg, const char *key);
int64_t config_int(const struct config *cfg, const char *key);
bool config_bool(const struct config *cfg, const char *key);
int64_t config_ms(const struct config *cfg, const char *key);

/* kafka.* pass-through properties, in the order they were set (without
 * the "kafka." prefix). */
size_t config_kafka_count(const struct config *cfg);
void config_kafka_get(const struct config *cfg, size_t i, const char **name,
                      const char **value);

/* True for a key whose value must never be shown: a secret key of the
 * table, or a kafka.* property whose name holds "password", "secret",
 * "ssl.key.pem" or "ssl_key" (never a <key>_file, which is a path). */
bool config_key_is_secret(const char *key);
/* The same for "key=value" as given to -X (false without '='). */
bool config_arg_is_secret(const char *arg);

/* Writes every key = value, secrets as "<hidden>", to out. */
void config_dump(const struct config *cfg, FILE *out);
/* Writes the table (key, default, meaning) to out, for --help. */
void config_describe(FILE *out);

#endif
