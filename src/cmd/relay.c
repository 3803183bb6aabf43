/* SPDX-License-Identifier: Apache-2.0 */
/*
 * cmd/relay: `chargeonce relay`. Wiring only: arguments, signals and the
 * relay (src/relay). The first SIGTERM/SIGINT drains (in-flight
 * deliveries finish and are marked, exit 0); a second one exits at once,
 * which is safe: unmarked rows are published again by the next relay.
 *
 *   chargeonce relay                                  relay until stopped
 *   chargeonce relay --republish-since TIME [--until TIME] [--dry-run]
 *   chargeonce relay --republish-intent EVENT_ID [--dry-run]
 *   chargeonce relay --republish-key TENANT/KEY [--dry-run]
 *   chargeonce relay --unpark OUTBOX_ID|all [--dry-run]
 *   chargeonce relay --compact-results on|off [--dry-run]
 *
 * The --republish-* forms open again the matching retained published
 * rows (running relays publish them again, same event ids) and exit. TIME
 * is RFC 3339 or a duration meaning that long ago ("2h"). --unpark clears
 * the park of one parked row (or of all) once its cause is fixed: the
 * running relays publish it at their next poll, then exit.
 * --compact-results on stores the payments' own results compact from then
 * on (0028; refused while a relay of an earlier release is connected),
 * off whole again. With --dry-run each says what it would change and
 * changes nothing (ops/relay_admin.h).
 */
#include "cmd/cmd.h"
#include "cmd/engine.h"
#include "cmd/opts.h"
#include "cmd/serve.h"
#include "util/metrics.h"
#include "ops/relay_admin.h"
#include "relay/relay.h"
#include "util/failpoint.h"
#include "util/log.h"
#include "util/timeutil.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void usage(const struct relay_opts *o)
{
        printf("usage: chargeonce relay\n"
               "       chargeonce relay --republish-since TIME "
               "[--until TIME] [--dry-run]\n"
               "       chargeonce relay --republish-intent EVENT_ID "
               "[--dry-run]\n"
               "       chargeonce relay --republish-key TENANT/KEY "
               "[--dry-run]\n"
               "       chargeonce relay --unpark OUTBOX_ID|all [--dry-run]\n"
               "       chargeonce relay --compact-results on|off "
               "[--dry-run]\n"
               "Publishes the outbox to %s. SIGTERM drains and exits 0; a "
               "second SIGTERM exits at once.\n"
               "--republish-*: mark the matching published rows that are "
               "still retained\n(relay.retention) unpublished, so that the "
               "running relays publish them again\nwith the same event ids; "
               "then exit. The time range applies to when the rows\nwere "
               "published. TIME: RFC 3339 (2026-11-29T10:00:00Z) or a "
               "duration ago (2h).\n"
               "--unpark: a parked row (one that could never be produced, "
               "listed by\n`chargeonce audit` as outbox_parked) is "
               "published again by the running relays,\nafter the later "
               "rows of its key; fix the cause first (e.g. the topic's\n"
               "max.message.bytes). Then exit.\n"
               "--compact-results on: store each payment's own results "
               "without the members\nits outbox row holds in columns "
               "(less WAL); refused while a relay of a\nrelease before "
               "migration 0028 is connected. off: store them whole "
               "again.\n"
               "--dry-run: count the rows --republish-* or --unpark would "
               "change, or say\nwhat --compact-results would do; change "
               "nothing.\n",
               o->topic);
}

/* RFC 3339 as given, or "<duration> ago" formatted into buf. */
static const char *parse_time(const char *arg, char *buf, size_t bufsz)
{
        int64_t ms;

        if (rfc3339_valid(arg, strlen(arg)))
                return arg;
        if (duration_parse(arg, &ms)) {
                rfc3339_format(time_wall_ms() - ms, buf, bufsz);
                return buf;
        }
        return NULL;
}

/* The id of `--unpark ID|all` (0: all) into *id: 0, or 2 (usage). */
static int unpark_id(const char *arg, int64_t *id)
{
        char *end = NULL;
        long long v;

        *id = 0;
        if (!strcmp(arg, "all"))
                return 0;
        errno = 0;
        v     = strtoll(arg, &end, 10);
        if (errno || !end || *end || v <= 0)
                return cmd_usage_error("relay", "--unpark needs an outbox id "
                                                "or \"all\"");
        *id = (int64_t)v;
        return 0;
}

/* The arguments: --help, --unpark, --republish-* or nothing. */
static int relay_args(const struct cmd_opts *co, int argc, char **argv)
{
        const struct relay_opts *o = &co->relay;
        struct ops_republish sel   = { NULL, NULL, NULL, NULL };
        const char *unpark         = NULL;
        const char *compact        = NULL;
        char since[40], until[40];
        bool republish = false, dry_run = false;

        for (int i = 1; i < argc; i++) {
                const char *a = argv[i];
                const char *v = i + 1 < argc ? argv[i + 1] : NULL;

                if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
                        usage(o);
                        return 0;
                }
                if (!strcmp(a, "--dry-run")) {
                        dry_run = true;
                        continue;
                }
                if (!strcmp(a, "--unpark")) {
                        if (!v || !*v)
                                return cmd_usage_error("relay",
                                                       "--unpark needs a "
                                                       "value");
                        unpark = v;
                        i++;
                        continue;
                }
                if (!strcmp(a, "--compact-results")) {
                        if (!v || (strcmp(v, "on") && strcmp(v, "off")))
                                return cmd_usage_error("relay",
                                                       "--compact-results "
                                                       "needs on or off");
                        compact = v;
                        i++;
                        continue;
                }
                if (strcmp(a, "--republish-since") && strcmp(a, "--until") &&
                    strcmp(a, "--republish-intent") &&
                    strcmp(a, "--republish-key"))
                        return cmd_usage_error("relay",
                                               "unexpected argument %s", a);
                if (!v || !*v)
                        return cmd_usage_error("relay", "%s needs a value", a);
                i++;
                republish = true;
                if (!strcmp(a, "--republish-since")) {
                        if (!(sel.since = parse_time(v, since, sizeof(since))))
                                return cmd_usage_error(
                                    "relay",
                                    "--republish-since: \"%s\" is "
                                    "not RFC 3339 or a duration",
                                    v);
                } else if (!strcmp(a, "--until")) {
                        if (!(sel.until = parse_time(v, until, sizeof(until))))
                                return cmd_usage_error(
                                    "relay",
                                    "--until: \"%s\" is not RFC "
                                    "3339 or a duration",
                                    v);
                } else if (!strcmp(a, "--republish-intent")) {
                        sel.event_id = v;
                } else {
                        if (!strchr(v, '/'))
                                return cmd_usage_error("relay",
                                                       "--republish-key needs "
                                                       "TENANT/KEY");
                        sel.message_key = v;
                }
        }
        if (compact) {
                if (republish || unpark)
                        return cmd_usage_error("relay",
                                               "--compact-results takes no "
                                               "other argument but --dry-run");
                return ops_relay_compact(o->conninfo, !strcmp(compact, "on"),
                                         dry_run);
        }
        if (unpark) {
                int64_t id;

                if (republish)
                        return cmd_usage_error("relay",
                                               "--unpark takes no "
                                               "other argument but --dry-run");
                if (unpark_id(unpark, &id) != 0)
                        return 2;
                return ops_relay_unpark(o->conninfo, id, dry_run);
        }
        if (republish) {
                if (!sel.since && !sel.event_id && !sel.message_key)
                        return cmd_usage_error(
                            "relay", "--until needs --republish-since");
                return ops_relay_republish(o->conninfo, &sel, dry_run);
        }
        if (dry_run)
                return cmd_usage_error("relay", "--dry-run goes with "
                                                "--republish-*, --unpark or "
                                                "--compact-results");
        return cmd_serve_beside(&cmd_relay_kind, o, &co->http,
                                co->http_enabled);
}

int cmd_relay(struct config *cfg, int argc, char **argv)
{
        struct cmd_opts o;
        int rc;

        cmd_opts_fill(&o, cfg);
        o.http.webhooks = HTTP_WEBHOOKS_OFF;
        /* no consumer here: no "joined" gauge for an alert to read */
        metrics_hide(o.metrics, METRIC_CONSUMER_JOINED);
        metrics_hide(o.metrics, METRIC_CONSUMER_REJOINS);
        rc = relay_args(&o, argc, argv);
        cmd_opts_free(&o);
        return rc;
}
