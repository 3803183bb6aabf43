/* SPDX-License-Identifier: Apache-2.0 */
/*
 * webhook_rule: the table of what a verified webhook does to a payment
 * (docs/contract.md §5.3; docs/data-model.md, "Webhooks"). Pure.
 *
 * Checks the facts that must always agree (amount, currency, charge id)
 * before the status: a webhook that names another amount is never
 * applied, whatever the status. Never returns a reason holding a value.
 */
#include "payment/webhook_rule.h"

#include <string.h>

const char *payment_webhook_action_name(enum payment_webhook_action a)
{
        switch (a) {
        case PAYMENT_WEBHOOK_FINISH_SUCCEEDED:
                return "finish_succeeded";
        case PAYMENT_WEBHOOK_FINISH_FAILED:
                return "finish_failed";
        case PAYMENT_WEBHOOK_REFUND:
                return "refund";
        case PAYMENT_WEBHOOK_FINISH_AND_REFUND:
                return "finish_and_refund";
        case PAYMENT_WEBHOOK_IGNORE:
                return "ignore";
        case PAYMENT_WEBHOOK_CONTRADICTION:
                return "contradiction";
        }
        return "unknown";
}

static enum payment_webhook_action say(enum payment_webhook_action a,
                                       const char *why, const char **reason)
{
        if (reason)
                *reason = why;
        return a;
}

/* processing or review: the outcome is not known yet */
static enum payment_webhook_action open_rule(enum gateway_event_type t,
                                             const char **reason)
{
        switch (t) {
        case GATEWAY_EVENT_CHARGE_SUCCEEDED:
                return say(PAYMENT_WEBHOOK_FINISH_SUCCEEDED, NULL, reason);
        case GATEWAY_EVENT_CHARGE_FAILED:
                return say(PAYMENT_WEBHOOK_FINISH_FAILED, NULL, reason);
        case GATEWAY_EVENT_CHARGE_REFUNDED:
                return say(PAYMENT_WEBHOOK_FINISH_AND_REFUND, NULL, reason);
        }
        return say(PAYMENT_WEBHOOK_CONTRADICTION, "unknown event type", reason);
}

static enum payment_webhook_action
succeeded_rule(enum gateway_event_type t, bool refunded, const char **reason)
{
        switch (t) {
        case GATEWAY_EVENT_CHARGE_SUCCEEDED:
                /* late or repeated; a refund after it does not undo it */
                return say(PAYMENT_WEBHOOK_IGNORE,
                           refunded ? "already succeeded (refunded since)"
                                    : "already succeeded",
                           reason);
        case GATEWAY_EVENT_CHARGE_FAILED:
                return say(PAYMENT_WEBHOOK_CONTRADICTION,
                           "status succeeded, webhook charge.failed", reason);
        case GATEWAY_EVENT_CHARGE_REFUNDED:
                if (refunded)
                        return say(PAYMENT_WEBHOOK_IGNORE,
                                   "refund already posted", reason);
                return say(PAYMENT_WEBHOOK_REFUND, NULL, reason);
        }
        return say(PAYMENT_WEBHOOK_CONTRADICTION, "unknown event type", reason);
}

static enum payment_webhook_action failed_rule(enum gateway_event_type t,
                                               const char **reason)
{
        switch (t) {
        case GATEWAY_EVENT_CHARGE_SUCCEEDED:
                return say(PAYMENT_WEBHOOK_CONTRADICTION,
                           "status failed, webhook charge.succeeded", reason);
        case GATEWAY_EVENT_CHARGE_FAILED:
                return say(PAYMENT_WEBHOOK_IGNORE, "already failed", reason);
        case GATEWAY_EVENT_CHARGE_REFUNDED:
                return say(PAYMENT_WEBHOOK_CONTRADICTION,
                           "refund of a failed payment", reason);
        }
        return say(PAYMENT_WEBHOOK_CONTRADICTION, "unknown event type", reason);
}

enum payment_webhook_action
payment_webhook_rule(const struct payment_webhook_state *p,
                     const struct gateway_event *ev, const char **reason)
{
        if (p->amount != ev->amount)
                return say(PAYMENT_WEBHOOK_CONTRADICTION, "amount differs",
                           reason);
        if (p->currency == NULL || strcmp(p->currency, ev->currency) != 0)
                return say(PAYMENT_WEBHOOK_CONTRADICTION, "currency differs",
                           reason);
        /* one payment, one charge at the PSP: another id is a second one */
        if (p->provider_charge_id != NULL &&
            strcmp(p->provider_charge_id, ev->charge_id) != 0)
                return say(PAYMENT_WEBHOOK_CONTRADICTION, "charge id differs",
                           reason);
        if (p->refunded && p->status != PAYMENT_STATUS_SUCCEEDED)
                return say(PAYMENT_WEBHOOK_CONTRADICTION,
                           "refund recorded on a payment not succeeded",
                           reason);
        switch (p->status) {
        case PAYMENT_STATUS_PROCESSING:
        case PAYMENT_STATUS_REVIEW:
                return open_rule(ev->type, reason);
        case PAYMENT_STATUS_SUCCEEDED:
                return succeeded_rule(ev->type, p->refunded, reason);
        case PAYMENT_STATUS_FAILED:
                return failed_rule(ev->type, reason);
        default:
                break;
        }
        return say(PAYMENT_WEBHOOK_CONTRADICTION, "payment status unknown",
                   reason);
}
