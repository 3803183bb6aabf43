/* SPDX-License-Identifier: Apache-2.0 */
/*
 * cmd/security: security.mode applied to the configuration: the settings
 * the policy reads (struct ops_security_opts, from struct settings and the
 * kafka.* properties) handed to ops/security.c, which decides.
 */
#ifndef CO_CMD_SECURITY_H
#define CO_CMD_SECURITY_H

#include "ops/security.h"
#include "util/compiler.h"

#include <stddef.h>

struct config;

/* Fills o from cfg; kprops[0..n) must hold the configuration's kafka.*
 * properties (config_kafka_count()), pointing into cfg. */
void cmd_security_opts(const struct config *cfg, struct ops_security_opts *o,
                       struct kafka_prop *kprops, size_t n);

/*
 * Judges cfg for the subcommand (NULL: --dump-config, every transport):
 * ops_security_apply() of its settings. 0, or -1 with the refusal in
 * errstr (exit 2). Main thread, before any other thread starts.
 */
int cmd_security_apply(const struct config *cfg, const char *subcommand,
                       const char *argv_secret, char *errstr,
                       size_t errstr_size) CO_MUST_CHECK;

#endif
