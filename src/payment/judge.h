/* SPDX-License-Identifier: Apache-2.0 */
/*
 * payment/judge: how the running service would treat one intent message
 * now, for `chargeonce replay --dry-run`. Pure: the caller decodes the
 * message (intent_parse) and looks its event and key up in the database
 * (store_judge_batch); this module maps verdict + lookups to one of the
 * categories of the metric chargeonce_intents_total{outcome}, exactly as
 * the consume pipeline decides (src/pipeline/item.c, jobs.c), and keeps
 * what the earlier messages of the range would have created (events in
 * the inbox, keys claimed), so copies within the range are judged too.
 *
 * Must never: do I/O, or disagree with the pipeline: a change of how the
 * pipeline judges a message is a change here (tests/payment/test_judge.c).
 */
#ifndef CO_PAYMENT_JUDGE_H
#define CO_PAYMENT_JUDGE_H

#include "util/compiler.h"
#include "util/crypto.h"

#include <stdbool.h>
#include <stddef.h>

/* The categories, in the order and with the names of the label values of
 * chargeonce_intents_total{outcome} (util/metrics.def). */
enum judge_category {
        JUDGE_NEW = 0,
        JUDGE_DUPLICATE_EVENT,
        JUDGE_IN_PROGRESS,
        JUDGE_REPLAYED,
        JUDGE_CONFLICT,
        JUDGE_REJECTED,
        JUDGE_DEAD_LETTERED,
        JUDGE_N_CATEGORIES
};

/* "new", "duplicate_event", ... (the metric's label value). */
const char *payment_judge_name(enum judge_category c);

/* What decoding said (intent_parse; a message over
 * consumer.max_message_bytes is JUDGE_MSG_DLQ before parsing). */
enum judge_msg_verdict {
        JUDGE_MSG_OK = 0,
        JUDGE_MSG_REJECTED,
        JUDGE_MSG_DLQ,
};

/* The state of an idempotency key in the database (or in the range). */
enum judge_key_state {
        JUDGE_KEY_NONE = 0,
        JUDGE_KEY_PROCESSING,
        JUDGE_KEY_FINAL,
};

/* One message with what the database says about it now. */
struct judge_facts {
        enum judge_msg_verdict verdict;
        bool has_hash;  /* REJECTED: every hashed field valid (intent.h) */
        bool inbox_hit; /* (tenant, event key) is in the inbox */
        enum judge_key_state key;
        bool hash_equal;   /* the key's request hash is the message's */
        bool stored_valid; /* FINAL: its stored status is a result status */
};

/*
 * The category the pipeline would give a message with these facts:
 *   DLQ                                  -> dead_lettered
 *   REJECTED, no hash                    -> rejected
 *   REJECTED, hash: same hash + final    -> replayed (the probe)
 *                   same hash + processing -> in_progress
 *                   else                 -> rejected
 *   OK: inbox hit                        -> duplicate_event
 *       no key                           -> new
 *       other hash                       -> conflict
 *       same hash + processing           -> in_progress
 *       same hash + final                -> replayed
 * A replay of a stored outcome that is not a result status is
 * dead-lettered (stored_outcome_invalid), as the pipeline does.
 * *why (may be NULL) gets a short reason (static text).
 */
enum judge_category payment_judge(const struct judge_facts *f,
                                  const char **why);

/*
 * The memory of a range: what the messages judged so far would have left
 * behind, so that the database as it is now PLUS the range so far decides.
 * Rule for a copy of an intent whose first copy is earlier in the range:
 * it is judged as the service judges it once that first copy finished
 * (its event in the inbox, its key final), i.e. duplicate_event, replayed
 * or conflict, never in_progress (the service says in_progress only when
 * two copies run at the same time: other message keys or partitions).
 */
struct judge_range;

struct judge_range *payment_judge_range_new(void);
void payment_judge_range_destroy(struct judge_range *r);
/* Slots its lookups and inserts examined so far. For tests: proves they
 * stay short whatever the keys, without timing them. */
unsigned long long payment_judge_range_probes(const struct judge_range *r);

/* One message of the range, with the database's facts (in f). */
struct judge_msg {
        const char *tenant_id; /* NULL for a DLQ message */
        const char *event_key; /* the inbox key (intent.event_key) */
        const char *idem_key;
        const unsigned char *request_hash; /* CRYPTO_SHA256_LEN; or NULL */
};

/*
 * Judges m (facts f from the database) against the database plus the
 * range so far, then records what it leaves behind. Messages must come in
 * the order the service would take them (offset order per partition).
 */
enum judge_category payment_judge_range_next(struct judge_range *r,
                                             const struct judge_msg *m,
                                             const struct judge_facts *f,
                                             const char **why);

#endif
