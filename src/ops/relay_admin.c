/* SPDX-License-Identifier: Apache-2.0 */
/*
 * ops/relay_admin: the relay's operator commands (relay_admin.h), on the
 * SQL of store/relay_sql.c and its read-only counts in
 * store/relay_preview.c.
 */
#include "ops/relay_admin.h"
#include "store/relay_preview.h"
#include "store/relay_sql.h"
#include "store/result_format.h"
#include "util/log.h"

#include <inttypes.h>
#include <stdio.h>
#include <string.h>

/* What sel selects, for a person: the key masked as in the logs. */
static void describe(const struct ops_republish *sel, char *out, size_t n)
{
        char key[LOG_MASKED_KEY_SIZE + 80] = "";

        if (sel->message_key) {
                const char *slash = strchr(sel->message_key, '/');
                char m[LOG_MASKED_KEY_SIZE];

                log_mask_key(slash + 1, strlen(slash + 1), m, sizeof(m));
                snprintf(key, sizeof(key), " of key %.*s/%s",
                         (int)(slash - sel->message_key) > 64
                             ? 64
                             : (int)(slash - sel->message_key),
                         sel->message_key, m);
        }
        snprintf(
            out, n, "%s%s%s%s%s%s%s", sel->since ? " published since " : "",
            sel->since ? sel->since : "", sel->until ? " until " : "",
            sel->until ? sel->until : "", sel->event_id ? " of event " : "",
            sel->event_id ? sel->event_id : "", key);
}

int ops_relay_republish(const char *conninfo, const struct ops_republish *sel,
                        bool dry_run)
{
        struct store_republish q = { sel->since, sel->until, sel->event_id,
                                     sel->message_key };
        char err[1024], what[512], first[40], last[40];
        int64_t n = 0;

        describe(sel, what, sizeof(what));
        if (dry_run) {
                if (store_relay_republish_count(
                        conninfo, &q, &n, first, sizeof(first), last,
                        sizeof(last), err, sizeof(err)) != STORE_OK) {
                        fprintf(stderr, "chargeonce relay: %s\n", err);
                        return 1;
                }
                printf("republish --dry-run: %" PRId64
                       " row(s)%s would be marked unpublished",
                       n, what);
                if (n > 0)
                        printf(" (published from %s to %s)", first, last);
                printf(";\nthe running relays would publish them again with "
                       "the same event ids.\nNothing was changed; run it "
                       "again without --dry-run to do it.\n");
                return 0;
        }
        if (store_relay_republish(conninfo, &q, &n, err, sizeof(err)) !=
            STORE_OK) {
                fprintf(stderr, "chargeonce relay: %s\n", err);
                return 1;
        }
        printf("republish: %" PRId64 " row(s)%s marked unpublished; running "
               "relays publish them again\n",
               n, what);
        return 0;
}

int ops_relay_unpark(const char *conninfo, int64_t id, bool dry_run)
{
        char err[1024], which[48];
        int64_t n = 0;

        if (id)
                snprintf(which, sizeof(which), "outbox row %" PRId64, id);
        else
                snprintf(which, sizeof(which), "every parked row");
        if (dry_run) {
                if (store_relay_unpark_count(conninfo, id, &n, err,
                                             sizeof(err)) != STORE_OK) {
                        fprintf(stderr, "chargeonce relay: %s\n", err);
                        return 1;
                }
                printf("unpark --dry-run: %" PRId64 " row(s) (%s) would be "
                       "unparked; nothing was changed\n",
                       n, which);
                return 0;
        }
        if (store_relay_unpark(conninfo, id, &n, err, sizeof(err)) !=
            STORE_OK) {
                fprintf(stderr, "chargeonce relay: %s\n", err);
                return 1;
        }
        printf("unpark: %" PRId64 " row(s) (%s) unparked; running relays "
               "publish them\n",
               n, which);
        return 0;
}

int ops_relay_compact(const char *conninfo, int on, bool dry_run)
{
        struct store_result_format f;
        const char *want = on ? "on" : "off";
        char err[1024];
        bool beside_old;

        if (store_result_format(conninfo, dry_run ? -1 : on, &f, err,
                                sizeof(err)) != STORE_OK) {
                fprintf(stderr, "chargeonce relay: %s\n", err);
                return 1;
        }
        if (dry_run || !f.changed)
                printf("compact results: %s (since %s)\n",
                       f.compact ? "on" : "off", f.changed_at);
        /* on beside them: refused (or, already on, dangerous) */
        beside_old = f.payload_only_relays > 0 && (f.compact || on);
        if (beside_old)
                fprintf(stderr,
                        "chargeonce relay: %" PRId64 " relay connection(s) "
                        "of a release before migration 0028 (application_name "
                        "'%s') %s connected to this database: such a relay "
                        "publishes a compact result as an empty message. %s "
                        "(docs/upgrading.md, \"Compact results\")\n",
                        f.payload_only_relays, STORE_RELAY_APP_PAYLOAD_ONLY,
                        f.payload_only_relays == 1 ? "is" : "are",
                        f.compact ? "Compact results are ON: stop those "
                                    "relays, or turn them off "
                                    "(--compact-results off)."
                        : dry_run ? "--compact-results on would be refused; "
                                    "upgrade them first."
                                  : "Nothing was changed; upgrade them first.");
        if (dry_run) {
                printf("--compact-results %s would %s; nothing was changed\n",
                       want,
                       f.compact == (on != 0) ? "change nothing"
                       : on ? "store the payments' own results compact from "
                              "then on"
                            : "store every result whole again");
                return on && beside_old;
        }
        if (f.changed)
                printf("compact results: %s from now (%s)%s\n", want,
                       f.changed_at,
                       on ? ""
                          : "; rows already stored compact stay so: "
                            "only this release's relays publish them");
        else if (f.compact == (on != 0))
                printf("compact results: already %s; nothing was changed\n",
                       want);
        return on && beside_old;
}
