/* SPDX-License-Identifier: Apache-2.0 */
/*
 * cmd/audit: `chargeonce audit [--full]` lists every row of the database's
 * invariant_violations view over whole tables (the daemons' periodic audit
 * reads only what was written since its last step: store/audit.h;
 * `--incremental` runs it once) (double
 * postings, unbalanced ledger entries, results that disagree with their
 * payment, ...) and every outbox row the relay parked (kind outbox_parked, view
 * outbox_parked of 0006: a result that can never be produced as it is) and
 * every webhook that contradicted a stored payment (kind webhook_contradiction,
 * view webhook_contradictions of 0007: recorded, never applied) as JSON lines
 * on stdout. Exit 0: none; 1: findings (or the database could not be
 * read). A contradiction is a finding like a parked row: a person must
 * look (and talk to the PSP); it stays listed, newest first.
 * Read-only: never repairs anything (`chargeonce relay --unpark` does).
 */
#include "cmd/cmd.h"
#include "store/audit.h"
#include "store/relay_sql.h"
#include "store/store.h"
#include "store/webhook.h"
#include "util/config.h"
#include "util/jsonesc.h"
#include "util/log.h"

#include <inttypes.h>
#include <stdio.h>
#include <string.h>

static void put_str(const char *name, const char *v, bool comma)
{
        char esc[1024];
        if (!v || !*v) {
                printf("%s\"%s\":null", comma ? "," : "", name);
                return;
        }
        json_escape(v, strlen(v), esc, sizeof(esc));
        printf("%s\"%s\":\"%s\"", comma ? "," : "", name, esc);
}

/* Contradictions listed at most (newest first): they are never removed. */
#define AUDIT_CONTRADICTIONS_MAX 1000

/* The same fields as a violation; the webhook's facts in the detail. */
static void put_contradiction(const struct store_webhook_contradiction *c)
{
        char detail[1024];

        snprintf(detail, sizeof(detail),
                 "webhook %s (%s, charge %s, %" PRId64 " %s) received at %s "
                 "for a payment %s: %s",
                 c->webhook_id ? c->webhook_id : "?",
                 c->event_type ? c->event_type : "?",
                 c->provider_charge_id ? c->provider_charge_id : "?", c->amount,
                 c->currency, c->received_at ? c->received_at : "?",
                 c->previous_status ? c->previous_status : "?",
                 c->detail ? c->detail : "no reason");
        putchar('{');
        put_str("kind", "webhook_contradiction", false);
        put_str("payment_id", c->payment_id, true);
        put_str("tenant_id", NULL, true);
        put_str("detail", detail, true);
        printf("}\n");
}

static void put_violation(const struct store_violation *v)
{
        putchar('{');
        put_str("kind", v->kind, false);
        put_str("payment_id", v->payment_id, true);
        put_str("tenant_id", v->tenant_id, true);
        if (v->ledger_txn_id)
                printf(",\"ledger_txn_id\":%" PRId64, v->ledger_txn_id);
        if (v->outbox_id)
                printf(",\"outbox_id\":%" PRId64, v->outbox_id);
        put_str("detail", v->detail, true);
        printf("}\n");
}


/*
 * --incremental: what the daemons' periodic audit does at a tick, once,
 * under its lock (store/audit.h): steps until it has read everything
 * written since its cursor, then the last step's violations. Refused
 * (exit 1) while a daemon is the auditor.
 */
static int audit_incremental(struct config *cfg, struct log_ctx *lc)
{
        struct store_violation *v    = NULL;
        struct store_audit_info info = { .rows = 0 };
        int64_t rows = 0, steps = 0, fresh = 0;
        struct store *st;
        bool lead = false;
        size_t n  = 0;
        char err[512];
        int rc;

        if (!(st = store_connect_admin(config_settings(cfg)->db_conninfo, err,
                                       sizeof(err)))) {
                log_error(lc, "%s", err);
                return 1;
        }
        rc = store_audit_lead(st, 0, &lead, err, sizeof(err));
        if (rc == STORE_OK && !lead) {
                log_error(lc, "another process is the database's auditor "
                              "(advisory lock " STORE_AUDIT_LOCK_KEY
                              "): its chargeonce_invariant_violations says "
                              "what it found; `chargeonce audit --full` "
                              "reads everything");
                store_destroy(st);
                return 1;
        }
        while (rc == STORE_OK) {
                store_violations_free(v, n);
                rc = store_audit_step(st, STORE_AUDIT_STEP_ROWS, &v, &n, &info,
                                      err, sizeof(err));
                if (rc != STORE_OK)
                        break;
                rows += info.rows;
                fresh += info.fresh;
                steps++;
                if (info.started)
                        log_info(lc, "no audit cursor yet: it starts at the "
                                     "ends of the outbox, the ledger and the "
                                     "evidence now; what was written before "
                                     "is `chargeonce audit --full`'s");
                else if (!info.behind)
                        break;
        }
        if (rc != STORE_OK) {
                log_error(lc, "%s", err);
                store_destroy(st);
                return 1;
        }
        for (size_t i = 0; i < n; i++)
                put_violation(&v[i]);
        if (n)
                log_error(lc,
                          "%zu invariant violation(s) in the rows written "
                          "since the audit cursor and the ones found before "
                          "(%" PRId64 " row(s) read in %" PRId64 " step(s), "
                          "%" PRId64 " payment(s) checked from them alone)",
                          n, rows, steps, fresh);
        else
                log_info(lc,
                         "no invariant violation in the rows written since "
                         "the audit cursor (%" PRId64 " row(s) read in %" PRId64
                         " step(s), %" PRId64
                         " payment(s) checked from them alone)",
                         rows, steps, fresh);
        store_violations_free(v, n);
        store_destroy(st);
        return n ? 1 : 0;
}

int cmd_audit(struct config *cfg, int argc, char **argv)
{
        struct store *st;
        struct store_violation *v             = NULL;
        struct store_relay_parked *p          = NULL;
        struct store_webhook_contradiction *w = NULL;
        size_t n = 0, np = 0, nw = 0;
        char err[512];
        struct log_ctx lc = LOG_CTX_INIT;
        bool incremental  = false;

        lc.component = "audit";
        for (int i = 1; i < argc; i++) {
                if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) {
                        printf(
                            "usage: chargeonce audit [--full | --incremental]\n"
                            "--full (the default): lists the invariant "
                            "violations of the whole database (every\n"
                            "row of every table) and the outbox rows the "
                            "relay parked (kind outbox_parked)\n"
                            "and the webhooks that contradicted a payment "
                            "(kind webhook_contradiction)\n"
                            "as JSON lines.\n"
                            "--incremental: what the daemons' periodic audit "
                            "does, once: the violations\n"
                            "of the payments named by rows written since its "
                            "cursor, and of those it\n"
                            "found before (refused while a daemon is the "
                            "auditor).\n"
                            "Exit 0 when there are none, 1 otherwise.\n");
                        return 0;
                }
                if (!strcmp(argv[i], "--incremental"))
                        incremental = true;
                else if (strcmp(argv[i], "--full") != 0)
                        return cmd_usage_error(
                            "audit", "unexpected argument %s", argv[i]);
        }
        if (incremental && argc > 2)
                return cmd_usage_error("audit",
                                       "--full and --incremental together");
        if (incremental)
                return audit_incremental(cfg, &lc);
        if (!(st = store_connect_admin(config_settings(cfg)->db_conninfo, err,
                                       sizeof(err)))) {
                log_error(&lc, "%s", err);
                return 1;
        }
        if (store_invariant_violations(st, &v, &n, err, sizeof(err)) < 0) {
                log_error(&lc, "%s", err);
                store_destroy(st);
                return 1;
        }
        if (store_relay_parked_list(config_settings(cfg)->db_conninfo, &p, &np,
                                    err, sizeof(err)) != STORE_OK) {
                log_error(&lc, "%s", err);
                store_violations_free(v, n);
                store_destroy(st);
                return 1;
        }
        if (store_webhook_contradictions(st, AUDIT_CONTRADICTIONS_MAX, &w, &nw,
                                         err, sizeof(err)) != STORE_OK) {
                log_error(&lc, "%s", err);
                store_violations_free(v, n);
                store_relay_parked_free(p, np);
                store_destroy(st);
                return 1;
        }
        for (size_t i = 0; i < n; i++)
                put_violation(&v[i]);
        /* the same fields as a violation; the key is never shown (the
         * outbox id and event id lead to it with `chargeonce inspect`) */
        for (size_t i = 0; i < np; i++) {
                char detail[1024];
                snprintf(detail, sizeof(detail),
                         "result %s (status %s, %" PRId64 " payload bytes, "
                         "%" PRId64 " produce attempt(s)) parked at %s: %s",
                         p[i].event_id ? p[i].event_id : "?",
                         p[i].status ? p[i].status : "?", p[i].payload_bytes,
                         p[i].attempts, p[i].parked_at ? p[i].parked_at : "?",
                         p[i].reason ? p[i].reason : "no reason");
                putchar('{');
                put_str("kind", "outbox_parked", false);
                put_str("payment_id", p[i].payment_id, true);
                put_str("tenant_id", p[i].tenant_id, true);
                printf(",\"outbox_id\":%" PRId64, p[i].id);
                put_str("detail", detail, true);
                printf("}\n");
        }
        for (size_t i = 0; i < nw; i++)
                put_contradiction(&w[i]);
        if (n)
                log_error(&lc, "%zu invariant violation(s)", n);
        if (nw)
                log_error(&lc,
                          "%zu webhook contradiction(s)%s: recorded, never "
                          "applied; check each payment with the PSP",
                          nw,
                          nw == AUDIT_CONTRADICTIONS_MAX ? " (newest)" : "");
        if (np)
                log_error(&lc,
                          "%zu parked outbox row(s): fix the cause, then "
                          "`chargeonce relay --unpark ID|all`",
                          np);
        if (!n && !np && !nw)
                log_info(&lc, "no invariant violation");
        store_violations_free(v, n);
        store_relay_parked_free(p, np);
        store_webhook_contradictions_free(w, nw);
        store_destroy(st);
        return n || np || nw ? 1 : 0;
}
