/* SPDX-License-Identifier: Apache-2.0 */
/*
 * classify: what one gateway answer means (docs/contract.md §4.4 and
 * §4.6). Pure: no curl, no clock; the client hands in status, headers and
 * body, or the kind of transport error.
 *
 * Every answer maps to exactly one outcome. It must never report a timeout,
 * a reset, a refused connection, a 5xx or an unreadable 2xx body as FAILED:
 * only a 402 carrying a failed charge object with a valid error.code (or a
 * listed failed charge) is a refusal. Anything that is not evidence is
 * UNKNOWN. Nothing an answer holds can make a verdict's strings invalid:
 * they are always valid, NUL-terminated UTF-8 that fits its buffer.
 */
#ifndef CO_GATEWAY_CLASSIFY_H
#define CO_GATEWAY_CLASSIFY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "payment/retry.h"

enum gw_outcome {
        GW_SUCCEEDED = 0, /* charged; charge_id is set */
        GW_FAILED,        /* final refusal; error_code is set */
        GW_IN_PROGRESS,   /* 409 request_in_progress: retry, same key */
        GW_RETRY_AFTER,   /* 429: wait at least Retry-After, same key */
        GW_UNKNOWN,       /* no evidence either way */
        GW_DEFECT,        /* a defect on our side or a refusal before any
                             charge: review + alert, never charge again */
        GW_NOT_FOUND,     /* queries only: empty list, no charge was made */
};

enum gw_transport {
        GW_TRANSPORT_OK = 0, /* an HTTP answer arrived in full */
        GW_TRANSPORT_TIMEOUT,
        GW_TRANSPORT_RESET, /* reset, closed early, partial answer */
        GW_TRANSPORT_REFUSED,
        GW_TRANSPORT_DNS,
        GW_TRANSPORT_TLS,
        GW_TRANSPORT_OTHER,
};

/* One answer, as the client saw it. Nothing here is owned. */
struct gw_answer {
        enum gw_transport transport;
        int http_status;         /* 0 when transport != OK */
        const char *retry_after; /* raw Retry-After value, or NULL */
        bool replayed;           /* Idempotent-Replayed: true */
        const char *body;        /* may be NULL */
        size_t body_len;
        /* What we asked for. A succeeded charge must carry all three:
         * one that names other values is a defect, one that lacks any
         * (or an answer to a call that did not say what it expects:
         * NULL / -1) is no evidence. A refusal is a defect only when it
         * names other values. */
        const char *expect_reference;
        int64_t expect_amount;
        const char *expect_currency;
};

/*
 * Everything taken from an answer is untrusted. A charge id is kept only
 * when it is an identifier of 1..GW_CHARGE_ID_SIZE-1 printable ASCII
 * characters (0x21..0x7E), an error.code when it is one of
 * 1..GW_ERROR_CODE_SIZE-1; neither is ever cut (a cut id names another
 * charge). error.message is free text: made valid UTF-8, stripped of
 * control characters and cut on a code-point boundary to fit.
 */
#define GW_CHARGE_ID_SIZE     256
#define GW_ERROR_CODE_SIZE    64
#define GW_ERROR_MESSAGE_SIZE 256

/* What classification found. */
struct gw_verdict {
        enum gw_outcome outcome;
        char charge_id[GW_CHARGE_ID_SIZE];
        char error_code[GW_ERROR_CODE_SIZE];
        char error_message[GW_ERROR_MESSAGE_SIZE];
        int64_t retry_after_ms; /* -1: none or unparseable */
        int succeeded_charges;  /* queries: succeeded charges listed */
        const char *reason;     /* static text: why this outcome */
};

/*
 * True if s[0..len) is 1..max_len bytes, each printable ASCII without
 * space (0x21..0x7E): the accepted form of a charge id and an error.code.
 */
bool gateway_ident_valid(const char *s, size_t len, size_t max_len);

/*
 * Untrusted text s[0..len) (any bytes, NULs included) into out as a C
 * string that is valid UTF-8: invalid sequences and U+0000 become U+FFFD,
 * C0/C1 control characters, DEL, line/paragraph separators and bidi
 * controls become a space, card numbers keep only their last 4 digits and
 * e-mail addresses become "[email]" (util/guard.h: redacted before the
 * cut, so no part of a card survives it), and the text is cut on a
 * code-point boundary to fit outsz. Returns the bytes written (without
 * the NUL).
 */
size_t gateway_text_clean(const char *s, size_t len, char *out, size_t outsz);

/* Classifies the answer to POST /v1/charges. Never returns GW_NOT_FOUND. */
void gateway_classify_charge(const struct gw_answer *a, struct gw_verdict *out);

/*
 * Classifies the answer to GET /v1/charges?reference=: GW_SUCCEEDED (a
 * succeeded charge is listed; charge_id of the first), GW_FAILED (only
 * failed charges with error.code), GW_NOT_FOUND (200 {"data":[]}),
 * GW_RETRY_AFTER (429), else GW_UNKNOWN (no evidence).
 */
void gateway_classify_query(const struct gw_answer *a, struct gw_verdict *out);

/*
 * Retry-After as delta-seconds ("120") in ms, capped at RETRY_AFTER_MAX_MS;
 * -1 for NULL, an HTTP-date or anything else.
 */
int64_t gateway_parse_retry_after(const char *v);

/* How the retry policy sees an outcome. */
enum retry_class gateway_outcome_retry_class(enum gw_outcome o);

const char *gateway_outcome_name(enum gw_outcome o);
const char *gateway_transport_name(enum gw_transport t);

#endif
