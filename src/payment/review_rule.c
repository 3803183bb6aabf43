/* SPDX-License-Identifier: Apache-2.0 */
/*
 * review_rule: an operator's review decision against the gateway's answer
 * (see review_rule.h; docs/operations.md, "The review queue", has the
 * table). Pure.
 */
#include "payment/review_rule.h"

#include <stddef.h>
#include <string.h>

static void verdict(struct payment_review_verdict *v, bool allowed,
                    const char *charge_id, const char *reason)
{
        v->allowed   = allowed;
        v->charge_id = allowed ? charge_id : NULL;
        v->reason    = reason;
}

static bool given(const char *s)
{
        return s != NULL && s[0] != '\0';
}

/* --as succeeded */
static void decide_succeeded(const struct payment_review_ask *a,
                             struct payment_review_verdict *v)
{
        switch (a->answer) {
        case PAYMENT_REVIEW_LISTS_SUCCEEDED:
                if (!given(a->gateway_charge_id))
                        verdict(v, false, NULL,
                                "the gateway lists a succeeded charge "
                                "without an id: no usable evidence");
                else if (given(a->flag_charge_id) &&
                         strcmp(a->flag_charge_id, a->gateway_charge_id) != 0)
                        verdict(v, false, NULL,
                                "--provider-charge-id differs from the "
                                "charge the gateway lists for this payment");
                else
                        verdict(v, true, a->gateway_charge_id,
                                "the gateway lists a succeeded charge");
                return;
        case PAYMENT_REVIEW_LISTS_FAILED:
                verdict(v, false, NULL,
                        "the gateway lists only failed charges for this "
                        "payment: it was not charged");
                return;
        case PAYMENT_REVIEW_LISTS_NONE:
                if (!a->past_key_retention)
                        verdict(v, false, NULL,
                                "the gateway lists no charge for this "
                                "payment and still keeps its key: it was "
                                "not charged");
                else if (!given(a->flag_charge_id))
                        verdict(v, false, NULL,
                                "the payment is older than "
                                "gateway.key_retention, so the gateway's "
                                "empty list is no evidence: give "
                                "--provider-charge-id from the gateway's "
                                "own records");
                else
                        verdict(v, true, a->flag_charge_id,
                                "past gateway.key_retention: the charge id "
                                "given by the operator");
                return;
        case PAYMENT_REVIEW_NO_ANSWER:
                break;
        }
        if (!a->without_gateway)
                verdict(v, false, NULL,
                        "the gateway could not be asked: give "
                        "--without-gateway to decide without it");
        else if (!given(a->flag_charge_id))
                verdict(v, false, NULL,
                        "--as succeeded without the gateway's answer needs "
                        "--provider-charge-id");
        else
                verdict(v, true, a->flag_charge_id,
                        "without the gateway (--without-gateway): the "
                        "charge id given by the operator");
}

/* --as failed */
static void decide_failed(const struct payment_review_ask *a,
                          struct payment_review_verdict *v)
{
        switch (a->answer) {
        case PAYMENT_REVIEW_LISTS_SUCCEEDED:
                verdict(v, false, NULL,
                        "the gateway lists a succeeded charge for this "
                        "payment: it was charged");
                return;
        case PAYMENT_REVIEW_LISTS_FAILED:
                verdict(v, true, NULL, "the gateway lists only failed charges");
                return;
        case PAYMENT_REVIEW_LISTS_NONE:
                verdict(v, true, NULL,
                        a->past_key_retention
                            ? "the gateway lists no charge (past "
                              "gateway.key_retention: no evidence either way)"
                            : "the gateway lists no charge");
                return;
        case PAYMENT_REVIEW_NO_ANSWER:
                break;
        }
        if (!a->without_gateway)
                verdict(v, false, NULL,
                        "the gateway could not be asked: give "
                        "--without-gateway to decide without it");
        else
                verdict(v, true, NULL,
                        "without the gateway (--without-gateway)");
}

void payment_review_decide(const struct payment_review_ask *a,
                           struct payment_review_verdict *out)
{
        verdict(out, false, NULL, "no decision");
        if (a->as_succeeded)
                decide_succeeded(a, out);
        else
                decide_failed(a, out);
}
