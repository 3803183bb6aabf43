/* SPDX-License-Identifier: Apache-2.0 */
/*
 * presend: may this POST still go out? Pure: the client hands in the
 * clock and the lease; no curl, no I/O, any thread.
 *
 * A process can be stopped (SIGSTOP, a VM pause, a long GC-like stall)
 * between the moment a POST is queued and the moment it is sent. By then
 * the call's budget may be spent and the payment's lease may belong to
 * another worker, which may be charging it too. So every POST, the first
 * and every retry, is checked right before it is handed to the network:
 *
 *  - the call's deadline (gateway.deadline from the call's start) has not
 *    passed;
 *  - when the caller gave a lease, it is still held for at least the
 *    safety margin (gateway.lease_margin), which must cover the clock
 *    difference with the database and the time the request takes to
 *    reach the gateway.
 *
 * A POST that fails the check is never sent; the call ends UNKNOWN ("not
 * sent") and the payment stays processing for the reconciler. It must
 * never end FAILED.
 */
#ifndef CO_GATEWAY_PRESEND_H
#define CO_GATEWAY_PRESEND_H

#include <stdbool.h>
#include <stdint.h>

/*
 * A lease value (monotonic ms, util/timeutil.h's time_mono_ms clock) that
 * is always too short: what an owner stores when it learns that its
 * lease is lost.
 */
#define GATEWAY_LEASE_LOST INT64_MIN

enum gw_send_check {
        GW_SEND_OK = 0,
        GW_SEND_DEADLINE, /* the call's deadline has passed */
        GW_SEND_LEASE,    /* the lease ends within the margin, or is lost */
};

/*
 * now_ms, started_ms (the call's start) and lease_until_ms on the
 * monotonic clock; deadline_ms > 0 the call's budget; have_lease false:
 * no lease check (lease_until_ms ignored); margin_ms >= 0. Free of
 * overflow for any value, GATEWAY_LEASE_LOST and INT64_MAX included.
 */
enum gw_send_check gateway_send_check(int64_t now_ms, int64_t started_ms,
                                      int64_t deadline_ms, bool have_lease,
                                      int64_t lease_until_ms,
                                      int64_t margin_ms);

/* Static text for a log line or a result's reason. */
const char *gateway_send_check_reason(enum gw_send_check c);

#endif
