/* SPDX-License-Identifier: Apache-2.0 */
/*
 * cmd/review: `chargeonce review` (docs/operations.md, "The review
 * queue"): the usage, the arguments of each subcommand (checked before
 * anything is contacted: exit 2 naming the argument) and the wiring; what
 * each does is ops/review*.c's (ops/review.h):
 *
 *   review list [--json] [--limit N]      payments in review, oldest first
 *   review show PAYMENT_ID [--json]       one payment, evidence, results
 *   review resolve PAYMENT_ID --as succeeded|failed --evidence TEXT
 *          [--provider-charge-id ID] [--without-gateway] [--dry-run] [--json]
 *   review contradictions [--json] [--limit N]
 *   review acknowledge WEBHOOK_ID --evidence TEXT [--json]
 *
 * Exit: 0 done; 1 refused or a runtime failure (the message says which);
 * 2 a usage error naming the argument.
 */
#include "cmd/cmd.h"
#include "cmd/opts.h"
#include "gateway/client.h"
#include "ops/review.h"
#include "util/config.h"
#include "util/utf8.h"
#include "util/uuid.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define REVIEW_LIST_DEFAULT 50
#define REVIEW_LIST_MAX     10000
#define ACK_ID_MAX          255

static int usage(FILE *out, int rc)
{
        fprintf(out,
                "usage: chargeonce review list [--json] [--limit N]\n"
                "       chargeonce review show PAYMENT_ID [--json]\n"
                "       chargeonce review resolve PAYMENT_ID --as "
                "succeeded|failed --evidence TEXT\n"
                "                 [--provider-charge-id ID] "
                "[--without-gateway] [--dry-run] [--json]\n"
                "       chargeonce review contradictions [--json] "
                "[--limit N]\n"
                "       chargeonce review acknowledge WEBHOOK_ID --evidence "
                "TEXT [--json]\n"
                "\n"
                "The payments in review (an outcome nobody could settle): "
                "list them (oldest\nfirst, keys masked), show one with its "
                "evidence and results, or resolve one.\nresolve asks the "
                "gateway (GET /v1/charges?reference=) first and refuses a\n"
                "decision that contradicts its answer; it then finishes the "
                "payment in one\ntransaction: status, ledger posting for a "
                "success, the key's stored outcome,\none new result with "
                "\"resolves_review\": true and an evidence row of kind\n"
                "'operator' (who: worker.id or $USER@host; why: "
                "--evidence).\n"
                "contradictions lists the open webhook contradictions "
                "(a webhook that disagreed\nwith a stored payment; never "
                "applied); acknowledge closes one once it was\nsettled "
                "with the gateway (who, when and --evidence are kept; the "
                "row stays).\n"
                "\n"
                "  --limit N            at most N payments (default %d)\n"
                "  --json               one JSON document on stdout\n"
                "  --as S               succeeded or failed\n"
                "  --evidence TEXT      why (1..1000 bytes of UTF-8, no card "
                "number): stored\n"
                "  --provider-charge-id the gateway's charge id (succeeded "
                "only; must match\n"
                "                       the gateway's; required past "
                "gateway.key_retention)\n"
                "  --without-gateway    decide when the gateway cannot be "
                "asked (recorded)\n"
                "  --dry-run            resolve: ask the gateway and judge, "
                "write nothing,\n"
                "                       say what would be written\n"
                "\n"
                "exit: 0 done; 1 refused (a contradiction with the gateway, "
                "the gateway not\nanswering, the payment not in review, a "
                "webhook not an open contradiction;\nnothing written) or a "
                "runtime failure; 2 usage error.\n",
                REVIEW_LIST_DEFAULT);
        return rc;
}

/* worker.id, else $USER@host: who decided, for the evidence row. */
static void actor_of(const struct settings *st, char *out, size_t outsz)
{
        const char *wid  = st->worker_id;
        const char *user = getenv("USER");
        char host[64];

        if (wid && *wid) {
                snprintf(out, outsz, "%s", wid);
                return;
        }
        if (!user || !*user)
                user = getenv("LOGNAME");
        if (gethostname(host, sizeof(host)) != 0)
                snprintf(host, sizeof(host), "host");
        host[sizeof(host) - 1] = '\0';
        snprintf(out, outsz, "%s@%s", user && *user ? user : "unknown", host);
        if (!utf8_valid(out, strlen(out)))
                snprintf(out, outsz, "unknown@host");
}

/* A --limit value in 1..REVIEW_LIST_MAX into *out; 0, or 2 (usage). */
static int parse_limit(const char *cmd, const char *s, size_t *out)
{
        char *end = NULL;
        unsigned long long v;

        if (!s)
                return cmd_usage_error(cmd, "--limit needs N");
        errno = 0;
        v     = strtoull(s, &end, 10);
        if (errno || *end || end == s || v < 1 || v > REVIEW_LIST_MAX ||
            s[0] == '-')
                return cmd_usage_error(cmd,
                                       "--limit: \"%s\" is not a number in "
                                       "1..%d",
                                       s, REVIEW_LIST_MAX);
        *out = (size_t)v;
        return 0;
}

/* list and contradictions: [--json] [--limit N]. 0 or 2. */
static int parse_list(const char *cmd, int argc, char **argv, size_t *limit,
                      bool *json)
{
        *limit = REVIEW_LIST_DEFAULT;
        *json  = false;
        for (int i = 1; i < argc; i++) {
                if (!strcmp(argv[i], "--json"))
                        *json = true;
                else if (!strcmp(argv[i], "--limit")) {
                        if (parse_limit(cmd, i + 1 < argc ? argv[++i] : NULL,
                                        limit) != 0)
                                return 2;
                } else
                        return cmd_usage_error(cmd, "unexpected argument %s",
                                               argv[i]);
        }
        return 0;
}

static int check_evidence(const char *cmd, const char *evidence)
{
        char why[256];

        if (ops_review_evidence_check(evidence, why, sizeof(why)) < 0)
                return cmd_usage_error(cmd, "%s", why);
        return 0;
}

/* `review show PAYMENT_ID [--json]`. */
static int show(const struct ops_review_opts *o, int argc, char **argv)
{
        const char *id = NULL;
        bool json      = false;

        for (int i = 1; i < argc; i++) {
                if (!strcmp(argv[i], "--json"))
                        json = true;
                else if (argv[i][0] == '-' || id)
                        return cmd_usage_error(
                            "review show", "unexpected argument %s", argv[i]);
                else
                        id = argv[i];
        }
        if (!id)
                return cmd_usage_error("review show", "PAYMENT_ID is missing");
        if (!uuid_valid(id, strlen(id)))
                return cmd_usage_error("review show",
                                       "PAYMENT_ID: \"%s\" is not a UUID", id);
        return ops_review_show(o, id, json);
}

/* `review resolve PAYMENT_ID --as S --evidence TEXT ...`. */
static int resolve(const struct ops_review_opts *o, int argc, char **argv)
{
        static const char cmd[] = "review resolve";
        struct ops_review_resolve r;
        const char *as = NULL;

        memset(&r, 0, sizeof(r));
        for (int i = 1; i < argc; i++) {
                const char *s     = argv[i];
                const char **slot = NULL;

                if (!strcmp(s, "--as"))
                        slot = &as;
                else if (!strcmp(s, "--evidence"))
                        slot = &r.evidence;
                else if (!strcmp(s, "--provider-charge-id"))
                        slot = &r.charge_id;
                else if (!strcmp(s, "--without-gateway"))
                        r.without_gateway = true;
                else if (!strcmp(s, "--dry-run"))
                        r.dry_run = true;
                else if (!strcmp(s, "--json"))
                        r.json = true;
                else if (s[0] == '-' || r.payment_id)
                        return cmd_usage_error(cmd, "unexpected argument %s",
                                               s);
                else
                        r.payment_id = s;
                if (slot) {
                        if (++i == argc)
                                return cmd_usage_error(cmd, "%s needs a value",
                                                       s);
                        *slot = argv[i];
                }
        }
        if (!r.payment_id)
                return cmd_usage_error(cmd, "PAYMENT_ID is missing");
        if (!uuid_valid(r.payment_id, strlen(r.payment_id)))
                return cmd_usage_error(cmd, "PAYMENT_ID: \"%s\" is not a UUID",
                                       r.payment_id);
        if (!as)
                return cmd_usage_error(cmd, "--as is missing (succeeded or "
                                            "failed)");
        if (strcmp(as, "succeeded") && strcmp(as, "failed"))
                return cmd_usage_error(cmd,
                                       "--as: \"%s\" is not succeeded or "
                                       "failed",
                                       as);
        r.as_succeeded = !strcmp(as, "succeeded");
        if (check_evidence(cmd, r.evidence) != 0)
                return 2;
        if (r.charge_id &&
            !gateway_ident_valid(r.charge_id, strlen(r.charge_id),
                                 GW_CHARGE_ID_SIZE - 1))
                return cmd_usage_error(cmd,
                                       "--provider-charge-id: not a charge "
                                       "id (1..%d printable characters, no "
                                       "space)",
                                       GW_CHARGE_ID_SIZE - 1);
        if (r.charge_id && !r.as_succeeded)
                return cmd_usage_error(cmd, "--provider-charge-id goes with "
                                            "--as succeeded only");
        return ops_review_resolve(o, &r);
}

/* `review acknowledge WEBHOOK_ID --evidence TEXT [--json]`. */
static int acknowledge(const struct ops_review_opts *o, int argc, char **argv)
{
        static const char cmd[] = "review acknowledge";
        const char *id = NULL, *evidence = NULL;
        bool json = false;

        for (int i = 1; i < argc; i++) {
                if (!strcmp(argv[i], "--json"))
                        json = true;
                else if (!strcmp(argv[i], "--evidence")) {
                        if (++i == argc)
                                return cmd_usage_error(cmd, "--evidence "
                                                            "needs a value");
                        evidence = argv[i];
                } else if (argv[i][0] == '-' || id)
                        return cmd_usage_error(cmd, "unexpected argument %s",
                                               argv[i]);
                else
                        id = argv[i];
        }
        if (!id)
                return cmd_usage_error(cmd, "WEBHOOK_ID is missing");
        if (strlen(id) > ACK_ID_MAX || !utf8_valid(id, strlen(id)))
                return cmd_usage_error(cmd,
                                       "WEBHOOK_ID: not a webhook id (1..%d "
                                       "bytes of UTF-8)",
                                       ACK_ID_MAX);
        if (check_evidence(cmd, evidence) != 0)
                return 2;
        return ops_review_acknowledge(o, id, evidence, json);
}

/* The subcommand, its arguments checked, run with o. */
static int dispatch(const struct ops_review_opts *o, int argc, char **argv)
{
        size_t limit;
        bool json;

        if (!strcmp(argv[0], "list"))
                return parse_list("review list", argc, argv, &limit, &json)
                           ? 2
                           : ops_review_list(o, limit, json);
        if (!strcmp(argv[0], "show"))
                return show(o, argc, argv);
        if (!strcmp(argv[0], "resolve"))
                return resolve(o, argc, argv);
        if (!strcmp(argv[0], "contradictions"))
                return parse_list("review contradictions", argc, argv, &limit,
                                  &json)
                           ? 2
                           : ops_review_contradictions(o, limit, json);
        if (!strcmp(argv[0], "acknowledge"))
                return acknowledge(o, argc, argv);
        return cmd_usage_error("review",
                               "unknown subcommand %s (list, show, "
                               "resolve, contradictions or acknowledge)",
                               argv[0]);
}

int cmd_review(struct config *cfg, int argc, char **argv)
{
        const struct settings *st = config_settings(cfg);
        struct ops_review_opts ro;
        struct cmd_opts o;
        char actor[192];
        int rc;

        if (argc < 2)
                return cmd_usage_error("review",
                                       "give list, show, resolve, "
                                       "contradictions or acknowledge (see "
                                       "review --help)");
        for (int i = 1; i < argc; i++)
                if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h"))
                        return usage(stdout, 0);
        cmd_opts_fill(&o, cfg);
        actor_of(st, actor, sizeof(actor));
        memset(&ro, 0, sizeof(ro));
        ro.conninfo         = st->db_conninfo;
        ro.gateway          = &o.gateway;
        ro.key_retention_ms = st->gateway_key_retention_ms;
        ro.actor            = actor;
        rc                  = dispatch(&ro, argc - 1, argv + 1);
        cmd_opts_free(&o);
        return rc;
}
