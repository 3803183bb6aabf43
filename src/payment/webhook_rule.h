/* SPDX-License-Identifier: Apache-2.0 */
/*
 * webhook_rule: what a verified gateway webhook (docs/contract.md §5.3)
 * does to the payment it names, decided from the payment's stored state
 * alone. Pure, no I/O, any thread.
 *
 * The decoded event (struct gateway_event) is defined here, on the ground
 * floor, so that gateway/ (which decodes it, gateway/webhook_event.h) and
 * store/ (which applies it, store/webhook.h) both see it without including
 * each other (tests/layers: adapters never include adapters).
 *
 * Must never: move a payment backwards, decide a second charge or refund
 * posting, or accept a webhook whose amount, currency or charge id
 * disagrees with the payment.
 */
#ifndef CO_PAYMENT_WEBHOOK_RULE_H
#define CO_PAYMENT_WEBHOOK_RULE_H

#include "payment/status.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define GATEWAY_EVENT_REFERENCE_MAX 64   /* bytes; a payment id is 36 */
#define GATEWAY_EVENT_CHARGE_ID_MAX 255  /* bytes */
#define GATEWAY_EVENT_CODE_MAX      64   /* error.code, bytes */
#define GATEWAY_EVENT_MESSAGE_MAX   1024 /* error.message, bytes, cut */

enum gateway_event_type {
        GATEWAY_EVENT_CHARGE_SUCCEEDED = 1,
        GATEWAY_EVENT_CHARGE_FAILED,
        GATEWAY_EVENT_CHARGE_REFUNDED,
};

struct gateway_event {
        enum gateway_event_type type;
        /* data.reference: the payment id we sent (not checked to be one) */
        char reference[GATEWAY_EVENT_REFERENCE_MAX + 1];
        char charge_id[GATEWAY_EVENT_CHARGE_ID_MAX + 1]; /* data.id */
        /* data.status: "succeeded" or "failed" as sent ("" if absent) */
        char charge_status[16];
        int64_t amount;   /* data.amount, 1..2^53-1 */
        char currency[4]; /* data.currency, three upper-case letters */
        /* data.error (charge.failed): "" when null or absent */
        char error_code[GATEWAY_EVENT_CODE_MAX + 1];
        char error_message[GATEWAY_EVENT_MESSAGE_MAX + 1];
};

/*
 * The error stored for a payment failed by a charge.failed webhook that
 * carries no data.error (a failed payment always has an error).
 */
#define PAYMENT_WEBHOOK_FAILED_CODE    "webhook_charge_failed"
#define PAYMENT_WEBHOOK_FAILED_MESSAGE "the gateway reported the charge failed"

enum payment_webhook_action {
        /* processing or review: finish succeeded (ledger posting) */
        PAYMENT_WEBHOOK_FINISH_SUCCEEDED = 1,
        /* processing or review: finish failed */
        PAYMENT_WEBHOOK_FINISH_FAILED,
        /* succeeded, no refund yet: post the reversing refund */
        PAYMENT_WEBHOOK_REFUND,
        /* processing or review and a refund: the refund proves the charge,
         * so finish succeeded (charge posting) AND post the refund */
        PAYMENT_WEBHOOK_FINISH_AND_REFUND,
        /* already final with this outcome, or refund already posted */
        PAYMENT_WEBHOOK_IGNORE,
        /* disagrees with what is stored: record, apply nothing */
        PAYMENT_WEBHOOK_CONTRADICTION,
};

/* The payment as stored (borrowed strings). */
struct payment_webhook_state {
        enum payment_status status; /* processing|succeeded|failed|review */
        int64_t amount;
        const char *currency;
        const char *provider_charge_id; /* or NULL */
        bool refunded;                  /* a refund posting exists */
};

/* "finish_succeeded", ... */
const char *payment_webhook_action_name(enum payment_webhook_action a);

/*
 * Decides what ev does to the payment p. *reason (may be NULL) gets a
 * short static text for IGNORE and CONTRADICTION ("amount differs",
 * "status failed, webhook charge.succeeded", ...), NULL otherwise; it
 * never holds a value of p or ev. Amount and currency must always match;
 * a stored charge id must equal data.id (another id is a second charge).
 */
enum payment_webhook_action
payment_webhook_rule(const struct payment_webhook_state *p,
                     const struct gateway_event *ev, const char **reason);

#endif
