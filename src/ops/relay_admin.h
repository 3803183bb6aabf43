/* SPDX-License-Identifier: Apache-2.0 */
/*
 * ops/relay_admin: what `chargeonce relay --republish-*`, `--unpark` and
 * `--compact-results` do (docs/relay.md): mark retained published results
 * unpublished again, so that the running relays publish them with the same
 * event ids, or unpark a parked row once its cause is fixed. With dry_run
 * nothing changes: the rows it would touch are counted (store/relay_preview.h)
 * and the plan printed; otherwise what changed is printed.
 *
 * Each returns the command's exit status: 0 done, 1 a database error.
 */
#ifndef CO_OPS_RELAY_ADMIN_H
#define CO_OPS_RELAY_ADMIN_H

#include "util/compiler.h"

#include <stdbool.h>
#include <stdint.h>

/* Which published rows; NULL fields match anything (checked by cmd/). */
struct ops_republish {
        const char *since;       /* RFC 3339: published at or after since */
        const char *until;       /* RFC 3339: published before until */
        const char *event_id;    /* the intent's event id (or the result's) */
        const char *message_key; /* <tenant_id>/<idempotency_key> */
};

int ops_relay_republish(const char *conninfo, const struct ops_republish *sel,
                        bool dry_run) CO_MUST_CHECK;

/* id: an outbox id, or 0 for every parked row. */
int ops_relay_unpark(const char *conninfo, int64_t id,
                     bool dry_run) CO_MUST_CHECK;

/*
 * `--compact-results on|off` (on != 0): stores the payments' own results
 * compact from now on, or whole again (store/result_format.h). On is
 * refused (exit 1, nothing changed) while a relay of a release before
 * 0028 is connected; dry_run reads the switch and says what would
 * happen.
 */
int ops_relay_compact(const char *conninfo, int on, bool dry_run) CO_MUST_CHECK;

#endif
