/* SPDX-License-Identifier: Apache-2.0 */
/*
 * webhook_event: the body of a verified gateway webhook (docs/contract.md
 * §5.2),
 * {"type": "charge.succeeded" | "charge.failed" | "charge.refunded",
 *  "data": <charge object>}, decoded into bounded, valid UTF-8 fields.
 * Pure (jansson only); any thread.
 *
 * Treats every byte as hostile: a body that is not one JSON object, a
 * type outside the three, a missing or oversized field, an identifier
 * (type, id, reference, status, error code) that holds a NUL or was not
 * valid UTF-8 is refused with a reason that never repeats a value. A body
 * that is not valid UTF-8 is cleaned first (U+FFFD for each invalid
 * sequence): the decline message keeps its text, a damaged identifier is
 * refused. Unknown extra fields are ignored (the gateway may add
 * some). An over-long error message is cut at a code point boundary, not
 * refused (a decline text is the gateway's, and is informational).
 *
 * Must never: accept a reference or charge id it would have to cut, or
 * return a field that was not in the body.
 */
#ifndef CO_GATEWAY_WEBHOOK_EVENT_H
#define CO_GATEWAY_WEBHOOK_EVENT_H

#include "payment/webhook_rule.h"
#include "util/compiler.h"

#include <stddef.h>
#include <stdint.h>

/* The event's fields and types are defined in payment/webhook_rule.h (the
 * ground floor) so that store/ sees them without including gateway/. */

/* "charge.succeeded", ... */
const char *gateway_event_type_name(enum gateway_event_type t);

/*
 * Decodes body[0..len) (len <= GATEWAY_WEBHOOK_BODY_MAX) into *ev.
 * Required: type; data.id, data.reference, data.amount, data.currency;
 * data.status consistent with the type when present (charge.succeeded
 * and charge.refunded: "succeeded" or, for a refund, "refunded";
 * charge.failed: "failed"). Returns 0, or -1 with the reason in errstr
 * (e.g. "data.amount: not an integer in 1..2^53-1") and *ev zeroed.
 */
int gateway_event_parse(const void *body, size_t len, struct gateway_event *ev,
                        char *errstr, size_t errstr_size) CO_MUST_CHECK;

#endif
