/* SPDX-License-Identifier: Apache-2.0 */
/*
 * status: the states of a payment and the statuses of a result (contract
 * section 3). Pure, any thread.
 *
 * A payment row is processing, succeeded, failed or review. A result adds
 * conflict and rejected (no payment behind them) and never says
 * processing. Never maps an unknown string to a status.
 */
#ifndef CO_PAYMENT_STATUS_H
#define CO_PAYMENT_STATUS_H

#include "util/compiler.h"

#include <stdbool.h>

enum payment_status {
        PAYMENT_STATUS_PROCESSING = 0,
        PAYMENT_STATUS_SUCCEEDED,
        PAYMENT_STATUS_FAILED,
        PAYMENT_STATUS_REVIEW,
        PAYMENT_STATUS_CONFLICT,
        PAYMENT_STATUS_REJECTED,
};

#define PAYMENT_STATUS_COUNT 6

/* The wire name ("succeeded", ...), or NULL for a value outside the enum. */
const char *payment_status_name(enum payment_status s);
/* Parses a wire name (exact, case-sensitive). False on anything else. */
bool payment_status_parse(const char *s,
                          enum payment_status *out) CO_MUST_CHECK;
/* True for processing, succeeded, failed, review: a payment's own state. */
bool payment_status_is_payment_state(enum payment_status s);
/* True for every status but processing: what a result may carry. */
bool payment_status_is_result(enum payment_status s);

/*
 * May a payment's status move from `from` to `to`? The state machine of
 * docs/architecture.md as one table: processing -> succeeded | failed |
 * review (a settle, fenced by the lease epoch, or a webhook's finish);
 * review -> succeeded | failed (a webhook's finish or an operator's
 * resolution). Nothing else: never backwards, a succeeded or failed
 * payment never moves again, a status is no move to itself, and
 * conflict and rejected are no payment's state (false on either side).
 * The SQL guards follow it (the settle's status = 'processing', the
 * finish's status = the status it locked, the resolution's 'review');
 * model/status.pml is generated from it (tests/payment/status_pml.c).
 */
bool payment_status_may_move(enum payment_status from, enum payment_status to);

#endif
