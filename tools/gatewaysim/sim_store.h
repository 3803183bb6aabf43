/* SPDX-License-Identifier: Apache-2.0 */
/*
 * sim_store: the simulator's state — idempotency keys with their stored
 * answers, every charge made (the ground truth), and the counters of
 * /_sim/stats. One mutex guards all of it; every function may be called
 * from any thread. Pure but for pthreads and jansson: time is passed in.
 *
 * Must never lose or invent a charge: a charge is recorded exactly when it
 * is made, whatever answer (or none) the client gets, and reset is the only
 * thing that forgets charges.
 */
#ifndef SIM_STORE_H
#define SIM_STORE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <jansson.h>

#include "util/crypto.h"

enum sim_counter {
        /* answers */
        SIM_CTR_REPLAYED,
        SIM_CTR_409,
        SIM_CTR_422,
        SIM_CTR_400,
        SIM_CTR_401,
        SIM_CTR_402,
        /* faults */
        SIM_FAULT_LATENCY,
        SIM_FAULT_TAIL,
        SIM_FAULT_SLOW,
        SIM_FAULT_DROP_AFTER_CHARGE,
        SIM_FAULT_500_AFTER_CHARGE,
        SIM_FAULT_500_BEFORE_CHARGE,
        SIM_FAULT_429,
        SIM_FAULT_WEBHOOK_DUP,
        /* webhooks */
        SIM_CTR_WH_SENT,
        SIM_CTR_WH_DELIVERED,
        SIM_CTR_WH_FAILED_ATTEMPTS,
        SIM_CTR_WH_GAVE_UP,
        SIM_CTR_WH_DROPPED,
        SIM_CTR__COUNT
};

enum sim_key_result {
        SIM_KEY_NEW,         /* the caller now owns the key (in progress) */
        SIM_KEY_IN_PROGRESS, /* another request holds it: 409 */
        SIM_KEY_MISMATCH,    /* used with other parameters: 422 */
        SIM_KEY_REPLAY,      /* stored answer copied out: replay it */
};

struct sim_store;

/* A new, empty store (NULL on allocation failure); sim_store_destroy. */
struct sim_store *sim_store_new(void);
void sim_store_destroy(struct sim_store *st);

/* Forgets charges, keys and counters. Keys held by requests in flight are
 * dropped too: their later finish/release becomes a no-op. */
void sim_store_reset(struct sim_store *st);

void sim_store_count(struct sim_store *st, enum sim_counter ctr, int64_t n);
/* Counts a POST /v1/charges and returns its sequence number (0, 1, ...). */
uint64_t sim_store_next_post(struct sim_store *st);
/* Restarts the sequence (a new seed). */
void sim_store_restart_sequence(struct sim_store *st);

/*
 * Looks key up. A key whose answer was stored more than retention_ms ago
 * (by now_ms) is forgotten first. On SIM_KEY_NEW the key is entered as in
 * progress, *gen identifies this holding for finish/release. On
 * SIM_KEY_REPLAY *status and *body (malloc'd, caller frees) are the stored
 * answer.
 */
enum sim_key_result
sim_store_key_begin(struct sim_store *st, const char *key,
                    const unsigned char fp[CRYPTO_SHA256_LEN], int64_t now_ms,
                    int64_t retention_ms, uint64_t *gen, int *status,
                    char **body);
/* Frees a key held since sim_store_key_begin without storing an answer. */
void sim_store_key_release(struct sim_store *st, const char *key, uint64_t gen);
/* Stores the key's answer (body is copied) and marks it done at now_ms. */
void sim_store_key_finish(struct sim_store *st, const char *key, uint64_t gen,
                          int status, const char *body, int64_t now_ms);
/* Forgets up to max done keys older than retention_ms; returns how many. */
size_t sim_store_sweep(struct sim_store *st, int64_t now_ms,
                       int64_t retention_ms, size_t max);

/*
 * Records a charge (charge_json is its charge object text, copied).
 * Returns 0, or -1 on allocation failure (nothing recorded).
 */
int sim_store_add_charge(struct sim_store *st, const char *reference,
                         const char *tenant_id, const char *order_id,
                         bool succeeded, const char *charge_json)
    __attribute__((warn_unused_result));

/* {"data":[charge,...]} of reference, malloc'd text (NULL: no memory). */
char *sim_store_charges_by_reference(struct sim_store *st,
                                     const char *reference);

/* The /_sim/stats object (caller owns it); summary leaves the arrays out. */
json_t *sim_store_stats(struct sim_store *st, bool summary);

#endif
