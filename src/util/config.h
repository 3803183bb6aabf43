/* SPDX-License-Identifier: Apache-2.0 */
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
/*
 * envp: a NULL-terminated environment. CHARGEONCE_<KEY> (and
 * CHARGEONCE_<KEY>_FILE, CHARGEONCE_KAFKA_<PROPERTY>) set keys; a bad
 * value is an error naming the variable and the key. Any other
 * CHARGEONCE_* variable names no key and never stops the process: it is
 * left alone and noted (config_env_notes) as the project's own tool or
 * test variable (CHARGEONCE_TEST_*, CHARGEONCE_FAILPOINTS,
 * CHARGEONCE_ALLOW_CORE, ...), a platform's service link (Kubernetes:
 * CHARGEONCE_SERVICE_HOST, CHARGEONCE_PORT_9108_TCP, ...; Docker's legacy
 * links), a misspelling of a key (within 2 edits of one, or a key's
 * section such as CHARGEONCE_GATEWAY_...), or something else.
 */
int config_load_env(struct config *cfg, char *const *envp, char *errstr,
                    size_t errstr_size) CO_MUST_CHECK;

/* Why config_load_env() left a variable alone. */
enum config_env_kind {
        CONFIG_ENV_TOOL,     /* the project's own tool or test variable */
        CONFIG_ENV_PLATFORM, /* a Kubernetes or Docker service link */
        CONFIG_ENV_MISSPELT, /* resembles a key: like_key */
        CONFIG_ENV_UNKNOWN,  /* names nothing we know */
};

struct config_env_note {
        char *name; /* the variable (never its value) */
        enum config_env_kind kind;
        const char *like_key; /* CONFIG_ENV_MISSPELT: the key, else NULL */
        char *like_env;       /* ... and its variable, else NULL */
        bool like_file;       /* ... its <KEY>_FILE form */
};

/* The variables config_load_env() left alone, in the order seen (at most
 * 64), for the caller to log once its logger is set up. Owned by cfg. */
size_t config_env_notes(const struct config *cfg,
                        const struct config_env_note **notes);

/*
 * The rules between keys, once every source is loaded: http.tls_cert_file
 * and http.tls_key_file both or neither; not both webhook.secret and
 * webhook.secret_file; gateway.backoff_max >= gateway.backoff_base;
 * reconcile.backoff_max >= reconcile.backoff_base. 0, or -1 with a
 * message naming the keys.
 */
int config_check(const struct config *cfg, char *errstr,
                 size_t errstr_size) CO_MUST_CHECK;

/* The i-th key whose text has a syntax of its own (gateway.url,
 * http.listen, topic.*, ...), NULL past the last (for tests). */
const char *config_syntax_key(size_t i);
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
