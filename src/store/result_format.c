/* SPDX-License-Identifier: Apache-2.0 */
/* store/result_format: the compact-results switch (result_format.h). */
#include "store/result_format.h"
#include "store/store_int.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/*
 * The relays that read payload only, in this statement's snapshot of
 * pg_stat_activity.
 */
#define OLD_RELAYS                                                             \
        " old AS (SELECT count(*) AS n FROM pg_stat_activity"                  \
        "          WHERE datname = current_database()"                         \
        "            AND application_name = $1)"

/* A dry run: reads, writes nothing. */
static const char read_sql[] =
    "WITH f AS (SELECT compact, changed_at FROM result_format"
    "            WHERE id = 1)," OLD_RELAYS
    " SELECT f.compact, f.changed_at, old.n, false"
    "   FROM f CROSS JOIN old";

/*
 * f locks the switch's row, so that two operators at once are one after
 * the other; up sets it, on only when no relay that reads payload only is
 * connected. The settles read the row without a lock and are never held
 * up.
 */
static const char set_sql[] =
    "WITH f AS (SELECT compact, changed_at FROM result_format"
    "            WHERE id = 1 FOR UPDATE)," OLD_RELAYS ","
    " up AS (UPDATE result_format r"
    "           SET compact = $2::boolean, changed_at = now()"
    "          FROM f, old"
    "         WHERE r.id = 1 AND f.compact <> $2::boolean"
    "           AND (NOT $2::boolean OR old.n = 0)"
    "        RETURNING r.compact, r.changed_at)"
    " SELECT coalesce(up.compact, f.compact),"
    "        coalesce(up.changed_at, f.changed_at), old.n,"
    "        up.compact IS NOT NULL"
    "   FROM f CROSS JOIN old LEFT JOIN up ON true";

int store_result_format(const char *conninfo, int set,
                        struct store_result_format *out, char *errstr,
                        size_t errstr_size)
{
        /* $1 the old relays' name; $2 the value to set (not in a read) */
        const char *v[2] = { STORE_RELAY_APP_PAYLOAD_ONLY,
                             set ? "true" : "false" };
        char row[4][40];
        int rc;

        memset(out, 0, sizeof(*out));
        memset(row, 0, sizeof(row));
        rc = store_one_row(conninfo, "chargeonce compact-results",
                           "compact results", set < 0 ? read_sql : set_sql,
                           set < 0 ? 1 : 2, v, row, 4, errstr, errstr_size);
        if (rc != STORE_OK)
                return rc;
        out->compact = strcmp(row[0], "t") == 0;
        snprintf(out->changed_at, sizeof(out->changed_at), "%s", row[1]);
        out->payload_only_relays = strtoll(row[2], NULL, 10);
        out->changed             = strcmp(row[3], "t") == 0;
        return STORE_OK;
}
