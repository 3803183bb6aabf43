/* SPDX-License-Identifier: Apache-2.0 */
/*
 * store/result_format: whether the payments' own results are stored
 * compact (result_format.compact, migration 0028; docs/upgrading.md,
 * "Compact results"), read and set for `chargeonce relay
 * --compact-results`.
 *
 * A relay of a release before 0028 publishes the payload column only,
 * and would publish an empty message for a compact row: the switch is
 * never turned on while such a relay is connected (a session whose
 * application_name is STORE_RELAY_APP_PAYLOAD_ONLY). This release's
 * relays connect as STORE_RELAY_APP.
 *
 * Must never: turn compact on beside a relay that reads payload only.
 */
#ifndef CO_STORE_RESULT_FORMAT_H
#define CO_STORE_RESULT_FORMAT_H

#include "util/compiler.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* The application_name of a relay's publishing connection: this
 * release's (reads compact rows), and the one before 0028's. */
#define STORE_RELAY_APP              "chargeonce relay v2"
#define STORE_RELAY_APP_PAYLOAD_ONLY "chargeonce relay"

struct store_result_format {
        bool compact;        /* after the call */
        bool changed;        /* the call changed it */
        char changed_at[40]; /* when it was last set (timestamptz text) */
        /* Sessions of this database named STORE_RELAY_APP_PAYLOAD_ONLY
         * when the call looked (pg_stat_activity). */
        int64_t payload_only_relays;
};

/*
 * Reads the switch (set < 0), or sets it to set != 0 in one statement on
 * a connection of its own. Turning it on changes nothing while a relay
 * that reads payload only is connected (out->changed false,
 * out->payload_only_relays > 0); turning it off always may. STORE_OK, or
 * an error with errstr set (a database before 0028 among them).
 */
int store_result_format(const char *conninfo, int set,
                        struct store_result_format *out, char *errstr,
                        size_t errstr_size) CO_MUST_CHECK;

#endif
