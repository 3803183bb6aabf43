/* SPDX-License-Identifier: Apache-2.0 */
/*
 * review_rule: whether an operator's decision on a payment in review
 * (`chargeonce review resolve --as succeeded|failed`) may be applied,
 * given what the gateway answered when asked just before
 * (GET /v1/charges?reference=, docs/contract.md §4.6). Pure, no I/O, any
 * thread.
 *
 * The gateway's answer is given in this module's own terms so that the
 * ground floor does not include gateway/ (cmd/review.c maps it).
 *
 * Must never allow: `failed` while the gateway lists a succeeded charge;
 * `succeeded` while it lists only failed charges, or none from a gateway
 * that still keeps the payment's key; a charge id other than the one the
 * gateway lists; `succeeded` without a charge id; a decision without the
 * gateway's answer unless the operator said so (--without-gateway).
 */
#ifndef CO_PAYMENT_REVIEW_RULE_H
#define CO_PAYMENT_REVIEW_RULE_H

#include <stdbool.h>

/* The error of a payment an operator resolved as failed when the gateway
 * gave no refusal code of its own (a failed payment always has one). */
#define PAYMENT_REVIEW_FAILED_CODE    "operator_resolved_failed"
#define PAYMENT_REVIEW_FAILED_MESSAGE "resolved as failed by an operator"

/* What GET /v1/charges?reference= answered. */
enum payment_review_answer {
        PAYMENT_REVIEW_LISTS_SUCCEEDED = 1, /* a succeeded charge listed */
        PAYMENT_REVIEW_LISTS_FAILED,        /* only failed charges listed */
        PAYMENT_REVIEW_LISTS_NONE,          /* an empty list */
        /* no evidence: down, timeout, 5xx, an unusable answer */
        PAYMENT_REVIEW_NO_ANSWER,
};

struct payment_review_ask {
        bool as_succeeded; /* --as succeeded; false: --as failed */
        enum payment_review_answer answer;
        const char *gateway_charge_id; /* LISTS_SUCCEEDED: its id */
        const char *flag_charge_id;    /* --provider-charge-id, or NULL */
        /* The payment is older than gateway.key_retention: an empty list
         * may only mean the gateway forgot it. */
        bool past_key_retention;
        bool without_gateway; /* --without-gateway */
};

struct payment_review_verdict {
        bool allowed;
        /* allowed and succeeded: the charge id to store (borrowed from
         * the ask); else NULL */
        const char *charge_id;
        /* static text: why it is refused, or on what it is allowed */
        const char *reason;
};

void payment_review_decide(const struct payment_review_ask *a,
                           struct payment_review_verdict *out);

#endif
