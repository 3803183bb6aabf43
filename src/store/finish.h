/* SPDX-License-Identifier: Apache-2.0 */
/*
 * store/finish: finishing a payment outside the consumer's settle, shared
 * by the two writers that do it inside an explicit transaction of their
 * own: a gateway webhook (store/webhook.c) and an operator resolving a
 * review (store/review.c). Store-internal: included by src/store/ *.c and
 * tests only.
 *
 * A finish does what a settle does (docs/data-model.md, "Webhooks"):
 * status, error, provider_charge_id, finished_at, lease cleared and
 * lease_epoch + 1 (the worker still holding the old epoch is fenced), the
 * key final with the new stored outcome and result, the outbox result
 * (resolves_review when the payment was in review) and, for a success,
 * the one balanced charge posting.
 *
 * Must never: finish a payment that is not in the status the caller
 * locked it in, post twice (UNIQUE (payment_id, kind) refuses it anyway),
 * or put a parameter value (keys, payment methods) in an error message.
 */
#ifndef CO_STORE_FINISH_H
#define CO_STORE_FINISH_H

#include "store/store_int.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* One attempt of an explicit transaction. */
struct store_tx {
        struct store *st;
        const char *who; /* errstr prefix: "webhook", "review" */
        char *errstr;
        size_t errstr_size;
        bool retry; /* failed on a deadlock / serialization failure */
        int rc;     /* of the failure */
};

/*
 * Runs sql with text parameters v[0..n) (unprepared). Returns the result
 * (owned: PQclear) or NULL with t->rc (STORE_ERR, STORE_ERR_CONN or
 * STORE_ERR_DATA for SQLSTATE classes 22, 23, 54) and t->retry set, and
 * "<who>: <what>: SQLSTATE message" in errstr (never DETAIL).
 */
PGresult *store_tx_run(struct store_tx *t, const char *what, const char *sql,
                       int n, const char *const *v) CO_MUST_CHECK;
/* As store_tx_run for a statement whose result is not read. */
bool store_tx_exec(struct store_tx *t, const char *what, const char *sql, int n,
                   const char *const *v) CO_MUST_CHECK;
/* ROLLBACK if the connection is usable. */
void store_tx_rollback(struct store_tx *t);
/* COMMIT: true, or false with errstr set (also when the server answered
 * ROLLBACK: the transaction had failed). */
bool store_tx_commit(struct store_tx *t) CO_MUST_CHECK;
/* Re-makes a broken connection before a transaction (as store_exec). */
bool store_tx_connection(struct store *st, const char *who, char *errstr,
                         size_t errstr_size) CO_MUST_CHECK;
/* Sleeps a little before retry number attempt + 1 of a transaction. */
void store_tx_backoff(struct store *st, int attempt);

/* The payment as locked by store_finish_lock (strings owned). */
struct store_locked {
        char payment_id[UUID_STR_LEN]; /* as the database writes it */
        char status[STORE_STATUS_LEN];
        int64_t amount;
        char currency[4];
        char *charge_id; /* or NULL */
        bool refunded;
        char *tenant_id, *idem_key, *order_id, *intent_event_id;
        int64_t lease_epoch;
};

void store_locked_free(struct store_locked *p);

/*
 * SELECT ... FOR UPDATE of the payment (a UUID, checked by the caller):
 * a settle or another finish of the same payment waits for this one or
 * this one for it. *found false: no such payment.
 */
bool store_finish_lock(struct store_tx *t, const char *payment_id,
                       struct store_locked *p, bool *found) CO_MUST_CHECK;

/* What a finish writes. */
struct store_finish {
        const char *status;                     /* "succeeded" | "failed" */
        const char *provider_charge_id;         /* required for "succeeded" */
        const char *error_code, *error_message; /* failed; or NULL */
        bool resolves_review; /* set by store_finish_payment */
        /* Out: the result's event id, and the new lease epoch. */
        char result_event_id[UUID_STR_LEN];
        int64_t epoch;
};

/*
 * Finishes the locked payment p (its status as locked must still hold)
 * with f: builds the result (payment_result_build; resolves_review when p
 * is in review), updates payment and key, writes the outbox row and, for
 * a success, the charge posting. False with errstr (and t->rc) set.
 */
bool store_finish_payment(struct store_tx *t, const struct store_locked *p,
                          struct store_finish *f) CO_MUST_CHECK;

/*
 * The one posting of `kind` ("charge" | "refund") of a succeeded payment:
 * a charge debits the customer's funds and credits the merchant, a refund
 * reverses it (and sets payments.refunded_at). Two entries, or nothing.
 */
bool store_finish_post(struct store_tx *t, const char *payment_id,
                       const char *kind) CO_MUST_CHECK;

#endif
