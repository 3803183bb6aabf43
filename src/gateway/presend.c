/* SPDX-License-Identifier: Apache-2.0 */
/* presend: the check right before a POST goes out (see presend.h). */
#include "gateway/presend.h"

enum gw_send_check gateway_send_check(int64_t now_ms, int64_t started_ms,
                                      int64_t deadline_ms, bool have_lease,
                                      int64_t lease_until_ms, int64_t margin_ms)
{
        /* now >= started on one monotonic clock; a caller's error must
         * not turn into a send, so a negative elapsed counts as spent.
         * Differences of ordered values are taken unsigned: exact, and
         * free of overflow whatever the values. */
        if (deadline_ms <= 0 || now_ms < started_ms ||
            (uint64_t)now_ms - (uint64_t)started_ms >= (uint64_t)deadline_ms)
                return GW_SEND_DEADLINE;
        if (!have_lease)
                return GW_SEND_OK;
        if (lease_until_ms <= now_ms ||
            (uint64_t)lease_until_ms - (uint64_t)now_ms <=
                (uint64_t)(margin_ms > 0 ? margin_ms : 0))
                return GW_SEND_LEASE;
        return GW_SEND_OK;
}

const char *gateway_send_check_reason(enum gw_send_check c)
{
        switch (c) {
        case GW_SEND_OK:
                return "may send";
        case GW_SEND_DEADLINE:
                return "not sent: the call's deadline passed before the POST "
                       "went out";
        case GW_SEND_LEASE:
                return "not sent: the payment's lease is lost or ends within "
                       "the safety margin";
        }
        return "?";
}
