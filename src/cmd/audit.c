/*
 * cmd/audit: `chargeonce audit` lists every row of the database's
 * invariant_violations view (double postings, unbalanced ledger entries,
 * results that disagree with their payment, ...) and every outbox row the
 * relay parked (kind outbox_parked, view outbox_parked of 0006: a result
 * that can never be produced as it is) as JSON lines on stdout.
 * Exit 0: none; 1: findings (or the database could not be read).
 * Read-only: never repairs anything (`chargeonce relay --unpark` does).
 */
#include "cmd/cmd.h"
#include "store/relay_sql.h"
#include "store/store.h"
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

int cmd_audit(struct config *cfg, int argc, char **argv)
{
        struct store *st;
        struct store_violation *v    = NULL;
        struct store_relay_parked *p = NULL;
        size_t n = 0, np = 0;
        char err[512];
        struct log_ctx lc = LOG_CTX_INIT;

        lc.component = "audit";
        if (argc > 1) {
                if (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h")) {
                        printf("usage: chargeonce audit\n"
                               "Lists the invariant violations of the "
                               "database and the outbox rows the relay\n"
                               "parked (kind outbox_parked) as JSON lines. "
                               "Exit 0 when there are none, 1 otherwise.\n");
                        return 0;
                }
                return cmd_usage_error("audit", "unexpected argument %s",
                                       argv[1]);
        }
        if (!(st = store_connect(config_str(cfg, "db.conninfo"), err,
                                 sizeof(err)))) {
                log_error(&lc, "%s", err);
                return 1;
        }
        if (store_invariant_violations(st, &v, &n, err, sizeof(err)) < 0) {
                log_error(&lc, "%s", err);
                store_destroy(st);
                return 1;
        }
        if (store_relay_parked_list(config_str(cfg, "db.conninfo"), &p, &np,
                                    err, sizeof(err)) != STORE_OK) {
                log_error(&lc, "%s", err);
                store_violations_free(v, n);
                store_destroy(st);
                return 1;
        }
        for (size_t i = 0; i < n; i++) {
                putchar('{');
                put_str("kind", v[i].kind, false);
                put_str("payment_id", v[i].payment_id, true);
                put_str("tenant_id", v[i].tenant_id, true);
                if (v[i].ledger_txn_id)
                        printf(",\"ledger_txn_id\":%" PRId64,
                               v[i].ledger_txn_id);
                if (v[i].outbox_id)
                        printf(",\"outbox_id\":%" PRId64, v[i].outbox_id);
                put_str("detail", v[i].detail, true);
                printf("}\n");
        }
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
        if (n)
                log_error(&lc, "%zu invariant violation(s)", n);
        if (np)
                log_error(&lc,
                          "%zu parked outbox row(s): fix the cause, then "
                          "`chargeonce relay --unpark ID|all`",
                          np);
        if (!n && !np)
                log_info(&lc, "no invariant violation");
        store_violations_free(v, n);
        store_relay_parked_free(p, np);
        store_destroy(st);
        return n || np ? 1 : 0;
}
