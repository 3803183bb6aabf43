/*
 * cmd/review: what the two files of `chargeonce review` share
 * (cmd/review.c: the dispatcher, list and show; cmd/review_resolve.c:
 * resolve). Wiring only: the decision is payment/review_rule.c's, the
 * SQL store/review.c's.
 */
#ifndef CO_CMD_REVIEW_H
#define CO_CMD_REVIEW_H

#include "util/compiler.h"

#include <stddef.h>
#include <stdio.h>

struct config;
struct store;

/* `review resolve PAYMENT ...` (argv[0] is "resolve"). */
int cmd_review_resolve(struct config *cfg, int argc, char **argv) CO_MUST_CHECK;

/* A store on db.conninfo, or NULL after saying why on stderr. */
struct store *cmd_review_store(struct config *cfg);

/* s for a terminal: control characters and DEL become '?' (into out). */
const char *cmd_review_printable(const char *s, char *out, size_t outsz);

/* The masked form of a key (log_mask_key) into out. */
const char *cmd_review_mask(const char *key, char *out, size_t outsz);

#endif
