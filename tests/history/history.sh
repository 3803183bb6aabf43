#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# bench/history.sh (docs/benchmarks.md): a migrated database filled with N = 20,000
# payments of history, in 4 chunks on 2 jobs, then:
#   * `chargeonce audit` (--full when the binary has it) exits 0;
#   * every count the script reports is the database's own count;
#   * the mix: every status in its share, a live and an expired lease,
#     tombstones and a gc backlog, refunds, resolved reviews with the
#     operator's evidence, webhooks, copies, conflicts, rejected intents,
#     results not yet published, nothing parked;
#   * the schema of 0016/0017: the payment row is the key (the
#     idempotency_keys view reads one key per payment, its derived
#     result_event_id naming the payment's result), the inbox holds copies
#     only (no 'new' row), the ledger is one ledger_postings row per
#     posting (ledger_entries reads two per posting);
#   * the tombstones hold what gc leaves (src/store/gc.c) and the audit's
#     mark (outbox_cleanup) covers every result gc removed;
#   * --bulk (the fill above): the indexes, keys and foreign keys built
#     again after the rows are those migrate made;
#   * refused: a database not migrated, one holding data (without
#     --append), --bulk with --append, a schema version without its SQL;
#     --append adds more and
#     the audit stays clean, also with --skip-triggers (whose checks
#     then run over the whole tables); the BRIN indexes are left
#     summarized but for the range each table is filling.
set -euo pipefail
[ -n "${CHARGEONCE_TEST_PG:-}" ] || { echo "SKIP: no services"; exit 77; }
bin=$CHARGEONCE_BIN
hist=$CHARGEONCE_SOURCE_DIR/bench/history.sh
db=history_$$_$RANDOM
tmp=$(mktemp -d)
dropdb_() { psql "$CHARGEONCE_TEST_PG" -qAtc "DROP DATABASE IF EXISTS $1 WITH (FORCE)" || true; }
trap 'dropdb_ $db; dropdb_ ${db}_bare; dropdb_ ${db}_ahead; rm -rf "$tmp"' EXIT
ci="$CHARGEONCE_TEST_PG dbname=$db"
q() { psql "$ci" -XqAtc "$1"; }
fails=0
check() { # check WHAT COND...: COND is a test(1) expression
	local what=$1
	shift
	if [ "$@" ]; then echo "ok   $what"; else echo "FAIL $what"; fails=$((fails + 1)); fi
}
newdb() { psql "$CHARGEONCE_TEST_PG" -qAtc "CREATE DATABASE $1"; }
migrate() { "$bin" -X "db.conninfo=$CHARGEONCE_TEST_PG dbname=$1" migrate >"$tmp/migrate-$1.log" 2>&1; }

# --help
"$hist" --help >"$tmp/help" || { echo "FAIL: --help"; exit 1; }
check "--help names CONNINFO and --append" \
	"$(grep -c 'CONNINFO N\|--append' "$tmp/help")" -ge 2

# refused: a database that is not migrated
newdb "${db}_bare"
set +e
"$hist" "$CHARGEONCE_TEST_PG dbname=${db}_bare" 100 >"$tmp/bare.out" 2>&1
rc=$?
set -e
check "a database not migrated is refused (exit 2, got $rc)" $rc = 2
check "... saying to run chargeonce migrate" \
	"$(grep -c 'chargeonce migrate' "$tmp/bare.out")" = 1

# the fill, --bulk: the indexes, keys and foreign keys dropped and built
# again after the rows; the schema at the end is the one migrate made
newdb "$db"
migrate "$db"
schema() {
	q "SELECT string_agg(x, E'\n' ORDER BY x) FROM (
	     SELECT c.relname || ' ' || pg_get_indexdef(i.indexrelid) AS x
	       FROM pg_index i JOIN pg_class c ON c.oid = i.indrelid
	      WHERE c.relnamespace = current_schema()::regnamespace
	     UNION ALL
	     SELECT conrelid::regclass || ' ' || conname || ' ' || contype::text || ' '
	            || pg_get_constraintdef(oid) || ' ' || condeferrable || ' '
	            || convalidated
	       FROM pg_constraint
	      WHERE connamespace = current_schema()::regnamespace) s"
}
schema >"$tmp/schema.before"
"$hist" "$ci" 20000 --seed 29 --jobs 2 --chunk 6000 --bulk >"$tmp/out" 2>"$tmp/err" || {
	cat "$tmp/out" "$tmp/err"
	echo "FAIL: bench/history.sh"
	exit 1
}
cat "$tmp/out"
check "the rate is reported" \
	"$(grep -Ec '^history: filled 20000 payments in [0-9.]+ s: [0-9]+ payments/s' "$tmp/out")" = 1
check "4 chunks reported progress" "$(grep -c 'payments/s$' "$tmp/err")" = 4
schema >"$tmp/schema.after"
check "--bulk: indexes and foreign keys dropped, then built again" \
	"$(grep -c '^history: --bulk: [0-9]* indexes ([0-9]* of keys) and [0-9]* foreign keys dropped' "$tmp/err")/$(grep -c '^history: --bulk: the rows in [0-9.]* s, the indexes, keys and foreign keys built again' "$tmp/out")" = 1/1
check "--bulk: every index, key and foreign key as migrate made it ($(wc -l <"$tmp/schema.before") lines)" \
	"$(cmp -s "$tmp/schema.before" "$tmp/schema.after" && echo same)" = same
check "... (the dump names payments_pkey and a foreign key)" \
	"$(grep -c '^payments payments_pkey p \|FOREIGN KEY' "$tmp/schema.before")" -ge 2
check "the size of every table is reported" \
	"$(grep -Ec '^size (payments|inbox|outbox|ledger_postings|webhook_events|gateway_evidence) total=[0-9]+ heap=[0-9]+ indexes=[0-9]+ ' "$tmp/out")" = 6

# the audit
audit=(audit)
"$bin" audit --help 2>/dev/null | grep -q -- '--full' && audit=(audit --full)
set +e
"$bin" -X "db.conninfo=$ci" "${audit[@]}" >"$tmp/audit.out" 2>"$tmp/audit.err"
rc=$?
set -e
check "chargeonce ${audit[*]} exits 0 (got $rc)" $rc = 0
[ $rc = 0 ] || head -20 "$tmp/audit.out"

# the script's counts are the database's
c() { awk -v k="$1" '$1 == "count" && $2 == k { print $3 }' "$tmp/out"; }
same() { # same NAME SQL
	local want got
	want=$(q "$2")
	got=$(c "$1")
	check "count $1 = $want (reported ${got:-nothing})" "${got:-x}" = "$want"
}
same payments "SELECT count(*) FROM payments"
for s in succeeded failed review processing; do
	same payments.status.$s "SELECT count(*) FROM payments WHERE status = '$s'"
done
same payments.refunded "SELECT count(*) FROM payments WHERE refunded_at IS NOT NULL"
same payments.tombstoned \
	"SELECT count(*) FROM idempotency_keys WHERE tombstoned_at IS NOT NULL"
same ledger_postings.kind.charge \
	"SELECT count(*) FROM ledger_transactions WHERE kind = 'charge'"
same ledger_postings.kind.refund \
	"SELECT count(*) FROM ledger_transactions WHERE kind = 'refund'"
for t in ledger_postings inbox outbox gateway_evidence webhook_events; do
	same $t "SELECT count(*) FROM $t"
done
for d in in_progress replay conflict rejected; do
	same inbox.disposition.$d "SELECT count(*) FROM inbox WHERE disposition = '$d'"
done
same outbox.unpublished "SELECT count(*) FROM outbox WHERE NOT co_outbox_published(id, parked_at, published_at)"
same gateway_evidence.kind.operator \
	"SELECT count(*) FROM gateway_evidence WHERE kind = 'operator'"

# the mix
n=20000
share() { # share NAME LOW HIGH: the count of NAME in [LOW, HIGH] per mille of N
	local v
	v=$(c "$1")
	check "$1 = ${v:-0} is $2..$3 per mille of $n" \
		"$(awk -v v="${v:-0}" -v n=$n -v lo="$2" -v hi="$3" \
			'BEGIN { x = v * 1000 / n; print (x >= lo && x <= hi) ? 1 : 0 }')" = 1
}
share payments.status.succeeded 925 955
share payments.status.failed 45 65
share payments.status.review 2 9
share payments.refunded 3 15
share payments.tombstoned 350 650
share payments.gc_backlog 350 650
share inbox.disposition.replay 20 80
share inbox.disposition.rejected 5 15
share webhook_events.result.ignored 150 350
check "12 payments processing" "$(c payments.status.processing)" = 12
check "... 6 with a lease that ran out minutes before the fill" \
	"$(q "SELECT count(*) FROM payments WHERE status = 'processing' AND lease_expires_at < now() - interval '3 minutes'")" = 6
# a live lease runs a minute past the last chunk's start
check "... the others with a lease live after the fill" \
	"$(q "SELECT count(*) FROM payments WHERE status = 'processing' AND lease_expires_at > now() - interval '50 seconds'")" = 6
check "5 results not yet published, none parked" \
	"$(c outbox.unpublished)/$(c outbox.parked)" = 5/0
for k in inbox.disposition.in_progress inbox.disposition.conflict \
	outbox.status.succeeded.resolves_review outbox.status.review \
	gateway_evidence.kind.operator gateway_evidence.kind.query \
	gateway_evidence.kind.webhook webhook_events.result.applied \
	outbox.status.failed.replayed; do
	check "$k > 0" "$(c $k)" -gt 0
done
check "ledger: two entries per posting (the views over ledger_postings)" \
	"$(q "SELECT (SELECT count(*) FROM ledger_entries) = 2 * (SELECT count(*) FROM ledger_postings)")" = t
check "keys: one per payment (the view over payments)" \
	"$(q "SELECT (SELECT count(*) FROM idempotency_keys) = (SELECT count(*) FROM payments)")" = t
check "the inbox holds copies only: no 'new' row (0017)" \
	"$(q "SELECT count(*) FROM inbox WHERE disposition = 'new'")" = 0
check "the key's derived result_event_id names the payment's result" \
	"$(q "SELECT count(*) FROM idempotency_keys k WHERE k.tombstoned_at IS NULL AND k.state = 'final' AND NOT EXISTS (SELECT 1 FROM outbox o WHERE o.payment_id = k.payment_id AND o.event_id = k.result_event_id AND NOT o.replayed)")" = 0
check "created over the year up to now" \
	"$(q "SELECT min(created_at) < now() - interval '364 days' AND max(created_at) > now() - interval '1 hour' FROM payments")" = t
check "request hashes and first messages' digests of 32 bytes, provider keys of 64 hex digits" \
	"$(q "SELECT bool_and(octet_length(request_hash) = 32 AND octet_length(msg_digest) = 32 AND provider_key ~ '^[0-9a-f]{64}$') FROM payments")" = t
check "expires_at = created_at + 7 days" \
	"$(q "SELECT bool_and(expires_at = created_at + interval '7 days') FROM payments")" = t
check "every result payload is JSON naming its own event id and status" \
	"$(q "SELECT bool_and((payload::json->>'event_id')::uuid = event_id AND payload::json->>'status' = status AND (payload::json->>'replayed')::boolean = replayed) FROM outbox")" = t

# the tombstones are what gc leaves
check "tombstones: payment method cleared, only succeeded or failed" \
	"$(q "SELECT count(*) FROM payments p WHERE p.tombstoned_at IS NOT NULL AND (p.payment_method IS NOT NULL OR p.status NOT IN ('succeeded', 'failed') OR p.expires_at >= p.tombstoned_at OR p.finished_at + interval '7 days' >= p.tombstoned_at)")" = 0
check "tombstones: no inbox row of the key, no result of the payment" \
	"$(q "SELECT count(*) FROM payments k WHERE k.tombstoned_at IS NOT NULL AND (EXISTS (SELECT 1 FROM inbox i WHERE i.tenant_id = k.tenant_id AND i.idem_key = k.idem_key) OR EXISTS (SELECT 1 FROM outbox o WHERE o.payment_id = k.payment_id))")" = 0
check "tombstones: no evidence from before gc's run" \
	"$(q "SELECT count(*) FROM payments k JOIN gateway_evidence e USING (payment_id) WHERE e.at < k.tombstoned_at")" = 0
check "outbox_cleanup covers every payment gc removed the results of" \
	"$(q "SELECT (SELECT max(p.finished_at) FROM payments p WHERE p.tombstoned_at IS NOT NULL) <= published_through FROM outbox_cleanup")" = t
check "every other final payment has its result" \
	"$(q "SELECT count(*) FROM payments p WHERE p.tombstoned_at IS NULL AND p.status <> 'processing' AND NOT EXISTS (SELECT 1 FROM outbox o WHERE o.payment_id = p.payment_id AND NOT o.replayed)")" = 0

# refused: a database holding data, without --append
set +e
"$hist" "$ci" 100 >"$tmp/again.out" 2>&1
rc=$?
set -e
check "a second fill without --append is refused (exit 2, got $rc)" $rc = 2
check "... saying the database holds data" "$(grep -c 'holds data' "$tmp/again.out")" = 1

set +e
"$hist" "$ci" 100 --append --bulk >"$tmp/bulkappend.out" 2>&1
rc=$?
set -e
check "--bulk with --append is refused (exit 2, got $rc)" $rc = 2

# --append: more history, new ids, the audit still clean; with the
# triggers skipped, their checks run over the whole tables after
pages0=$(q "SELECT pg_relation_size('ledger_postings') / 8192")
"$hist" "$ci" 15000 --append --seed 30 --skip-triggers >"$tmp/append.out" 2>&1 || {
	cat "$tmp/append.out"
	echo "FAIL: --append --skip-triggers"
	exit 1
}
check "--append: 35000 payments" "$(q "SELECT count(*) FROM payments")" = 35000
check "--skip-triggers: the triggers' checks after the fill say ok" \
	"$(grep -c "skipped triggers' checks over the whole tables in [0-9.]* s: ok$" "$tmp/append.out")" = 1
# the BRIN indexes as a year of traffic leaves them: every range the
# append filled summarized, the one being filled left open (an insert
# there writes nothing to the index): what is left to summarize is that
# one range of each index (ledger_postings' more than one range long)
pages1=$(q "SELECT pg_relation_size('ledger_postings') / 8192")
brin_left=$(psql "$ci" -XqAt -c "BEGIN" -c "SELECT string_agg(c.relname || '=' || brin_summarize_new_values(i.indexrelid), ' ' ORDER BY c.relname)
  FROM pg_index i JOIN pg_class c ON c.oid = i.indexrelid
  JOIN pg_am a ON a.oid = c.relam
 WHERE a.amname = 'brin' AND c.relnamespace = current_schema()::regnamespace" -c "ROLLBACK")
check "the BRIN indexes summarized but for the range being filled (got: $brin_left)" \
	"$brin_left" = "inbox_received_brin=1 ledger_postings_id_brin=1"
check "... the append filled a range of ledger_postings or more, the last partly (pages $pages0 -> $pages1)" \
	$((pages1 - pages0)) -gt 128 -a $((pages1 % 128)) -ne 0
set +e
"$bin" -X "db.conninfo=$ci" "${audit[@]}" >"$tmp/audit2.out" 2>&1
rc=$?
set -e
check "chargeonce ${audit[*]} exits 0 after --append (got $rc)" $rc = 0

# refused: a schema version without its SQL (the next schema's, say)
newdb "${db}_ahead"
migrate "${db}_ahead"
psql "$CHARGEONCE_TEST_PG dbname=${db}_ahead" -qAtc \
	"INSERT INTO schema_migrations (version, name, sha256) VALUES (9999, '9999_next.sql', 'x')"
set +e
"$hist" "$CHARGEONCE_TEST_PG dbname=${db}_ahead" 100 >"$tmp/ahead.out" 2>&1
rc=$?
set -e
check "schema version 9999 is refused (exit 2, got $rc)" $rc = 2
check "... naming bench/history/v9999.sql" \
	"$(grep -c 'no history SQL for schema version 9999: bench/history/v9999.sql' "$tmp/ahead.out")" = 1

echo "$fails failed"
[ $fails = 0 ]
