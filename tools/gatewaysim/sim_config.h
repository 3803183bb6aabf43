/* SPDX-License-Identifier: Apache-2.0 */
/*
 * sim_config: the simulator's options, one declarative table shared by the
 * command line (--p-slow 0.1) and the runtime endpoint POST /_sim/config
 * ({"p_slow":0.1}). Pure (jansson only). Never shows a secret (api_key,
 * webhook_secret): sim_config_to_json() says only whether one is set.
 *
 * A struct sim_config is plain data (fixed arrays, no pointers) so a
 * request can copy a consistent snapshot under a lock.
 */
#ifndef SIM_CONFIG_H
#define SIM_CONFIG_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include <jansson.h>

#define SIM_STR_SMALL 128
#define SIM_STR_LARGE 512

struct sim_config {
        /* startup only */
        int port;
        char bind[SIM_STR_SMALL];
        char port_file[SIM_STR_LARGE];
        int threads;
        char tls_cert[SIM_STR_LARGE]; /* PEM files; both empty: plain HTTP */
        char tls_key[SIM_STR_LARGE];
        /* runtime: may change through POST /_sim/config */
        char log_level[16];
        uint64_t seed;
        char api_key[SIM_STR_LARGE];
        bool ignore_idempotency;
        int64_t key_retention_ms;
        bool store_500_after_charge;
        int64_t latency_min_ms;
        int64_t latency_max_ms;
        double p_tail;
        int64_t tail_ms;
        double p_slow;
        int64_t slow_ms;
        double p_drop_after_charge;
        double p_500_after_charge;
        double p_500_before_charge;
        double p_429;
        int64_t retry_after;
        char decline_prefix[SIM_STR_SMALL];
        int64_t decline_message_bytes; /* 0: SIM_DECLINE_DEFAULT */
        bool decline_message_invalid_utf8;
        bool decline_message_pii; /* SIM_DECLINE_PII first */
        int64_t charge_id_bytes;  /* 0: the usual ch_<hex> */
        char webhook_url[SIM_STR_LARGE];
        char webhook_secret[SIM_STR_LARGE];
        double p_webhook_dup;
        int64_t webhook_delay_ms;
        int64_t webhook_attempts;
};

/* Fills cfg with the defaults. */
void sim_config_defaults(struct sim_config *cfg);

/*
 * Parses argv (argv[0] is the program). Returns 0, 1 when --help was
 * given (usage already printed to stdout), or -1 with a message naming the
 * offending argument in errstr.
 */
int sim_config_parse_args(struct sim_config *cfg, int argc, char **argv,
                          char *errstr, size_t errstr_size)
    __attribute__((warn_unused_result));

/*
 * Sets one option by name ("p_slow" or "p-slow") from its text form, as on
 * the command line. runtime_only refuses startup-only options. Returns 0
 * or -1 with a message naming the option.
 */
int sim_config_set(struct sim_config *cfg, const char *name, const char *value,
                   bool runtime_only, char *errstr, size_t errstr_size)
    __attribute__((warn_unused_result));

/*
 * Applies a JSON object of runtime options, all or nothing: on error cfg is
 * unchanged. Booleans, numbers and strings are accepted where they make
 * sense; a number for a duration means seconds, as a bare number on the
 * command line. Read-only fields of sim_config_to_json() ("api_key_set",
 * "webhook_secret_set") are ignored. Returns 0 or -1 (errstr names it).
 */
int sim_config_apply_json(struct sim_config *cfg, const json_t *obj,
                          char *errstr, size_t errstr_size)
    __attribute__((warn_unused_result));

/* The runtime options as a new JSON object (caller owns it). */
json_t *sim_config_to_json(const struct sim_config *cfg);

/* Prints the usage text. */
void sim_config_usage(FILE *out);

/*
 * Decodes a "whsec_<base64>" secret into out. Returns the length, or -1 if
 * it is not of that form.
 */
long sim_config_webhook_key(const char *secret, unsigned char *out,
                            size_t outsz);

#endif
