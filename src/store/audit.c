/* SPDX-License-Identifier: Apache-2.0 */
/*
 * store/audit: the periodic audit's session, its lock and its steps
 * (audit.h; docs/data-model.md, "The periodic audit").
 *
 * Simple-query round trips, never prepared: they run once per
 * metrics.audit_interval, the lead's SET lines come first on every
 * session (a reconnect forgets them), and a step's statement is planned
 * with its own parameters.
 *
 * Must never: wait for the lock (pg_try_advisory_lock only), or take it a
 * second time on the session that holds it (the lock count would grow by
 * one per audit for the session's life); write anything but
 * audit_cursor; read a table of the history but through an index; drop
 * a hole before the transactions that might fill it have ended; take a
 * table lock but to make a missing cursor.
 */
#include "store/audit.h"
#include "store/store_int.h"

#include <inttypes.h>
#include <stdio.h>
#include <string.h>

/* The lock held by this session already, else taken if free. CASE keeps
 * the order: pg_try_advisory_lock runs only when the session lacks it. */
#define AUDIT_LEAD_SQL                                                         \
        "SELECT CASE WHEN EXISTS (SELECT 1 FROM pg_locks"                      \
        " WHERE locktype = 'advisory' AND pid = pg_backend_pid()"              \
        " AND database = (SELECT oid FROM pg_database"                         \
        "  WHERE datname = current_database())"                                \
        " AND classid = (" STORE_AUDIT_LOCK_KEY "::bigint >> 32)::oid"         \
        " AND objid = (" STORE_AUDIT_LOCK_KEY "::bigint & 4294967295)::oid"    \
        " AND objsubid = 1 AND granted)"                                       \
        " THEN true ELSE pg_try_advisory_lock(" STORE_AUDIT_LOCK_KEY ") END"

int store_audit_lead(struct store *st, int64_t timeout_ms, bool *leader,
                     char *errstr, size_t errstr_size)
{
        PGconn *conn = store_pgconn(st);
        PGresult *res;
        char sql[1024];
        int rc = STORE_OK;

        *leader = false;
        if (!conn || PQstatus(conn) != CONNECTION_OK) {
                if (conn)
                        store_reconnect(st);
                if (!conn || PQstatus(conn) != CONNECTION_OK) {
                        snprintf(errstr, errstr_size, "no database connection");
                        return STORE_ERR_CONN;
                }
        }
        snprintf(sql, sizeof(sql),
                 "SET jit = off; SET statement_timeout = %" PRId64 ";"
                 " SET application_name = 'chargeonce audit'; %s",
                 timeout_ms, AUDIT_LEAD_SQL);
        res = PQexec(conn, sql);
        if (PQresultStatus(res) == PGRES_TUPLES_OK && PQntuples(res) == 1) {
                *leader = PQgetvalue(res, 0, 0)[0] == 't';
        } else {
                store_format_error(res, conn, "audit lock", errstr,
                                   errstr_size);
                rc = PQstatus(conn) == CONNECTION_OK ? STORE_ERR
                                                     : STORE_ERR_CONN;
        }
        PQclear(res);
        return rc;
}

/* ------------------------------------------------------------------ */
/* the incremental step                                                 */

/* The feed tables, as the barrier names them. */
#define AUDIT_FEED_TABLES                                                      \
        "'outbox'::regclass, 'ledger_postings'::regclass,"                     \
        " 'gateway_evidence'::regclass"

/* Whether the transactions of the last barrier have all ended (then every
 * id up to its sequence values is committed or never will be); no row:
 * no cursor yet. Before the step's snapshot. */
#define AUDIT_RESOLVED_SQL                                                     \
        "SELECT c.pending_vxids IS NULL OR NOT EXISTS (SELECT 1"               \
        " FROM pg_locks l WHERE l.virtualtransaction = ANY (c.pending_vxids))" \
        " FROM audit_cursor c WHERE c.id = 1"

/* The feeds' sequence values, then (another statement: after them) the
 * transactions that may hold an id up to them: every insert holds a
 * RowExclusiveLock on its table from before it draws its id to its end.
 * The sequences must hand out ids one at a time (CACHE 1, identity's
 * default): a session's cached ids would be drawn later than read here. */
#define AUDIT_SEQ_SQL                                                          \
        "SELECT coalesce(pg_sequence_last_value(pg_get_serial_sequence("       \
        "'outbox', 'id')::regclass), 0),"                                      \
        " coalesce(pg_sequence_last_value(pg_get_serial_sequence("             \
        "'ledger_postings', 'id')::regclass), 0),"                             \
        " coalesce(pg_sequence_last_value(pg_get_serial_sequence("             \
        "'gateway_evidence', 'id')::regclass), 0),"                            \
        " " STORE_SEQS_CACHE1_SQL(                                             \
            "pg_get_serial_sequence('outbox', 'id')::regclass,"                \
            " pg_get_serial_sequence('ledger_postings', 'id')::regclass,"      \
            " pg_get_serial_sequence('gateway_evidence', 'id')::regclass")

#define AUDIT_WRITERS_SQL "SELECT " STORE_WRITERS_SQL(AUDIT_FEED_TABLES)

/* No cursor: one at the feeds' ends. Under SHARE locks no insert into a
 * feed is in flight, so every id up to the sequences' values is
 * committed or aborted: what was written before is `audit --full`'s. The
 * lock waits longer than deadlock_timeout (1 s by default), after which
 * the server cancels an autovacuum of a feed table in its way (seen after
 * a large fill: the lock timed out first). */
#define AUDIT_START_SQL                                                        \
        "BEGIN; SET LOCAL lock_timeout = 3000;"                                \
        " LOCK TABLE outbox, ledger_postings, gateway_evidence IN SHARE MODE;" \
        " INSERT INTO audit_cursor (id, outbox_through, postings_through,"     \
        " evidence_through) SELECT 1,"                                         \
        " coalesce(pg_sequence_last_value(pg_get_serial_sequence("             \
        "'outbox', 'id')::regclass), 0),"                                      \
        " coalesce(pg_sequence_last_value(pg_get_serial_sequence("             \
        "'ledger_postings', 'id')::regclass), 0),"                             \
        " coalesce(pg_sequence_last_value(pg_get_serial_sequence("             \
        "'gateway_evidence', 'id')::regclass), 0)"                             \
        " ON CONFLICT (id) DO NOTHING; COMMIT"

/*
 * One feed f (audit_cursor's f_through, f_holes, f_pending) of table T,
 * its columns cols (id and payment_id first):
 *   f_tail  the next rows after f_through, at most $1 (the index, in id
 *           order);
 *   f_hole  the rows that have become visible in the ranges passed
 *           before while not visible (holes);
 *   f_end   f_through and how far the tail reached;
 *   f_left  the holes after this step: every range of ids of the old
 *           holes and of the tail's span that no visible row holds, less
 *           the ids up to f_pending when the last barrier's transactions
 *           have ended ($2), since those can no longer appear.
 */
#define AUDIT_FEED(f, T, cols)                                                 \
        ", " #f "_tail AS (SELECT t.* FROM c, LATERAL"                         \
        " (SELECT " cols " FROM " #T " WHERE id > c." #f "_through"            \
        " ORDER BY id LIMIT $1) t)"                                            \
        ", " #f "_hole AS (SELECT h.r, t.*"                                    \
        " FROM c, unnest(c." #f "_holes) AS h(r), LATERAL"                     \
        " (SELECT " cols " FROM " #T                                           \
        " WHERE id >= lower(h.r) AND id < upper(h.r)) t)"                      \
        ", " #f "_end AS (SELECT c." #f "_through AS lo,"                      \
        " coalesce((SELECT max(id) FROM " #f "_tail), c." #f "_through)"       \
        " AS hi, (SELECT count(*) FROM " #f "_tail) AS n,"                     \
        " (SELECT count(*) FROM " #f "_hole) AS late FROM c)"                  \
        ", " #f "_seg AS (SELECT h.r FROM c, unnest(c." #f "_holes) AS h(r)"   \
        " UNION ALL SELECT int8range(e.lo + 1, e.hi + 1) FROM " #f "_end e"    \
        " WHERE e.hi > e.lo)"                                                  \
        ", " #f "_pts AS (SELECT r, lower(r) - 1 AS id FROM " #f "_seg"        \
        " UNION ALL SELECT r, upper(r) FROM " #f "_seg"                        \
        " UNION ALL SELECT r, id FROM " #f "_hole"                             \
        " UNION ALL SELECT int8range(e.lo + 1, e.hi + 1), t.id"                \
        " FROM " #f "_tail t, " #f "_end e)"                                   \
        ", " #f "_left AS (SELECT CASE WHEN $2 AND c." #f "_pending"           \
        " IS NOT NULL THEN int8range(x.id + 1, x.nxt)"                         \
        " - int8range(NULL, c." #f "_pending, '[]')"                           \
        " ELSE int8range(x.id + 1, x.nxt) END AS r"                            \
        " FROM (SELECT id, lead(id) OVER (PARTITION BY lower(r) ORDER BY id) " \
        "AS nxt"                                                               \
        " FROM " #f "_pts) x, c WHERE x.nxt > x.id + 1)"

/* What the summaries need of a posting and of a result. */
#define AUDIT_POSTING_COLS                                                     \
        "id, payment_id, kind, amount, currency, tenant_id, debit_account,"    \
        " credit_account"
#define AUDIT_RESULT_COLS                                                      \
        "id, payment_id, replayed, status, resolves_review, event_id"

#define AUDIT_FEED_SET(f, v)                                                   \
        " " #f "_through = (SELECT hi FROM " #f "_end),"                       \
        " " #f "_holes = coalesce((SELECT array_agg(r ORDER BY r)"             \
        " FROM " #f "_left WHERE NOT isempty(r)), '{}'),"                      \
        " " #f "_pending = CASE WHEN $2 THEN " v "::bigint"                    \
        " ELSE c." #f "_pending END,"

#define AUDIT_FINAL "('succeeded', 'failed', 'review')"

/* clang-format off */
/* A posting on other accounts than its kind's (l: the posting). */
#define AUDIT_BAD_ACCOUNTS(l)                                                  \
        "(" l ".debit_account <> CASE " l ".kind WHEN 'charge'"                \
        " THEN 'customer_funds:' ELSE 'merchant_payable:' END || " l           \
        ".tenant_id OR " l ".credit_account <> CASE " l ".kind"                \
        " WHEN 'charge' THEN 'merchant_payable:' ELSE 'customer_funds:'"       \
        " END || " l ".tenant_id)"

/*
 * What the checks need of a payment's postings (rows l for which P
 * holds) and of its results (rows o for which O holds, each with
 * same_event: how many of the payment's results carry its event id),
 * summed up the same way from the feed rows (sp) and from the indexes
 * (ps). No aggregate sorts its input (a sort per payment costs more than
 * the rest): the latest final result's status is the greatest of its id,
 * zero-padded, followed by its status.
 */
#define AUDIT_POSTING_AGGS(l, P)                                               \
        "count(*) FILTER (WHERE " P ") AS postings,"                           \
        " count(*) FILTER (WHERE " P " AND " l ".kind = 'charge') AS charges," \
        " min(" l ".id) FILTER (WHERE " P " AND " l ".kind = 'refund')"        \
        " AS refund_id,"                                                       \
        " min(" l ".amount) FILTER (WHERE " P ") AS amount_lo,"                \
        " max(" l ".amount) FILTER (WHERE " P ") AS amount_hi,"                \
        " min(" l ".currency) FILTER (WHERE " P ") AS currency_lo,"            \
        " max(" l ".currency) FILTER (WHERE " P ") AS currency_hi,"            \
        " coalesce(bool_or(" AUDIT_BAD_ACCOUNTS(l) ") FILTER (WHERE " P "),"   \
        " false) AS bad_accounts"
#define AUDIT_LATEST(o, O)                                                     \
        "(WHERE " O " AND NOT " o ".replayed AND " o ".status IN "             \
        AUDIT_FINAL ")"
#define AUDIT_RESULT_AGGS(o, O)                                                \
        "count(*) FILTER (WHERE " O " AND NOT " o ".replayed) AS originals,"   \
        " max(" o ".id) FILTER " AUDIT_LATEST(o, O) " AS latest_id,"           \
        " substr(max(lpad(" o ".id::text, 20, '0') || " o ".status)"           \
        " FILTER " AUDIT_LATEST(o, O) ", 21) AS latest_status,"                \
        " count(*) FILTER (WHERE " O " AND NOT " o ".replayed AND " o          \
        ".status IN " AUDIT_FINAL " AND NOT " o ".resolves_review) AS finals," \
        " count(*) FILTER (WHERE " O " AND NOT " o ".replayed AND " o          \
        ".resolves_review) AS resolving,"                                      \
        " coalesce(bool_or(" o ".same_event > 1) FILTER (WHERE " O "), false)" \
        " AS dup_event_id"

/*
 * The subject payments, one row each, with their postings and results
 * among the feed rows read (fr: src 1 a posting, 2 a result, 3 evidence,
 * 4 what an earlier step found, reopened).
 */
#define AUDIT_SUBJECTS                                                         \
        ", fr AS (SELECT payment_id, 1 AS src, id, kind, amount, currency,"    \
        " tenant_id, debit_account, credit_account, NULL::boolean"             \
        " AS replayed, NULL::text AS status, NULL::boolean AS"                 \
        " resolves_review, NULL::uuid AS event_id FROM (SELECT "               \
        AUDIT_POSTING_COLS " FROM postings_tail UNION ALL SELECT "             \
        AUDIT_POSTING_COLS " FROM postings_hole) l"                            \
        " UNION ALL SELECT payment_id, 2, id, NULL, NULL, NULL, NULL, NULL,"   \
        " NULL, replayed, status, resolves_review, event_id FROM (SELECT "     \
        AUDIT_RESULT_COLS " FROM outbox_tail UNION ALL SELECT "                \
        AUDIT_RESULT_COLS " FROM outbox_hole) o"                               \
        " UNION ALL SELECT payment_id, 3, NULL, NULL, NULL, NULL, NULL, NULL," \
        " NULL, NULL, NULL, NULL, NULL FROM (SELECT payment_id FROM"           \
        " evidence_tail UNION ALL SELECT payment_id FROM evidence_hole) e"     \
        " UNION ALL SELECT unnest(c.open_payments), 4, NULL, NULL, NULL,"      \
        " NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL FROM c)"              \
        ", sp AS (SELECT f.payment_id, bool_or(f.src = 4) AS reopened, "       \
        AUDIT_POSTING_AGGS("f", "f.src = 1") ", "                              \
        AUDIT_RESULT_AGGS("f", "f.src = 2") " FROM (SELECT fr.*, count(*)"     \
        " OVER (PARTITION BY fr.payment_id, fr.src, fr.event_id)"              \
        " AS same_event FROM fr WHERE fr.payment_id IS NOT NULL) f"            \
        " GROUP BY f.payment_id)"

/*
 * A subject payment is fresh when it was claimed after the last step's
 * snapshot (claim_xid not visible in it; sql/0024): no row naming it was
 * visible to that step, so, when no feed stopped at its limit ($1) in
 * this one, every row naming it this step can see is a feed row read
 * now: its postings and results are summed up from sp, without reading
 * an index. Not fresh: claimed before (or before 0024), no snapshot of
 * the last step (none yet, or the last step was an earlier release's),
 * found by an earlier step (checked again without new rows; a result
 * that named it before it was claimed was read then), or a feed behind.
 */
#define AUDIT_FRESH                                                            \
        ", fs AS (SELECT c.snapshot AS snap, c.snapshot_step = c.steps"        \
        " AND (SELECT n FROM outbox_end) < $1"                                 \
        " AND (SELECT n FROM postings_end) < $1 AS ok FROM c)"                 \
        ", p AS (SELECT x.payment_id, x.tenant_id, x.status, x.amount,"        \
        " x.currency, x.finished_at, x.refunded_at, coalesce(fs.ok"            \
        " AND NOT sp.reopened AND NOT pg_visible_in_snapshot(x.claim_xid,"     \
        " fs.snap), false) AS fresh, sp AS f FROM sp"                          \
        " JOIN payments x ON x.payment_id = sp.payment_id, fs)"

/*
 * What the checks need of each subject payment p, read once: for a fresh
 * one from sp; else its postings (ledger_postings' primary key) and its
 * results (outbox_payment_idx), each summed up in one index scan (NOT
 * p.fresh gates the scan, and HAVING the sum: a fresh payment's is
 * never run). Most payments are healthy; the kinds that name a row read
 * the rows again for the few that are not.
 */
#define AUDIT_SUMMARY                                                          \
        "SELECT p.payment_id, p.tenant_id, p.status, p.amount, p.currency,"    \
        " p.finished_at, p.refunded_at, p.fresh, l.postings, l.charges,"       \
        " l.refund_id, coalesce(l.amount_lo <> p.amount"                       \
        " OR l.amount_hi <> p.amount OR l.currency_lo <> p.currency"           \
        " OR l.currency_hi <> p.currency, false) AS bad_amount,"               \
        " l.bad_accounts, o.originals, o.latest_id, o.latest_status,"          \
        " o.finals, o.resolving, o.dup_event_id FROM p"                        \
        " CROSS JOIN LATERAL (SELECT " AUDIT_POSTING_AGGS("l", "true")         \
        " FROM ledger_postings l WHERE l.payment_id = p.payment_id"            \
        " AND NOT p.fresh HAVING NOT p.fresh UNION ALL SELECT (p.f).postings," \
        " (p.f).charges, (p.f).refund_id, (p.f).amount_lo, (p.f).amount_hi,"   \
        " (p.f).currency_lo, (p.f).currency_hi, (p.f).bad_accounts"            \
        " WHERE p.fresh) l"                                                    \
        " CROSS JOIN LATERAL (SELECT " AUDIT_RESULT_AGGS("o", "true")          \
        " FROM (SELECT " AUDIT_RESULT_COLS ", count(*) OVER (PARTITION BY"     \
        " event_id) AS same_event FROM outbox WHERE payment_id = p.payment_id" \
        " AND NOT p.fresh) o HAVING NOT p.fresh"                               \
        " UNION ALL SELECT (p.f).originals, (p.f).latest_id,"                  \
        " (p.f).latest_status, (p.f).finals, (p.f).resolving,"                 \
        " (p.f).dup_event_id WHERE p.fresh) o"
/* clang-format on */

/*
 * The checks of invariant_violations (sql/0002 .. 0012) for the subject
 * payments (ps: their summaries; unk: subject ids that no payment has;
 * wp: those named by evidence, which every webhook applied writes, for
 * their webhooks: webhook_events_payment_idx), every table reached by an
 * index on the payment id, never by a scan.
 * Left to the whole view (`chargeonce audit --full`):
 * provider_key_reused (no index on provider keys: 0012), a result event
 * id reused across payments, results of a key that name another payment
 * or none; and the kinds that cannot happen any more: unbalanced_posting
 * (one amount per posting, 0016) and the key kinds (the key is the
 * payment row, 0017).
 */
#define AUDIT_CHECKS                                                           \
        "SELECT 'succeeded_without_posting'::text AS kind, ps.payment_id,"     \
        " ps.tenant_id, NULL::bigint AS ledger_txn_id, NULL::bigint AS"        \
        " outbox_id, 'no ledger posting'::text AS detail FROM ps"              \
        " WHERE ps.status = 'succeeded' AND ps.charges = 0"                    \
        " UNION ALL SELECT 'posting_not_succeeded', ps.payment_id,"            \
        " ps.tenant_id, l.id, NULL,"                                           \
        " l.kind || ' posting, payment status ' || ps.status"                  \
        " FROM ps JOIN ledger_postings l ON l.payment_id = ps.payment_id"      \
        " WHERE ps.status <> 'succeeded' AND ps.postings > 0"                  \
        " UNION ALL SELECT 'posting_amount_mismatch', ps.payment_id,"          \
        " ps.tenant_id, l.id, NULL, 'posting ' || l.amount || ' ' ||"          \
        " l.currency || ' entries ' || l.amount || ' payment ' || ps.amount"   \
        " || ' ' || ps.currency FROM ps JOIN ledger_postings l"                \
        " ON l.payment_id = ps.payment_id WHERE ps.bad_amount"                 \
        " AND (l.amount <> ps.amount OR l.currency <> ps.currency)"            \
        " UNION ALL SELECT 'posting_wrong_accounts', ps.payment_id,"           \
        " ps.tenant_id, l.id, NULL,"                                           \
        " l.kind || ' posting with entries on other accounts'"                 \
        " FROM ps JOIN ledger_postings l ON l.payment_id = ps.payment_id"      \
        " WHERE ps.bad_accounts AND " AUDIT_BAD_ACCOUNTS(                      \
            "l") " UNION ALL SELECT 'refund_without_charge', ps.payment_id,"   \
                 " ps.tenant_id, ps.refund_id, NULL,"                          \
                 " 'refund posting without a charge posting' FROM ps"          \
                 " WHERE ps.refund_id IS NOT NULL AND ps.charges = 0"          \
                 " UNION ALL SELECT 'refund_flag_mismatch', ps.payment_id,"    \
                 " ps.tenant_id, ps.refund_id, NULL, CASE WHEN ps.refund_id "  \
                 "IS NULL"                                                     \
                 " THEN 'refunded_at set, no refund posting'"                  \
                 " ELSE 'refund posting, refunded_at not set' END FROM ps"     \
                 " WHERE (ps.refunded_at IS NOT NULL) <> (ps.refund_id IS "    \
                 "NOT NULL)"                                                   \
                 " UNION ALL SELECT 'final_without_result', ps.payment_id,"    \
                 " ps.tenant_id, NULL, NULL,"                                  \
                 " 'payment ' || ps.status || ' has no result row' FROM ps, "  \
                 "cl"                                                          \
                 " WHERE ps.status <> 'processing' AND ps.originals = 0"       \
                 " AND NOT (ps.finished_at <= cl.published_through)"           \
                 " UNION ALL SELECT 'result_status_mismatch', ps.payment_id,"  \
                 " ps.tenant_id, NULL, ps.latest_id,"                          \
                 " 'result ' || ps.latest_status || ', payment ' || "          \
                 "ps.status FROM ps"                                           \
                 " WHERE ps.latest_status <> ps.status"                        \
                 " UNION ALL SELECT 'duplicate_final_result', ps.payment_id,"  \
                 " d.tenant_id, NULL, d.first, d.nf || ' final results, ' || " \
                 "d.nr ||"                                                     \
                 " ' resolving a review' FROM ps CROSS JOIN LATERAL (SELECT"   \
                 " o.tenant_id, o.idem_key, min(o.id) AS first,"               \
                 " count(*) FILTER (WHERE NOT o.resolves_review) AS nf,"       \
                 " count(*) FILTER (WHERE o.resolves_review) AS nr,"           \
                 " count(*) FILTER (WHERE NOT o.resolves_review"               \
                 " AND o.status <> 'review') AS nfr FROM outbox o"             \
                 " WHERE o.payment_id = ps.payment_id AND NOT o.replayed"      \
                 " AND o.status IN " AUDIT_FINAL                               \
                 " GROUP BY o.tenant_id, o.idem_key) d, cl"                    \
                 " WHERE (ps.finals > 1 OR ps.resolving > 0)"                  \
                 " AND (d.nf > 1 OR d.nr > 1 OR (d.nr = 1 AND d.nfr > 0)"      \
                 " OR (d.nr = 1 AND d.nf = 0 AND NOT coalesce((SELECT"         \
                 " min(x.created_at) FROM payments x WHERE x.tenant_id = "     \
                 "d.tenant_id"                                                 \
                 " AND x.idem_key = d.idem_key) <= cl.published_through, "     \
                 "false)))"                                                    \
                 " UNION ALL SELECT 'result_for_unknown_payment', "            \
                 "o.payment_id,"                                               \
                 " o.tenant_id, NULL, o.id, 'result names a missing payment'"  \
                 " FROM unk JOIN outbox o ON o.payment_id = unk.payment_id"    \
                 " UNION ALL SELECT 'result_event_id_reused', ps.payment_id,"  \
                 " ps.tenant_id, NULL, o.id, 'result event id ' || "           \
                 "o.event_id ||"                                               \
                 " ' on ' || o.n || ' outbox rows' FROM ps CROSS JOIN LATERAL" \
                 " (SELECT o.event_id, min(o.id) AS id, count(*) AS n FROM "   \
                 "outbox o"                                                    \
                 " WHERE o.payment_id = ps.payment_id GROUP BY o.event_id"     \
                 " HAVING count(*) > 1) o WHERE ps.dup_event_id"               \
                 " UNION ALL SELECT 'webhook_without_result', wp.payment_id, " \
                 "NULL,"                                                       \
                 " NULL, NULL, 'webhook ' || left(w.webhook_id, 64) ||"        \
                 " ' has no result' FROM wp JOIN webhook_events w"             \
                 " ON w.payment_id = wp.payment_id WHERE w.result IS NULL"

/*
 * The step: $1 rows per feed at most, $2 the last barrier resolved (read
 * before this transaction's snapshot), $3..$5 the feeds' sequence values
 * and $6 the writers read for the next barrier. Its first row is the
 * step's own (kind NULL: ledger_txn_id the rows read, outbox_id 1 when a
 * feed had more, detail the fresh payments), then the violations. What
 * it found is kept in audit_cursor.open_payments (the payment ids, those
 * no payment has included) and checked again at every step until it
 * holds; its snapshot in audit_cursor.snapshot (for the next step's
 * fresh payments).
 */
/* clang-format off */
static const char step_sql[] =
    "WITH c AS (SELECT * FROM audit_cursor WHERE id = 1 FOR UPDATE)"
    AUDIT_FEED(outbox, outbox, AUDIT_RESULT_COLS)
    AUDIT_FEED(postings, ledger_postings, AUDIT_POSTING_COLS)
    AUDIT_FEED(evidence, gateway_evidence, "id, payment_id")
    AUDIT_SUBJECTS AUDIT_FRESH
    ", unk AS (SELECT payment_id FROM sp EXCEPT SELECT payment_id FROM p)"
    ", wp AS (SELECT DISTINCT payment_id FROM fr"
    " WHERE src IN (3, 4) AND payment_id IS NOT NULL)"
    ", ps AS (" AUDIT_SUMMARY ")"
    ", cl AS (SELECT published_through FROM outbox_cleanup WHERE id = 1)"
    ", v AS (" AUDIT_CHECKS ")"
    ", up AS (UPDATE audit_cursor a SET"
    AUDIT_FEED_SET(outbox, "$3") AUDIT_FEED_SET(postings, "$4")
    AUDIT_FEED_SET(evidence, "$5")
    " pending_vxids = CASE WHEN $2 THEN $6::text[] ELSE c.pending_vxids END,"
    " open_payments = coalesce((SELECT array_agg(DISTINCT payment_id)"
    " FROM v WHERE payment_id IS NOT NULL), '{}'),"
    " snapshot = pg_current_snapshot(), snapshot_step = a.steps + 1,"
    " audited_at = now(), steps = a.steps + 1,"
    " last_rows = (SELECT n + late FROM outbox_end)"
    " + (SELECT n + late FROM postings_end)"
    " + (SELECT n + late FROM evidence_end),"
    " last_violations = (SELECT count(*) FROM v)"
    " FROM c WHERE a.id = c.id"
    " RETURNING a.last_rows, (SELECT n FROM outbox_end) >= $1"
    " OR (SELECT n FROM postings_end) >= $1"
    " OR (SELECT n FROM evidence_end) >= $1 AS behind)"
    " SELECT NULL::text, NULL::uuid, NULL::text, up.last_rows,"
    " up.behind::int::bigint, (SELECT count(*) FROM ps WHERE fresh)::text,"
    " 0 AS o FROM up"
    " UNION ALL SELECT kind, payment_id, tenant_id, ledger_txn_id,"
    " outbox_id, detail, 1 FROM v ORDER BY 7, 1, 2";
/* clang-format on */

/* The plans of the step: index scans only (docs/data-model.md); the feed
 * rows (two per payment) sorted in memory. */
#define AUDIT_BEGIN_SQL                                                        \
        "BEGIN ISOLATION LEVEL REPEATABLE READ; SET LOCAL work_mem = '64MB';"  \
        " SET LOCAL enable_seqscan = off; SET LOCAL enable_hashjoin = off;"    \
        " SET LOCAL enable_mergejoin = off"

/* Runs sql (simple query), expecting a result status; the result in
 * *keep when asked, else cleared. */
static int run(PGconn *conn, const char *what, const char *sql,
               ExecStatusType expect, PGresult **keep, char *errstr,
               size_t errstr_size)
{
        PGresult *res = PQexec(conn, sql);
        int rc        = STORE_OK;

        if (PQresultStatus(res) != expect) {
                store_format_error(res, conn, what, errstr, errstr_size);
                rc = store_error_rc(res, conn);
                PQclear(res);
                return rc;
        }
        if (keep)
                *keep = res;
        else
                PQclear(res);
        return rc;
}

/* Ends the transaction after a failure, if the connection lives. */
static void rollback(PGconn *conn)
{
        if (PQstatus(conn) == CONNECTION_OK)
                PQclear(PQexec(conn, "ROLLBACK"));
}

/* The barrier for the next step: the sequences, then the writers. *seq
 * and *vx are the results (PQclear). */
static int barrier(PGconn *conn, PGresult **seq, PGresult **vx, char *errstr,
                   size_t errstr_size)
{
        int rc;

        *seq = *vx = NULL;
        rc = run(conn, "audit sequences", AUDIT_SEQ_SQL, PGRES_TUPLES_OK, seq,
                 errstr, errstr_size);
        if (rc != STORE_OK)
                return rc;
        if (PQgetvalue(*seq, 0, 3)[0] != 't') {
                snprintf(errstr, errstr_size,
                         "audit: a sequence of outbox, ledger_postings or "
                         "gateway_evidence has a CACHE above 1: the audit "
                         "could miss ids drawn from a session's cache; ALTER "
                         "SEQUENCE ... CACHE 1");
                PQclear(*seq);
                *seq = NULL;
                return STORE_ERR_SCHEMA;
        }
        rc = run(conn, "audit writers", AUDIT_WRITERS_SQL, PGRES_TUPLES_OK, vx,
                 errstr, errstr_size);
        if (rc != STORE_OK) {
                PQclear(*seq);
                *seq = NULL;
        }
        return rc;
}

int store_audit_step(struct store *st, int64_t limit,
                     struct store_violation **out, size_t *n_out,
                     struct store_audit_info *info, char *errstr,
                     size_t errstr_size)
{
        PGconn *conn  = store_pgconn(st);
        PGresult *res = NULL, *seq = NULL, *vx = NULL;
        struct store_violation *v = NULL;
        const char *params[6];
        char lim[24];
        int rc;

        *out   = NULL;
        *n_out = 0;
        memset(info, 0, sizeof(*info));
        if (!conn || PQstatus(conn) != CONNECTION_OK) {
                snprintf(errstr, errstr_size, "no database connection");
                return STORE_ERR_CONN;
        }
        rc = run(conn, "audit barrier", AUDIT_RESOLVED_SQL, PGRES_TUPLES_OK,
                 &res, errstr, errstr_size);
        if (rc != STORE_OK)
                return rc;
        if (PQntuples(res) == 0) {
                PQclear(res);
                info->started = true;
                rc            = run(conn, "audit cursor", AUDIT_START_SQL,
                                    PGRES_COMMAND_OK, NULL, errstr, errstr_size);
                if (rc != STORE_OK)
                        rollback(conn);
                return rc;
        }
        params[1] = PQgetvalue(res, 0, 0)[0] == 't' ? "t" : "f";
        PQclear(res);
        res = NULL;
        if ((rc = barrier(conn, &seq, &vx, errstr, errstr_size)) != STORE_OK)
                return rc;
        snprintf(lim, sizeof(lim), "%" PRId64, limit > 0 ? limit : 1);
        params[0] = lim;
        params[2] = PQgetvalue(seq, 0, 0);
        params[3] = PQgetvalue(seq, 0, 1);
        params[4] = PQgetvalue(seq, 0, 2);
        params[5] = PQgetvalue(vx, 0, 0);
        if ((rc = run(conn, "audit begin", AUDIT_BEGIN_SQL, PGRES_COMMAND_OK,
                      NULL, errstr, errstr_size)) != STORE_OK)
                goto fail;
        res = PQexecParams(conn, step_sql, 6, NULL, params, NULL, NULL, 0);
        if (PQresultStatus(res) != PGRES_TUPLES_OK || PQntuples(res) < 1) {
                store_format_error(res, conn, "audit step", errstr,
                                   errstr_size);
                rc = PQresultStatus(res) == PGRES_TUPLES_OK
                         ? STORE_ERR /* no cursor row: someone removed it */
                         : store_error_rc(res, conn);
                goto fail;
        }
        if ((rc = run(conn, "audit commit", "COMMIT", PGRES_COMMAND_OK, NULL,
                      errstr, errstr_size)) != STORE_OK)
                goto fail;
        info->rows   = store_i64_field(res, 0, 3);
        info->behind = store_i64_field(res, 0, 4) != 0;
        info->fresh  = store_i64_field(res, 0, 5);
        v            = store_rows_calloc(res, sizeof(*v));
        for (int r = 1; r < PQntuples(res); r++) {
                struct store_violation *x = &v[r - 1];

                store_copy_field(res, r, 0, x->kind, sizeof(x->kind));
                store_copy_field(res, r, 1, x->payment_id,
                                 sizeof(x->payment_id));
                x->tenant_id     = store_strdup_field(res, r, 2);
                x->ledger_txn_id = store_i64_field(res, r, 3);
                x->outbox_id     = store_i64_field(res, r, 4);
                x->detail        = store_strdup_field(res, r, 5);
        }
        *out   = v;
        *n_out = (size_t)PQntuples(res) - 1;
        PQclear(res);
        PQclear(seq);
        PQclear(vx);
        return STORE_OK;
fail:
        rollback(conn);
        PQclear(res);
        PQclear(seq);
        PQclear(vx);
        return rc;
}
