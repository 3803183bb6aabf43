#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# bench/audit.sh [OPTIONS] N...: what the periodic audit costs PostgreSQL
# per interval, at the same traffic, over histories of N payments each.
#
# For each N: a fresh database on the harness's PostgreSQL
# (CHARGEONCE_TEST_PG, tests/harness/with-services or services.sh),
# migrated, filled with N payments of a year's history by
# bench/history.sh, every BRIN range summarized; `chargeonce audit
# --incremental` makes the audit cursor at the end of that history. Then
# ROUNDS intervals of traffic: TRAFFIC new payments as the consumer
# leaves them (settled, 94 % succeeded with their charge posting, every
# result written and published, 1 % with a reconciler's evidence row),
# written by one SQL statement, then one periodic audit (`chargeonce audit
# --incremental`: the steps the auditing daemon runs at a tick, under its
# lock), with pg_stat_statements reset before it: the audit's PostgreSQL
# time is the execution time of every statement of that database in the
# interval (the audit's alone run there). Every history is filled first,
# then the rounds run in turn over the databases. Prints one line per
# round and the median per N ('audit N ...') with its ratio to the first
# N's.
#
# docs/benchmarks.md ("The periodic audit") has the figures and how they
# were made. Needs a superuser (pg_stat_statements_reset, CREATE
# EXTENSION) and pg_stat_statements in shared_preload_libraries (the
# harness's PostgreSQL has it).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)

usage() {
	cat <<'EOF'
usage: bench/audit.sh [OPTIONS] N...

  --traffic T   payments written per interval (default 20000)
  --rounds R    intervals measured per N (default 5)
  --jobs J      bench/history.sh's --jobs (default: the number of CPUs)
  --seed S      bench/history.sh's --seed (default 29)
  --full        also time `chargeonce audit --full` once per N (the whole
                view: minutes at 5,000,000)
  --keep        keep the databases (co_audit_<N>); else dropped at the end
  --bin PATH    the chargeonce binary (default build-dev/src/chargeonce)
  -h, --help    this text
EOF
}

traffic=20000 rounds=5 jobs=$(nproc) seed=29 full=0 keep=0
bin=$root/build-dev/src/chargeonce
ns=()
while [ $# -gt 0 ]; do
	case $1 in
	-h | --help) usage; exit 0 ;;
	--traffic) traffic=${2:?}; shift ;;
	--rounds) rounds=${2:?}; shift ;;
	--jobs) jobs=${2:?}; shift ;;
	--seed) seed=${2:?}; shift ;;
	--full) full=1 ;;
	--keep) keep=1 ;;
	--bin) bin=${2:?}; shift ;;
	-*) usage >&2; exit 2 ;;
	*) ns+=("$1") ;;
	esac
	shift
done
[ ${#ns[@]} -gt 0 ] || { usage >&2; exit 2; }
: "${CHARGEONCE_TEST_PG:?CHARGEONCE_TEST_PG: run under tests/harness/with-services}"
[ -x "$bin" ] || { echo "bench/audit.sh: no chargeonce at $bin" >&2; exit 2; }

pg_bin=/usr/lib/postgresql/15/bin
[ -x "$pg_bin/psql" ] || pg_bin=$(dirname "$(command -v psql)")
conn() { echo "$CHARGEONCE_TEST_PG dbname=$1"; }
q() { # q DB SQL...: one value per line
	local db=$1
	shift
	"$pg_bin/psql" -X -q -A -t -F ' ' -v ON_ERROR_STOP=1 "$(conn "$db")" "$@"
}
ms() { date +%s%3N; }
work=$(mktemp -d "${TMPDIR:-/tmp}/chargeonce-audit.XXXXXX")
dbs=()
cleanup() {
	if [ $keep = 0 ]; then
		for d in "${dbs[@]}"; do
			q postgres -c "DROP DATABASE IF EXISTS $d WITH (FORCE)" >/dev/null 2>&1 || true
		done
	fi
	rm -rf "$work"
}
trap cleanup EXIT

# One interval's traffic: what claims and settles leave for `traffic`
# new payments (random payment ids, as chargeonce's derived ones are),
# each result with a payload of the consumer's size (its size decides
# where in the table a new row fits: a payload smaller than the
# history's lands in the gaps the history's pages left).
traffic_sql="
WITH ins AS (
  INSERT INTO payments (payment_id, tenant_id, idem_key, order_id,
         customer_id, amount, currency, status, provider_key,
         provider_charge_id, error_code, error_message, intent_event_id,
         attempts, created_at, updated_at, finished_at, request_hash,
         expires_at, msg_digest)
  SELECT gen_random_uuid(), 'tenant-' || (i % 8),
         'traffic-' || :'run' || '-' || i, 'ord-' || :'run' || '-' || i,
         'cus-' || (i % 997), 1000 + i % 50000, 'VND',
         CASE WHEN i % 100 < 94 THEN 'succeeded' ELSE 'failed' END,
         encode(sha256(convert_to('pk' || :'run' || i, 'UTF8')), 'hex'),
         CASE WHEN i % 100 < 94 THEN 'ch_' || :'run' || '_' || i END,
         CASE WHEN i % 100 >= 94 THEN 'card_declined' END,
         CASE WHEN i % 100 >= 94 THEN 'The card was declined' END,
         gen_random_uuid()::text, 1, now(), now(), now(),
         sha256(convert_to('rh' || :'run' || i, 'UTF8')),
         now() + interval '7 days',
         sha256(convert_to('md' || :'run' || i, 'UTF8'))
    FROM generate_series(1, :n) AS i
  RETURNING payment_id, tenant_id, idem_key, order_id, status,
            intent_event_id, amount, currency, provider_charge_id,
            error_code, error_message),
ob AS (
  INSERT INTO outbox (event_id, message_key, tenant_id, idem_key,
         payment_id, intent_event_id, status, payload, published_at,
         publish_attempts)
  SELECT co_result_event_id(payment_id, status),
         tenant_id || '/' || idem_key, tenant_id, idem_key, payment_id,
         intent_event_id, status,
         json_build_object('schema_version', 1, 'event_id',
           co_result_event_id(payment_id, status), 'intent_event_id',
           intent_event_id, 'tenant_id', tenant_id, 'idempotency_key',
           idem_key, 'order_id', order_id, 'payment_id', payment_id,
           'status', status, 'amount', amount, 'currency', currency,
           'provider_charge_id', provider_charge_id, 'error',
           CASE WHEN error_code IS NOT NULL THEN json_build_object('code',
             error_code, 'message', error_message) END, 'replayed', false,
           'occurred_at', to_char(now() AT TIME ZONE 'UTC',
             'YYYY-MM-DD\"T\"HH24:MI:SS.MS\"Z\"'))::text, now(), 1
    FROM ins
  RETURNING 1),
lp AS (
  INSERT INTO ledger_postings (payment_id, kind, tenant_id, amount,
         currency, debit_account, credit_account)
  SELECT payment_id, 'charge', tenant_id, amount, currency,
         'customer_funds:' || tenant_id, 'merchant_payable:' || tenant_id
    FROM ins WHERE status = 'succeeded'
  RETURNING 1),
ev AS (
  INSERT INTO gateway_evidence (payment_id, kind, actor, outcome)
  SELECT payment_id, 'query', 'bench', status FROM ins
   WHERE abs(hashtext(idem_key)) % 100 = 0
  RETURNING 1)
SELECT (SELECT count(*) FROM ob), (SELECT count(*) FROM lp),
       (SELECT count(*) FROM ev)"

# the audit's statements in db since the last reset: ms executing,
# calls, shared blocks hit and read
pg_time() {
	q "$1" -c "SELECT round(sum(total_exec_time)::numeric, 1), sum(calls),
	                  sum(shared_blks_hit), sum(shared_blks_read)
	             FROM pg_stat_statements
	            WHERE dbid = (SELECT oid FROM pg_database
	                           WHERE datname = current_database())
	              AND query NOT LIKE '%pg_stat_statements%'"
}

median() { sort -n | awk '{ v[NR] = $1 } END { print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }

# the server's memory settings decide the price of a look-up at large N
# (docs/benchmarks.md, "Huge pages")
echo "audit: traffic $traffic payments per interval, $rounds interval(s) per N, history seed $seed; $("$bin" --version); PostgreSQL shared_buffers $(q postgres -c "SHOW shared_buffers"), huge_pages $(q postgres -c "SHOW huge_pages")"
# every history first, then the rounds in turn over the databases (round
# r of every N, then round r + 1): the machine's other load falls on
# every N alike
for n in "${ns[@]}"; do
	db=co_audit_$n
	dbs+=("$db")
	q postgres -c "DROP DATABASE IF EXISTS $db WITH (FORCE)" >/dev/null 2>&1
	q postgres -c "CREATE DATABASE $db" >/dev/null
	"$bin" -X "db.conninfo=$(conn "$db")" migrate >"$work/migrate.log" 2>&1
	ver=$(q "$db" -c "SELECT max(version) FROM schema_migrations")
	# bench/history.sh fills the schema version it has a file for; 0019
	# adds the audit's cursor table and the ledger's BRIN index, which
	# the history does not write: until bench/history/v$ver.sql exists,
	# the fill runs as the version before (its row hidden meanwhile)
	hidden=0
	if [ ! -f "$root/bench/history/v$ver.sql" ]; then
		hidden=$ver
		q "$db" -c "UPDATE schema_migrations SET version = -version WHERE version = $ver" >/dev/null
	fi
	t0=$(ms)
	"$root/bench/history.sh" --jobs "$jobs" --seed "$seed" "$(conn "$db")" "$n" >"$work/history-$n.log" 2>&1 ||
		{ cat "$work/history-$n.log" >&2; exit 1; }
	[ "$hidden" = 0 ] ||
		q "$db" -c "UPDATE schema_migrations SET version = -version WHERE version = -$hidden" >/dev/null
	q "$db" -c "SELECT brin_summarize_new_values('ledger_postings_id_brin')" >/dev/null
	q "$db" -c "CREATE EXTENSION IF NOT EXISTS pg_stat_statements" >/dev/null
	echo "audit N=$n: history filled in $((($(ms) - t0) / 1000)) s ($(grep -o '[0-9]* payments/s with.*' "$work/history-$n.log" | head -1)); $(q "$db" -c "SELECT pg_size_pretty(pg_database_size(current_database()))")"
	# the cursor, under a SHARE lock that an autovacuum of the fill can
	# hold off (a release before 0024 waits 1 s for it): a few tries
	for try in 1 2 3 4 5; do
		"$bin" -X "db.conninfo=$(conn "$db")" audit --incremental >"$work/start.log" 2>&1 && break
		[ $try = 5 ] && { cat "$work/start.log" >&2; exit 1; }
		sleep 2
	done
	if [ $full = 1 ]; then
		t0=$(ms)
		"$bin" -X "db.conninfo=$(conn "$db")" audit --full >/dev/null 2>"$work/full.log" ||
			{ tail -3 "$work/full.log" >&2; }
		echo "audit N=$n: chargeonce audit --full: $(($(ms) - t0)) ms"
	fi
done
declare -A times=()
for r in $(seq 1 "$rounds"); do
	for n in "${ns[@]}"; do
		db=co_audit_$n
		rows=$(q "$db" -v run="$n$r" -v n="$traffic" <<<"$traffic_sql;")
		q "$db" -c "SELECT pg_stat_statements_reset(0, (SELECT oid FROM pg_database WHERE datname = current_database()), 0)" >/dev/null
		t0=$(ms)
		"$bin" -X "db.conninfo=$(conn "$db")" audit --incremental >"$work/audit.log" 2>&1 ||
			{ cat "$work/audit.log" >&2; exit 1; }
		wall=$(($(ms) - t0))
		read -r pgms calls hit read <<<"$(pg_time "$db")"
		read_rows=$(grep -oE '\([0-9]+ row\(s\) read in [0-9]+ step\(s\)(, [0-9]+ payment\(s\) checked from them alone)?\)' "$work/audit.log" | tr -d '()')
		echo "audit N=$n round $r: wrote $(echo "$rows" | awk '{ printf "%d results, %d postings, %d evidence", $1, $2, $3 }'); $read_rows; PostgreSQL $pgms ms in $calls statements (shared blocks: $hit hit, $read read); $wall ms wall"
		times[$n]="${times[$n]:-} $pgms"
	done
done
first=
for n in "${ns[@]}"; do
	med=$(printf '%s\n' ${times[$n]} | median)
	[ -n "$first" ] || first=$med
	echo "audit N=$n: median PostgreSQL time per interval $med ms; $(awk -v a="$med" -v b="$first" 'BEGIN { printf "%.2fx the first N", a / b }') (rounds: ${times[$n]# })"
done
