/*
 * webhook_event: the body of a verified gateway webhook (CONTRACT.md §5),
 * {"type": "charge.succeeded" | "charge.failed" | "charge.refunded",
 *  "data": <charge object>}, decoded into bounded, valid UTF-8 fields.
 * Pure (jansson only); any thread.
 *
 * Treats every byte as hostile: a body that is not one JSON object, a
 * type outside the three, a missing or oversized field, a string that is
 * not valid UTF-8 or holds a NUL is refused with a reason that never
 * repeats a value. Unknown extra fields are ignored (the gateway may add
 * some). An over-long error message is cut at a code point boundary, not
 * refused (a decline text is the gateway's, and is informational).
 *
 * Must never: accept a reference or charge id it would have to cut, or
 * return a field that was not in the body.
 */
#ifndef CO_GATEWAY_WEBHOOK_EVENT_H
#define CO_GATEWAY_WEBHOOK_EVENT_H

#include "util/compiler.h"

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

/* "charge.succeeded", ... */
const char *gateway_event_type_name(enum gateway_event_type t);

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
 * Decodes body[0..len) (len <= GATEWAY_WEBHOOK_BODY_MAX) into *ev.
 * Required: type; data.id, data.reference, data.amount, data.currency;
 * data.status consistent with the type when present (charge.succeeded
 * and charge.refunded: "succeeded" or, for a refund, "refunded";
 * charge.failed: "failed"). Returns 0, or -1 with the reason in errstr
 * (e.g. "data.amount: not an integer in 1..2^53-1") and *ev zeroed.
 */
int gateway_event_parse(const void *body, size_t len,
                        struct gateway_event *ev, char *errstr,
                        size_t errstr_size) CO_MUST_CHECK;

#endif
