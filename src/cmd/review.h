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

/* `review contradictions` and `review acknowledge WEBHOOK_ID ...`
 * (cmd/review_ack.c; argv[0] is the subcommand). */
int cmd_review_contradictions(struct config *cfg, int argc,
                              char **argv) CO_MUST_CHECK;
int cmd_review_acknowledge(struct config *cfg, int argc,
                           char **argv) CO_MUST_CHECK;

/* Who decides, for the rows an operator writes: worker.id, else
 * $USER@host (valid UTF-8, into out). */
void cmd_review_actor(struct config *cfg, char *out, size_t outsz);

/* An operator's --evidence text: present, 1..STORE_REVIEW_EVIDENCE_MAX
 * bytes of UTF-8 without control characters or a card number (never
 * echoed). 0, or 2 after a usage message naming cmd. */
int cmd_review_evidence_check(const char *cmd, const char *evidence);

/* A store on db.conninfo, or NULL after saying why on stderr. */
struct store *cmd_review_store(struct config *cfg);

/* s for a terminal: control characters and DEL become '?' (into out). */
const char *cmd_review_printable(const char *s, char *out, size_t outsz);

/* The masked form of a key (log_mask_key) into out. */
const char *cmd_review_mask(const char *key, char *out, size_t outsz);

#endif
