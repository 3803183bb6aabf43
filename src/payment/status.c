/* SPDX-License-Identifier: Apache-2.0 */
/*
 * status: names of payment and result statuses, and the moves a payment's
 * status may make.
 *
 * The names are the wire contract: never rename one. The moves are the
 * state machine (status.h); model/status.pml is generated from this table.
 */
#include "payment/status.h"

#include <stddef.h>
#include <string.h>

static const char *const status_names[PAYMENT_STATUS_COUNT] = {
        [PAYMENT_STATUS_PROCESSING] = "processing",
        [PAYMENT_STATUS_SUCCEEDED]  = "succeeded",
        [PAYMENT_STATUS_FAILED]     = "failed",
        [PAYMENT_STATUS_REVIEW]     = "review",
        [PAYMENT_STATUS_CONFLICT]   = "conflict",
        [PAYMENT_STATUS_REJECTED]   = "rejected",
};

const char *payment_status_name(enum payment_status s)
{
        if ((unsigned)s >= PAYMENT_STATUS_COUNT)
                return NULL;
        return status_names[s];
}

bool payment_status_parse(const char *s, enum payment_status *out)
{
        if (s == NULL)
                return false;
        for (unsigned i = 0; i < PAYMENT_STATUS_COUNT; i++) {
                if (strcmp(s, status_names[i]) == 0) {
                        *out = (enum payment_status)i;
                        return true;
                }
        }
        return false;
}

bool payment_status_is_payment_state(enum payment_status s)
{
        return s == PAYMENT_STATUS_PROCESSING ||
               s == PAYMENT_STATUS_SUCCEEDED || s == PAYMENT_STATUS_FAILED ||
               s == PAYMENT_STATUS_REVIEW;
}

bool payment_status_is_result(enum payment_status s)
{
        return (unsigned)s < PAYMENT_STATUS_COUNT &&
               s != PAYMENT_STATUS_PROCESSING;
}

/* [from][to]: the only moves; everything not listed is refused. */
static const bool moves[PAYMENT_STATUS_COUNT][PAYMENT_STATUS_COUNT] = {
        [PAYMENT_STATUS_PROCESSING] = { [PAYMENT_STATUS_SUCCEEDED] = true,
                                        [PAYMENT_STATUS_FAILED]    = true,
                                        [PAYMENT_STATUS_REVIEW]    = true },
        [PAYMENT_STATUS_REVIEW]     = { [PAYMENT_STATUS_SUCCEEDED] = true,
                                        [PAYMENT_STATUS_FAILED]    = true },
};

bool payment_status_may_move(enum payment_status from, enum payment_status to)
{
        if ((unsigned)from >= PAYMENT_STATUS_COUNT ||
            (unsigned)to >= PAYMENT_STATUS_COUNT)
                return false;
        return moves[from][to];
}
